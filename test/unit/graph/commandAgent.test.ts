import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandAgentError, parseCommandOutput, runCommandAgent, type CommandAgentRun } from '../../../src/core/graph/commandAgent';
import { classifyThrown } from '../../../src/core/reward/failureClassification';

/*
 * The command agent's contract, with real programs (node scripts): the task
 * on standard input, the final JSON object on standard output, and every way
 * a program can fail turned into an error that quotes its standard error.
 */

const dir = mkdtempSync(join(tmpdir(), 'rl-command-'));
function program(name: string, source: string): string {
  const file = join(dir, name);
  writeFileSync(file, source);
  return file;
}
function run(file: string, over: Partial<CommandAgentRun> = {}): ReturnType<typeof runCommandAgent> {
  return runCommandAgent({ argv: [process.execPath, file], cwd: dir, env: { ...process.env, EXTRA: 'from-env' }, input: JSON.stringify({ id: 't1', goal: 'Ticket 7: refund' }), timeoutMs: 20_000, ...over });
}
async function failure(p: Promise<unknown>): Promise<CommandAgentError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof CommandAgentError, `expected a CommandAgentError, got ${String(err)}`);
    return err;
  }
  assert.fail('the run should have failed');
}

test('reads the task from stdin, gets its environment, and its last JSON line is the outcome', async () => {
  const file = program(
    'echo.js',
    `let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const t=JSON.parse(s);console.log('thinking...');console.log(JSON.stringify({final_output:t.goal+' '+process.env.EXTRA,decision:'bill',turns:3,failures:[{agent:'Router',error:'x'}]}));});`,
  );
  const out = await run(file);
  assert.deepEqual(out, { finalOutput: 'Ticket 7: refund from-env', decision: 'bill', turns: 3, failures: [{ agent: 'Router', error: 'x' }] });
});

test('an object without final_output is the final output; turns unknown when not given', () => {
  const out = parseCommandOutput('log line\n{"queue": "ship", "reply": "ok"}\n');
  assert.equal(out.finalOutput, JSON.stringify({ queue: 'ship', reply: 'ok' }, null, 2));
  assert.equal(out.turns, null);
  assert.equal(out.decision, null);
  assert.equal(parseCommandOutput('{"final_output": null}').finalOutput, null);
});

test('output that is no JSON object is invalid_output, quoting what it printed and its stderr', async () => {
  const file = program('prose.js', `console.error('model said prose');console.log('the queue is bill');`);
  const err = await failure(run(file));
  assert.equal(err.kind, 'invalid_output');
  assert.match(err.message, /no JSON object \(it printed: "the queue is bill"\)/);
  assert.match(err.message, /stderr[^]*model said prose/);
  assert.equal(classifyThrown(err, err.message), 'invalid_output');
});

test('a crash is a failure with the exit code and the stderr tail', async () => {
  const file = program('crash.js', `console.error('Traceback: KeyError goal');process.exit(3);`);
  const err = await failure(run(file));
  assert.equal(err.kind, 'crashed');
  assert.equal(err.exitCode, 3);
  assert.match(err.message, /exited with code 3[^]*KeyError goal/);
});

test('past its time limit the program is stopped and the rollout times out', async () => {
  const file = program('hang.js', `console.error('waiting for the model');setInterval(()=>{},1000);`);
  const err = await failure(run(file, { timeoutMs: 300 }));
  assert.equal(err.kind, 'timeout');
  assert.match(err.message, /timed out after 300 ms — raise graph.timeoutMs[^]*waiting for the model/);
  assert.equal(classifyThrown(err, err.message), 'timeout');
});

test('cancelling stops the program and the error reads as cancelled', async () => {
  const file = program('slow.js', `setInterval(()=>{},1000);`);
  const ac = new AbortController();
  const p = run(file, { signal: ac.signal });
  setTimeout(() => ac.abort(), 100);
  const err = await failure(p);
  assert.equal(err.kind, 'cancelled');
  assert.equal(classifyThrown(err, err.message), 'cancelled');
});

test('a program that does not exist names the setting to fix', async () => {
  const err = await failure(runCommandAgent({ argv: ['no-such-agent-binary'], cwd: dir, env: process.env, input: '{}', timeoutMs: 5_000 }));
  assert.equal(err.kind, 'not_started');
  assert.match(err.message, /check graph.command in .rollout-lab\/lab.json: "no-such-agent-binary"/);
});

test('a program that never reads its input still runs', async () => {
  const file = program('noinput.js', `console.log(JSON.stringify({final_output:'ok'}));`);
  const out = await run(file, { input: 'x'.repeat(1 << 20) });
  assert.equal(out.finalOutput, 'ok');
});

test("a program's failure given as an object or with newlines is kept as its text (JSON for an object), never \"[object Object]\"", () => {
  const out = parseCommandOutput(JSON.stringify({ final_output: null, failures: [{ agent: 'Drafter', error: { code: 'parse', detail: 'Unterminated string' } }, { agent: 'Critic', error: 'line one\nline two' }] }));
  assert.deepEqual(out.failures, [
    { agent: 'Drafter', error: '{"code":"parse","detail":"Unterminated string"}' },
    { agent: 'Critic', error: 'line one\nline two' },
  ]);
});
