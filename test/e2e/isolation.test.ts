import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cli, cliAsync, json, tempWorkspace, type CliResult, type RunDoc } from './cliHelpers';
import { startOpenAIStub, type OpenAIStub } from '../fakes/openaiStub';

/*
 * A user's code cannot take the lab down: the CLI as a user runs it, with a
 * graph module and a reward module that misbehave (a busy loop, process.exit),
 * against an OpenAI-compatible stub.
 */

const GRAPH = `import { StateGraph, MessagesAnnotation, START, END } from '@langchain/langgraph';
let calls = 0;
export default function build(ctx) {
  const model = ctx.model('Answerer');
  return new StateGraph(MessagesAnnotation)
    .addNode('Answerer', async (state) => {
      calls++;
      if (process.env.EXIT_ON_CALL && calls === Number(process.env.EXIT_ON_CALL)) process.exit(0);
      if (process.env.LOOP_ON_TASK && state.messages[0].content.includes(process.env.LOOP_ON_TASK)) for (;;) {}
      return { messages: [await model.invoke(state.messages)] };
    })
    .addEdge(START, 'Answerer')
    .addEdge('Answerer', END)
    .compile();
}
export const prompts = { Answerer: 'Answer the question in one word.' };
`;

function dataset(n: number): string {
  return Array.from({ length: n }, (_, i) => JSON.stringify({ id: `t${i + 1}`, goal: `question ${i + 1}?`, context: `context ${i + 1}` })).join('\n') + '\n';
}

