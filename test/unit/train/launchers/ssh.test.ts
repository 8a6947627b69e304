import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';
import type { JobExit, JobHandle, PreparedJob } from '../../../../src/core/train/jobs/launcher';
import { launcherFor } from '../../../../src/core/train/jobs/launchers';
import { accepts, freePort } from '../../../../src/core/train/jobs/launchers/net';
import { parseTrainerEvent } from '../../../../src/core/train/jobs/trainerEvents';
import { readRecord, recordingShim } from '../../../fakes/commandLineTools';
import { allCommandLines, assertNotInFiles, Lines, makeJob, QWEN2_HYPERPARAMETERS, QWEN2_MODEL, SECRET, SECRET_NAME, SECRET_SHA256, tempDir, TRAINER_IMPORTS, which } from './helpers';
import { SSHD, startSshd } from './sshd';

/**
 * End to end against a real sshd on 127.0.0.1 (its own host key, config and
 * authorized key, in a temporary folder): the launcher runs the system's ssh
 * and tar, through recording shims so the commands can be compared with the plan.
 */

const REAL_SSH = which('ssh');
const REAL_TAR = which('tar');
const missing = !existsSync(SSHD) ? `${SSHD} is missing (apt-get install openssh-server)` : !REAL_SSH ? 'ssh is not on PATH (apt-get install openssh-client)' : !REAL_TAR ? 'tar is not on PATH' : null;
if (missing && process.env.CI) throw new Error(`the ssh launcher test needs a real sshd: ${missing}`);
if (missing) console.log(`# skipping the ssh launcher tests: ${missing}`);
const skip = missing ?? false;

const TRAINER_MAIN = path.resolve(__dirname, '../../../../python-trainer/rollout_trainer/__main__.py');
const GOLDEN_SFT = path.resolve(__dirname, '../../../fixtures/train/golden/sft.jsonl');
// The trainer's venv (scripts/setupTrainerVenv.sh; .ci/run makes it): the remote python, for the job scripts and the real trainer alike.
const SYSTEM_PYTHON = path.resolve(__dirname, '../../../../.venv-trainer/bin/python');

const launcher = launcherFor('ssh');
let root = '';
let remoteBase = '';
let sshd: ChildProcess | null = null;
let target: Record<string, unknown> = {};

before(async () => {
  if (skip) return;
  root = tempDir('ssh-launcher');
  const started = await startSshd(path.join(root, 'keys'));
  sshd = started.child;
  const port = started.port;
  remoteBase = path.join(root, 'remote');
  target = {
    kind: 'ssh',
    host: `${userInfo().username}@127.0.0.1`,
    port,
    identityFile: started.key,
    options: ['StrictHostKeyChecking=no', `UserKnownHostsFile=${path.join(root, 'known_hosts')}`, 'LogLevel=ERROR'],
    remoteDir: remoteBase,
    python: SYSTEM_PYTHON,
    gpus: 0,
  };
  const bin = path.join(root, 'bin');
  recordingShim(bin, 'ssh', REAL_SSH!);
  recordingShim(bin, 'tar', REAL_TAR!);
  process.env.PATH = `${bin}${path.delimiter}${process.env.PATH}`;
});

after(() => {
  sshd?.kill('SIGTERM');
  if (root) rmSync(root, { recursive: true, force: true });
});

function useRecord(name: string): string {
  const file = path.join(root, `${name}.jsonl`);
  process.env.FAKE_RECORD = file;
  return file;
}

function remoteDirOf(job: PreparedJob): string {
  return path.join(remoteBase, job.spec.id);
}

function expectedLines(args: string[], extra: string[] = []): string[] {
  return [
    'job: start',
    `job: argv ${JSON.stringify([SYSTEM_PYTHON, 'job.py', ...args])}`,
    `job: secret sha256 ${SECRET_SHA256}`,
    'job: trainer on PYTHONPATH True',
    'job: to stderr',
    'job: progress 50%',
    'job: progress 100%',
    ...extra,
    `@rollout-trainer {"event":"done","result":{"code":${args[0]}}}`,
    'job: end',
  ];
}

