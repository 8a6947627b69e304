import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { envLines, jobArgv, LineSplitter, pipe, remoteCommandLine, run, shellQuote, stream } from '../../../../src/core/train/jobs/launchers/exec';
import { tempDir } from './helpers';

const TRICKY = ['plain', '', 'two words', "it's", '$HOME', '`id`', '$(id)', 'a\\b', '"quoted"', 'new\nline', '*', '-n', "''", 'semi;colon && x | y > z'];

test('shellQuote: every argument single-quoted, quotes inside written as \'\\\'\'', () => {
  assert.equal(shellQuote('plain'), "'plain'");
  assert.equal(shellQuote(''), "''");
  assert.equal(shellQuote("it's"), "'it'\\''s'");
  assert.equal(shellQuote('$HOME'), "'$HOME'");
  assert.equal(remoteCommandLine(['echo', 'a b']), "'echo' 'a b'");
});

test('shellQuote: a POSIX shell reads the quoted line back as the same arguments, nothing expanded', () => {
  const line = remoteCommandLine(['printf', '%s\\0', ...TRICKY]);
  const r = spawnSync('/bin/sh', ['-c', line], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(r.stdout.split('\0').slice(0, -1), TRICKY);
});

test('LineSplitter: \\n, \\r\\n and a lone \\r end lines, also across chunks; a last line without a newline counts', () => {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l));
  for (const chunk of ['a\nb', '\r', '\nc\rd', '\r\n', 'e\r', 'f', '\n\nlast']) s.push(chunk);
  s.end();
  assert.deepEqual(lines, ['a', 'b', 'c', 'd', 'e', 'f', '', 'last']);
  const utf: string[] = [];
  const u = new LineSplitter((l) => utf.push(l));
  const bytes = Buffer.from('héllo\n');
  u.push(bytes.subarray(0, 2));
  u.push(bytes.subarray(2));
  u.end();
  assert.deepEqual(utf, ['héllo'], 'a character split across chunks is decoded whole');
});

test('run: output, stdin, and a clear error for a missing tool and for a failing one', async () => {
  const r = await run(['sh', '-c', 'cat; echo out; echo err >&2'], { stdin: 'in\n' });
  assert.deepEqual(r, { code: 0, stdout: 'in\nout\n', stderr: 'err\n' });
  const empty = tempDir('empty-path');
  try {
    await assert.rejects(run(['ssh', '-V'], { env: { PATH: empty } }), { message: 'ssh is not installed or not on PATH — install openssh-client' });
    await assert.rejects(run(['sky', 'status'], { env: { PATH: empty } }), { message: 'sky is not installed or not on PATH — pip install skypilot' });
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
  await assert.rejects(run(['sh', '-c', 'echo one >&2; echo two >&2; echo three >&2; echo four >&2; exit 3']), {
    message: 'sh exited with status 3: two | three | four',
  });
  await assert.rejects(run(['ls', '/nonexistent-rollout-lab']), /: ls exited with status \d+: .*nonexistent-rollout-lab/);
  const soft = await run(['sh', '-c', 'exit 4'], { allowFail: true });
  assert.equal(soft.code, 4);
  await assert.rejects(run(['true'], { cwd: '/nonexistent-rollout-lab' }), /the folder \/nonexistent-rollout-lab does not exist/);
  // A command that exits without reading its stdin is no EPIPE crash.
  assert.equal((await run(['true'], { stdin: 'x'.repeat(1 << 20) })).code, 0);
});

test('run: the signal kills the command', async () => {
  const ac = new AbortController();
  const p = run(['sleep', '30'], { signal: ac.signal, allowFail: true });
  ac.abort();
  assert.equal((await p).code, 128 + 15);
});

test('stream: stdout and stderr lines as they come (partial lines, \\r), or stderr kept apart', async () => {
  const lines: string[] = [];
  const r = await stream(['sh', '-c', "printf 'a\\nb'; sleep 0.1; printf 'c\\rd\\r\\n'; echo e >&2; printf 'tail'"], (l) => lines.push(l));
  assert.equal(r.code, 0);
  assert.deepEqual(lines.filter((l) => l !== 'e'), ['a', 'bc', 'd', 'tail']);
  assert.ok(lines.includes('e'));
  const only: string[] = [];
  const c = await stream(['sh', '-c', 'echo out; echo complaint >&2; exit 5'], (l) => only.push(l), { stderr: 'capture' });
  assert.deepEqual(only, ['out']);
  assert.deepEqual(c, { code: 5, stdout: '', stderr: 'complaint\n' });
});

test('pipe: one command feeds the next; the failing side is named', async () => {
  const dir = tempDir('pipe');
  try {
    await pipe(['sh', '-c', 'printf hello'], ['sh', '-c', `tr a-z A-Z > '${dir}/out'`]);
    assert.equal((await run(['cat', `${dir}/out`])).stdout, 'HELLO');
    await assert.rejects(pipe(['sh', '-c', 'echo x'], ['sh', '-c', 'cat >/dev/null; echo "cannot unpack" >&2; exit 2']), { message: 'sh exited with status 2: cannot unpack' });
    await assert.rejects(pipe(['sh', '-c', 'echo broken >&2; exit 1'], ['cat']), { message: 'sh exited with status 1: broken' });
    await assert.rejects(pipe(['no-such-tool-rollout-lab'], ['cat']), /no-such-tool-rollout-lab is not installed or not on PATH/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('envLines: NAME=VALUE lines, sorted, masked for a plan; a bad name or a line break is refused', () => {
  assert.equal(envLines({ B: 'two words', A: "x'y=z" }), "A=x'y=z\nB=two words\n");
  assert.equal(envLines({ B: 'v', A: 'w' }, true), 'A=***\nB=***\n');
  assert.equal(envLines({}), '');
  assert.throws(() => envLines({ 'BAD-NAME': 'v' }), /not an environment variable name/);
  assert.throws(() => envLines({ A: 'one\ntwo' }), /line break/);
});

test('jobArgv: the target\'s Python replaces a leading python3 only', () => {
  assert.deepEqual(jobArgv(['python3', '-m', 'rollout_trainer'], '/opt/py/bin/python'), ['/opt/py/bin/python', '-m', 'rollout_trainer']);
  assert.deepEqual(jobArgv(['node', 'python3'], '/x'), ['node', 'python3']);
});