async function withLab(tasks: number, reward: string | null, work: (ws: string, stub: OpenAIStub) => Promise<void>): Promise<void> {
  const ws = tempWorkspace();
  const stub = await startOpenAIStub({ replies: () => ({ content: 'yes' }) });
  try {
    writeFileSync(join(ws, 'graph.mjs'), GRAPH);
    writeFileSync(join(ws, 'tasks.jsonl'), dataset(tasks));
    const init = cli(['init', '--workspace', ws, '--graph', 'graph.mjs', '--dataset', 'tasks.jsonl']);
    assert.equal(init.code, 0, init.stderr);
    const cfgFile = join(ws, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    for (const m of Object.values(cfg.models) as Array<Record<string, unknown>>) m.baseUrl = stub.url;
    if (reward) {
      mkdirSync(join(ws, 'rewards'), { recursive: true });
      writeFileSync(join(ws, 'rewards', 'slow.mjs'), reward);
      cfg.reward = { ...(cfg.reward ?? {}), module: 'rewards/slow.mjs', customTimeoutMs: 1500 };
    }
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    await work(ws, stub);
  } finally {
    await stub.close();
    rmSync(ws, { recursive: true, force: true });
  }
}

/** The CLI in a process of its own while this one keeps answering as the model server (spawnSync would block the stub). */
async function runAsync(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const { child, done } = cliAsync(args, env);
  const guard = setTimeout(() => child.kill('SIGKILL'), 240_000);
  try {
    return await done;
  } finally {
    clearTimeout(guard);
  }
}

function rolloutsOf(ws: string, runId: string): Array<{ taskId: string; status: string; failure: string | null; error: string | null }> {
  const r = cli(['traces', '--workspace', ws, '--run', runId, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return json<{ rollouts: Array<{ taskId: string; status: string; failure: string | null; error: string | null }> }>(r).rollouts;
}

test('a reward module that busy-loops on one task: that rollout fails as a timeout naming the module and the setting, the batch finishes', async () => {
  const reward = `export default function reward(input) {\n  if (input.task.id === 't2') for (;;) {}\n  return 0.5;\n}\n`;
  await withLab(4, reward, async (ws) => {
    const r = await runAsync(['run', '--workspace', ws, '--split', 'all', '--concurrency', '2', '--json']);
    // Some failed rollouts are data: the batch succeeds.
    assert.equal(r.code, 0, r.stderr);
    const doc = json<RunDoc>(r);
    assert.equal(doc.rollouts, 4);
    assert.equal(doc.succeeded, 3);
    assert.equal(doc.failed, 1);
    const slow = rolloutsOf(ws, doc.runId).find((x) => x.taskId === 't2')!;
    assert.equal(slow.status, 'failed');
    assert.equal(slow.failure, 'timeout');
    assert.match(slow.error ?? '', /reward module rewards\/slow\.mjs did not answer within reward\.customTimeoutMs = 1500 ms/);
  });
});

test('a graph module that calls process.exit(0) on its third model call fails only that rollout; --json stdout is complete', async () => {
  await withLab(5, null, async (ws) => {
    // One rollout at a time: the worker's third call is the third rollout's; the fourth gets a fresh worker.
    const r: CliResult = await runAsync(['run', '--workspace', ws, '--split', 'all', '--concurrency', '1', '--json'], { EXIT_ON_CALL: '3' });
    assert.equal(r.code, 0, r.stderr);
    const doc = json<RunDoc>(r);
    assert.equal(doc.rollouts, 5);
    assert.equal(doc.succeeded, 4);
    assert.equal(doc.failed, 1);
    const rollouts = rolloutsOf(ws, doc.runId);
    const failed = rollouts.filter((x) => x.status !== 'succeeded');
    assert.deepEqual(
      failed.map((x) => x.taskId),
      ['t3'],
    );
    assert.match(failed[0]!.error ?? '', /graph module graph\.mjs stopped before it answered: .*process\.exit\(\)/);
    assert.equal(rollouts.filter((x) => x.status === 'interrupted' || x.status === 'running').length, 0);
  });
});

test('a graph module that busy-loops on one task: that rollout fails as a timeout naming graph.timeoutMs, the others succeed', async () => {
  await withLab(4, null, async (ws) => {
    const cfgFile = join(ws, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.graph.timeoutMs = 1500;
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    const r = await runAsync(['run', '--workspace', ws, '--split', 'all', '--concurrency', '1', '--json'], { LOOP_ON_TASK: 'question 2?' });
    assert.equal(r.code, 0, r.stderr);
    const doc = json<RunDoc>(r);
    assert.equal(doc.succeeded, 3, r.stderr);
    const slow = rolloutsOf(ws, doc.runId).find((x) => x.taskId === 't2')!;
    assert.equal(slow.failure, 'timeout');
    assert.match(slow.error ?? '', /^graph module graph\.mjs did not finish the rollout within graph\.timeoutMs = 1500 ms/);
  });
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  test(`${signal} while a reward module busy-loops stops the CLI, the run is stored cancelled, and run --resume finishes it`, async () => {
    const reward = `import { writeFileSync } from 'node:fs';\nexport default function reward() {\n  writeFileSync(process.env.LOOP_MARK, 'looping');\n  for (;;) {}\n}\n`;
    await withLab(3, reward, async (ws) => {
      const mark = join(ws, 'looping');
      const cfgFile = join(ws, '.rollout-lab', 'lab.json');
      const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
      cfg.reward.customTimeoutMs = 600_000;
      writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
      const { child, done } = cliAsync(['run', '--workspace', ws, '--split', 'all', '--concurrency', '1', '--json'], { LOOP_MARK: mark });
      // Hang guards, not timings: the reward is looping before the signal is sent, and the CLI must exit after it.
      for (let i = 0; i < 600 && !existsSync(mark); i++) await new Promise((res) => setTimeout(res, 100));
      assert.ok(existsSync(mark), 'the reward module started its loop');
      child.kill(signal);
      const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const r = await done;
      clearTimeout(guard);
      assert.notEqual(r.code, 128, `the CLI did not stop after ${signal}; it was killed:\n${r.stderr}`);
      assert.equal(r.code, 1, r.stderr);
      const runId = /resume with: rollout-lab run --resume (\S+)/.exec(r.stderr)?.[1];
      assert.ok(runId, r.stderr);
      assert.equal(json<RunDoc & { cancelled: boolean }>(r).cancelled, true);
      const stored = rolloutsOf(ws, runId);
      assert.ok(stored.every((x) => x.status !== 'running'), JSON.stringify(stored));

      writeFileSync(join(ws, 'rewards', 'slow.mjs'), 'export default function reward() { return 0.5; }\n');
      const resumed = await runAsync(['run', '--workspace', ws, '--resume', runId, '--json']);
      assert.equal(resumed.code, 0, resumed.stderr);
      const doc = json<RunDoc>(resumed);
      assert.equal(doc.succeeded, 3, resumed.stderr);
    });
  });
}