test('ssh: the bundle goes over, the job runs detached with the secret in its env only (no argv, no file), every line comes back, out/ is fetched; the plan is the exact argv', { skip }, async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '0', '--wait'], secrets: { [SECRET_NAME]: SECRET } });
  const record = useRecord('launch');
  const plan = launcher.plan(job);
  assert.equal(plan.steps.find((s) => s.title.startsWith('start'))?.stdin, `${SECRET_NAME}=***\n`, 'the plan shows the secret on stdin, masked');
  assert.ok(!JSON.stringify(plan).includes(SECRET));

  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'ssh' }>;
  assert.equal(handle.remoteDir, remoteDirOf(job));
  assert.ok(handle.pid > 0);
  const recorded = readRecord(record);
  for (const tool of ['ssh', 'tar']) {
    assert.deepEqual(
      recorded.filter((r) => r.tool === tool).map((r) => r.argv),
      plan.steps.filter((s) => s.argv[0] === tool).map((s) => s.argv),
      `the ${tool} commands that ran are the plan's`,
    );
  }
  assert.ok(recorded.every((r) => !r.argv.join(' ').includes(SECRET)), 'the secret is in no argv');

  const lines = new Lines();
  const following = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l === 'job: progress 100%');
  assert.ok(lines.all.includes(`job: secret sha256 ${SECRET_SHA256}`), 'the remote job has the secret in its environment');
  assert.ok(allCommandLines().every((c) => !c.includes(SECRET)), 'the secret is in no process\'s command line');
  assertNotInFiles(SECRET, remoteDirOf(job), job.jobDir, job.bundleDir);
  writeFileSync(path.join(remoteDirOf(job), 'go'), '');
  assert.deepEqual(await following, { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(lines.all, expectedLines(['0', '--wait'], ['job: go']));
  assert.equal(readFileSync(path.join(remoteDirOf(job), 'exit-code'), 'utf8').trim(), '0');

  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')), { status: 'succeeded', code: 0 });
  assertNotInFiles(SECRET, remoteDirOf(job), job.jobDir);
});

test('ssh: a failing job is failed with its status; a reattach from the handle alone replays the log; cancelling a finished job is harmless', { skip }, async () => {
  const job = makeJob(root, { target, command: ['python3', 'job.py', '3'], secrets: { [SECRET_NAME]: SECRET } });
  useRecord('failing');
  const handle = await launcher.launch(job);
  const first = new Lines();
  assert.deepEqual(await launcher.follow(handle, { onLine: first.push }, job), { state: 'failed', exitCode: 3 });
  assert.deepEqual(first.all, expectedLines(['3']));
  const again = new Lines();
  assert.deepEqual(await launcherFor('ssh').follow(JSON.parse(JSON.stringify(handle)) as JobHandle, { onLine: again.push }, job), { state: 'failed', exitCode: 3 });
  assert.deepEqual(again.all, first.all);
  await launcher.cancel(handle, job);
  // A relaunch of the same id replaces the remote folder instead of nesting the bundle in it.
  const rerun = await launcher.launch(job);
  assert.deepEqual(await launcher.follow(rerun, { onLine: () => undefined }, job), { state: 'failed', exitCode: 3 });
  assert.ok(!existsSync(path.join(remoteDirOf(job), 'bundle')));
});

