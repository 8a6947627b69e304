import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/core/errors';
import { IsolateExitedError, IsolatePool, IsolateTimeoutError } from '../../../src/core/graph/moduleIsolate';
import { isolatedCannedAnswers, isolatedCustomReward, isolatedSearchProvider, type Closeable } from '../../../src/core/lab/isolatedModules';
import type { SimChatRequest } from '../../../src/core/sim/simRequest';

function scratch(): { dir: string; write(name: string, text: string): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'rl-isolation-'));
  return {
    dir,
    write: (name, text) => {
      writeFileSync(join(dir, name), text);
      return join(dir, name);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const ANSWERS = `export default function answer({ agent }) {
  if (agent === 'Slow') for (;;) {}
  if (agent === 'Quit') process.exit(0);
  if (agent === 'Crash') {
    setTimeout(() => { throw new Error('boom from a timer'); });
    return new Promise(() => undefined);
  }
  return 'hi from ' + agent;
}
`;

const request = (text: string): SimChatRequest => ({ model: 'm', messages: [{ role: 'user', content: text }] }) as SimChatRequest;

test('simulator answers module: a busy loop times out naming the setting, process.exit() and a crash end only their call, and the next call gets a fresh worker', async () => {
  const s = scratch();
  const pools: Closeable[] = [];
  try {
    const answers = await isolatedCannedAnswers(s.write('sim.mjs', ANSWERS), s.dir, 300, pools);
    assert.equal((await answers.answer('Fast', request('q')))?.content, 'hi from Fast');
    await assert.rejects(answers.answer('Slow', request('q')), (e: Error) => {
      assert.ok(e instanceof IsolateTimeoutError);
      assert.equal(e.message, 'simulator answers module sim.mjs did not answer within simulator.moduleTimeoutMs = 300 ms; make it answer sooner, or raise "simulator.moduleTimeoutMs" in .rollout-lab/lab.json');
      return true;
    });
    assert.equal((await answers.answer('Fast', request('q')))?.content, 'hi from Fast', 'answers again after the loop was stopped');
    await assert.rejects(answers.answer('Quit', request('q')), (e: Error) => e instanceof IsolateExitedError && /sim\.mjs stopped before it answered: it ended its thread \(exit code 0, process\.exit\(\)\)/.test(e.message));
    assert.equal((await answers.answer('Again', request('q')))?.content, 'hi from Again');
    await assert.rejects(answers.answer('Crash', request('q')), (e: Error) => e instanceof IsolateExitedError && /it crashed: boom from a timer/.test(e.message));
    assert.equal((await answers.answer('Last', request('q')))?.content, 'hi from Last');
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    s.cleanup();
  }
});

test('search provider module: its name comes across, a busy loop times out naming tools.searchProviderTimeoutMs, the provider answers again after', async () => {
  const s = scratch();
  const file = s.write(
    'search.mjs',
    `export default { name: 'my-index', async search(query, { topK }) {\n  if (query === 'loop') for (;;) {}\n  return [{ id: 1, title: query, snippet: 's', score: topK }];\n} };\n`,
  );
  const provider = await isolatedSearchProvider(file, s.dir, 250);
  try {
    assert.equal(provider.name, 'my-index');
    assert.deepEqual(await provider.search('tau', { topK: 3, kind: 'pubmed' }), [{ id: '1', title: 'tau', snippet: 's', score: 3, source: 'my-index' }]);
    await assert.rejects(provider.search('loop', { topK: 3, kind: 'pubmed' }), /search provider module search\.mjs did not answer within tools\.searchProviderTimeoutMs = 250 ms/);
    assert.equal((await provider.search('again', { topK: 1, kind: 'pubmed' }))[0]?.title, 'again');
  } finally {
    await provider.close();
    s.cleanup();
  }
});

test('reward module: a load error is a ConfigError naming the file; aborting a call stops a busy loop at once; the judge is asked across threads', async () => {
  const s = scratch();
  try {
    await assert.rejects(isolatedCustomReward(s.write('none.mjs', 'export const x = 1;\n'), s.dir, 1000), (e: Error) => e instanceof ConfigError && e.message.includes('none.mjs') && /must export a function/.test(e.message));
    const reward = await isolatedCustomReward(
      s.write('r.mjs', `export default async function reward(input) {\n  if (input.task.id === 'loop') for (;;) {}\n  const j = await input.judge();\n  return j.reward / 2;\n}\n`),
      s.dir,
      600_000,
    );
    try {
      const input = (id: string) => ({
        task: { id, goal: 'g', context: 'c', expected: null, expectedDecision: null, meta: {} },
        outcome: { finalOutput: 'x', decision: null, turns: 1, failures: [] },
        spans: [],
        judge: async () => ({ scores: { quality: 0.8 }, failed: false, reward: 0.8 }),
      });
      assert.deepEqual(await reward.evaluate(input('t1')), { ok: true, reward: 0.4, breakdown: {} });
      const controller = new AbortController();
      const looping = reward.evaluate(input('loop'), { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('cancelled by the user')), 200);
      await assert.rejects(looping, /cancelled by the user/);
      assert.deepEqual(await reward.evaluate(input('t2')), { ok: true, reward: 0.4, breakdown: {} });
    } finally {
      await reward.close();
    }
  } finally {
    s.cleanup();
  }
});

test('shared workers: calls that wait share one worker; a second starts only once the workers are busy running code, not warming up', async () => {
  const s = scratch();
  const file = s.write(
    'answers.mjs',
    `import { threadId } from 'node:worker_threads';
let cold = true;
export default async function answer({ agent }) {
  // A worker's first call that compiles what it runs, as a graph's first rollout does.
  if (agent === 'warm' && cold) { cold = false; const t = Date.now(); while (Date.now() - t < 400) {} }
  if (agent === 'cpu') { const t = Date.now(); while (Date.now() - t < 40) {} }
  else await new Promise((ok) => setTimeout(ok, 40));
  return { content: String(threadId) };
}
`,
  );
  const threads = async (agent: string): Promise<{ threads: number; size: number }> => {
    const pool = new IsolatePool({ role: 'answers', file, label: 'answers.mjs' }, 4);
    try {
      await pool.start();
      const seen = new Set<string>();
      // Waves of 8 calls at once, each wave at least 8 × 40 ms of a worker's time if one worker runs it.
      for (let wave = 0; wave < 6; wave++) {
        const got = await Promise.all(Array.from({ length: 8 }, () => pool.call('answer', { agent, request: request('q') }) as Promise<{ content: string }>));
        for (const g of got) seen.add(g.content);
      }
      return { threads: seen.size, size: pool.size };
    } finally {
      await pool.close();
    }
  };
  try {
    assert.deepEqual(await threads('wait'), { threads: 1, size: 1 }, 'calls that wait on a timer all run on the first worker');
    assert.deepEqual(await threads('warm'), { threads: 1, size: 1 }, "a worker's busy first call is its warm-up: the calls that wait after it stay on it");
    const cpu = await threads('cpu');
    assert.ok(cpu.threads >= 2 && cpu.size >= 2 && cpu.size <= 4, `calls that keep a worker busy spread over more workers, at most 4: ${JSON.stringify(cpu)}`);
  } finally {
    s.cleanup();
  }
});
