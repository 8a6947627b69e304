import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { chatCompletion } from '../../../src/core/llm/client';
import { LlmAbortError } from '../../../src/core/llm/llmErrors';
import type { ResolvedModel } from '../../../src/core/llm/routing';
import { Lab } from '../../../src/core/lab/lab';
import { forEachBounded } from '../../../src/core/rollout/pool';
import { runRollouts } from '../../../src/core/rollout/runner';
import { startSimServer } from '../../../src/core/sim/simServer';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

const abortListeners = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

/** Collects the process warnings emitted while `work` runs (they are emitted on a later tick). */
async function warningsDuring(work: () => Promise<void>): Promise<Error[]> {
  const seen: Error[] = [];
  const onWarning = (w: Error): void => void seen.push(w);
  process.on('warning', onWarning);
  try {
    await work();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

test('a run of 30 rollouts at concurrency 4 warns of no listener leak and leaves no listener on its signal', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-signals-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 30, seed: 6 });
    const env = await lab.environment(ds.tasks);
    const controller = new AbortController();
    const during: number[] = [];
    let ran = 0;
    const warnings = await warningsDuring(async () => {
      const r = await runRollouts(env, {
        tasks,
        samples: 1,
        concurrency: 4,
        params: {},
        seed: 6,
        signal: controller.signal,
        onProgress: () => void during.push(abortListeners(controller.signal)),
      });
      ran = r.ranNow;
    });
    assert.equal(ran, 30);
    assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), []);
    assert.ok(Math.max(...during) <= 1, `listeners on the run's signal while it ran: ${Math.max(...during)}`);
    assert.equal(abortListeners(controller.signal), 0, 'none left once the run is over');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('each pool item gets a signal of its own that aborts with the pool\'s, which holds one listener whatever the limit', async () => {
  const controller = new AbortController();
  const itemSignals: AbortSignal[] = [];
  const listeners: number[] = [];
  const warnings = await warningsDuring(() =>
    forEachBounded(
      Array.from({ length: 40 }, (_, i) => i),
      16,
      async (i, _index, signal) => {
        assert.ok(signal, `item ${i} has a signal`);
        itemSignals.push(signal);
        // What a library may leave behind on the signal it is given: it must not reach the pool's signal.
        signal.addEventListener('abort', () => undefined);
        listeners.push(abortListeners(controller.signal));
        if (itemSignals.length === 16) controller.abort(new Error('stop'));
        // Every item stays in flight until its own signal says stop.
        await new Promise<void>((done) => (signal.aborted ? done() : signal.addEventListener('abort', () => done(), { once: true })));
      },
      controller.signal,
    ),
  );
  assert.equal(itemSignals.length, 16, 'no item starts after the abort');
  assert.equal(new Set(itemSignals).size, 16, 'one signal per item');
  assert.ok(itemSignals.every((s) => s.aborted && (s.reason as Error).message === 'stop'), 'the items in flight saw the abort and its reason');
  assert.ok(listeners.every((n) => n === 1), `listeners on the pool's signal: ${listeners.join(',')}`);
  assert.equal(abortListeners(controller.signal), 0);
  assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message), []);
});

test('a model call follows the caller\'s signal with one listener while it runs and leaves nothing on it after', async () => {
  const controller = new AbortController();
  const seen: number[] = [];
  const sim = await startSimServer({
    faults: ({ index }) => {
      seen.push(abortListeners(controller.signal));
      if (index < 2) return null;
      setImmediate(() => controller.abort());
      return { kind: 'hang' };
    },
  });
  const model: ResolvedModel = {
    logical: 'senior', baseUrl: sim.url, model: 'm', apiKey: 'none', timeoutMs: 10_000, maxRetries: 0,
    logprobs: false, tokenIds: false, version: null, simulated: true,
  };
  const messages = [{ role: 'user' as const, content: 'Does X help?' }];
  try {
    await chatCompletion(model, { messages }, { signal: controller.signal });
    await chatCompletion(model, { messages }, { signal: controller.signal });
    assert.equal(abortListeners(controller.signal), 0);
    // Node 20's AbortSignal.any keeps each combined signal in a set on the source signal for as long as the source lives.
    const dependants = Object.getOwnPropertySymbols(controller.signal).find((s) => s.description === 'kDependantSignals');
    const kept = dependants ? ((controller.signal as unknown as Record<symbol, Set<unknown> | undefined>)[dependants]?.size ?? 0) : 0;
    assert.equal(kept, 0, 'no combined signal is kept on the caller\'s');
    await assert.rejects(chatCompletion(model, { messages }, { signal: controller.signal }), LlmAbortError);
    assert.deepEqual(seen, [1, 1, 1], 'one listener on the caller\'s signal during each call');
    assert.equal(abortListeners(controller.signal), 0);
  } finally {
    await sim.close();
  }
});