test('ssh: forwardPort reaches a server the job started on the host\'s 127.0.0.1; cancel stops the remote process group', { skip }, async () => {
  const port = await freePort();
  const job = makeJob(root, { target, command: ['python3', '-m', 'http.server', String(port), '--bind', '127.0.0.1'] });
  const record = useRecord('forward');
  const handle = (await launcher.launch(job)) as Extract<JobHandle, { target: 'ssh' }>;
  const lines = new Lines();
  const following: Promise<JobExit> = launcher.follow(handle, { onLine: lines.push }, job);
  await lines.waitFor((l) => l.startsWith('Serving HTTP on'));

  const fwd = await launcher.forwardPort(handle, job, port);
  const local = Number(new URL(fwd.url).port);
  assert.notEqual(local, port, 'a free local port of its own');
  assert.equal(fwd.url, `http://127.0.0.1:${local}/v1`);
  const res = await fetch(`http://127.0.0.1:${local}/`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /job\.yaml/, 'the directory listing of the bundle, served on the host');
  const forwardArgv = readRecord(record).find((r) => r.argv.includes('-N'))!.argv;
  assert.deepEqual(forwardArgv.slice(-4), ['-N', '-L', `127.0.0.1:${local}:127.0.0.1:${port}`, target.host as string]);
  fwd.close();
  for (let i = 0; i < 100 && (await accepts(local)); i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(await accepts(local), false, 'close() ends the forward');

  await launcher.cancel(handle, job);
  assert.deepEqual(await following, { state: 'failed', exitCode: 128 + 15 });
  assert.throws(() => process.kill(-handle.pid, 0), 'the remote process group is gone');
  assert.ok(readRecord(record).at(-1)!.argv.at(-1)!.endsWith(`'rollout-lab-cancel' '${handle.pid}'`), 'cancel names the process group');
});

// The real trainer's CPU path over ssh: needs python-trainer and the trainer's venv.
const trainerMissing = !existsSync(TRAINER_MAIN)
  ? 'python-trainer/rollout_trainer/__main__.py is not there yet'
  : spawnSync(SYSTEM_PYTHON, ['-c', TRAINER_IMPORTS], { encoding: 'utf8' }).status !== 0
    ? `${SYSTEM_PYTHON} cannot ${TRAINER_IMPORTS} (bash scripts/setupTrainerVenv.sh)`
    : null;
if (!skip && trainerMissing) console.log(`# skipping the real trainer over ssh: ${trainerMissing}`);

test('ssh: the real trainer (a one-layer Qwen2 built from a config, CPU) runs over ssh: its events stream back and out/result.json is fetched', { skip: skip || (trainerMissing ?? false) }, async () => {
  const job = makeJob(root, {
    target,
    command: ['python3', '-m', 'rollout_trainer', 'sft', '--spec', 'job.yaml'],
    files: { 'data/sft.jsonl': GOLDEN_SFT },
    spec: {
      model: QWEN2_MODEL,
      hyperparameters: QWEN2_HYPERPARAMETERS,
      data: { train: 'data/sft.jsonl' },
    },
  });
  assert.ok(!existsSync(path.join(job.bundleDir, 'python-trainer', 'tests')), 'the bundle\'s trainer has no tests');
  useRecord('trainer');
  const handle = await launcher.launch(job);
  const lines = new Lines();
  const exit = await launcher.follow(handle, { onLine: lines.push }, job);
  const events = lines.all.map(parseTrainerEvent).filter((e) => e !== null);
  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  const resultFile = path.join(dest, 'result.json');
  const result = existsSync(resultFile) ? (JSON.parse(readFileSync(resultFile, 'utf8')) as { status: string; error?: string | null }) : null;
  assert.ok(exit.state === 'succeeded' && result?.status === 'succeeded', `python-trainer did not succeed over ssh (exit ${exit.exitCode}): ${result?.error ?? lines.all.slice(-5).join(' | ')}`);
  assert.ok(lines.all.some((l) => l.startsWith('@rollout-trainer ')), 'trainer events stream back');
  assert.ok(events.some((e) => e.event === 'metrics'), 'metrics events');
  assert.ok(events.some((e) => e.event === 'done'), 'a done event');
  assert.ok(existsSync(path.join(dest, 'events.jsonl')));
});

test('ssh: the plan without a host to talk to — remote folder, options, a host that would be an option is refused', () => {
  const dir = tempDir('ssh-plan');
  try {
    const base = { kind: 'ssh', host: 'me@gpu-box', port: 2222, identityFile: '~/.ssh/id_ed25519', options: ['ConnectTimeout=5'], remoteDir: '~/jobs/' };
    const job = makeJob(dir, { id: 'sft-p-1', target: base, secrets: { B_TOKEN: 'b', A_TOKEN: 'a' } });
    const plan = launcher.plan(job);
    const [pack, unpack, start] = plan.steps;
    assert.deepEqual(pack!.argv, ['tar', '-C', job.bundleDir, '-czf', '-', '.']);
    const opts = ['-o', 'BatchMode=yes', '-o', 'ServerAliveInterval=15', '-o', 'ServerAliveCountMax=4', '-p', '2222', '-i', '~/.ssh/id_ed25519', '-o', 'ConnectTimeout=5', 'me@gpu-box', '--'];
    assert.deepEqual(unpack!.argv.slice(0, -1), ['ssh', ...opts]);
    assert.ok(unpack!.argv.at(-1)!.endsWith(`'rollout-lab-unpack' 'jobs/sft-p-1'`), 'a leading ~/ is the login folder, where ssh starts');
    assert.ok(start!.argv.at(-1)!.endsWith(`'rollout-lab-start' 'jobs/sft-p-1' 'python3' 'job.py' '0'`));
    assert.equal(start!.stdin, 'A_TOKEN=***\nB_TOKEN=***\n');
    assert.throws(() => launcher.plan(makeJob(dir, { target: { ...base, host: '-oProxyCommand=touch /tmp/x' } })), /may not start with "-"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
