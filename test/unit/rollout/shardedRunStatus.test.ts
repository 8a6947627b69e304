import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { rolloutKey, runRollouts, shardedRunStatus, type RunRequest } from '../../../src/core/rollout/runner';
import { shardSlice } from '../../../src/core/rollout/shards';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

test('a worker of a sharded run plans only its slice, and the run is done only once every slice stands', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-shard-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 6, seed: 1 });
    const env = await lab.environment(ds.tasks);
    const req: RunRequest = { tasks, samples: 2, concurrency: 2, params: { limit: 6, shards: 2 }, seed: 1 };
    const keys = tasks.flatMap((t) => [rolloutKey(t.id, 0), rolloutKey(t.id, 1)]);
    const slice = (k: number): string[] => shardSlice(keys, (key) => key, { index: k, count: 2 });

    const first = await runRollouts(env, { ...req, shard: { index: 0, count: 2 } });
    assert.deepEqual(first.rollouts.map((r) => rolloutKey(r.taskId, r.sample)).sort(), slice(0).sort(), 'slice 0 ran its keys and no other');
    assert.equal(lab.store.getRun(first.runId)?.planned, keys.length, 'the run plans the whole plan');
    assert.equal(first.shard?.runDone, false);
    assert.equal(lab.store.getRun(first.runId)?.status, 'running', 'the first slice does not mark the run done');

    // A worker stopped before it ran anything says nothing for the others.
    const stopped = new AbortController();
    stopped.abort();
    const cancelled = await runRollouts(env, { ...req, resumeRunId: first.runId, shard: { index: 1, count: 2 }, signal: stopped.signal });
    assert.equal(cancelled.cancelled, true);
    assert.equal(lab.store.getRun(first.runId)?.status, 'running', 'a cancelled worker does not mark the run cancelled');

    const second = await runRollouts(env, { ...req, resumeRunId: first.runId, shard: { index: 1, count: 2 } });
    assert.deepEqual(second.rollouts.map((r) => rolloutKey(r.taskId, r.sample)).sort(), slice(1).sort());
    assert.equal(second.shard?.runDone, true);
    assert.equal(lab.store.getRun(first.runId)?.status, 'done', 'the last slice to end finds every key standing');
    await env.close?.();
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('shardedRunStatus: done only when the whole run stands; cancelled only by the worker that created the run', () => {
  assert.equal(shardedRunStatus({ runDone: true, cancelled: false, createdHere: false }), 'done');
  assert.equal(shardedRunStatus({ runDone: true, cancelled: true, createdHere: true }), 'done');
  assert.equal(shardedRunStatus({ runDone: false, cancelled: true, createdHere: true }), 'cancelled');
  assert.equal(shardedRunStatus({ runDone: false, cancelled: true, createdHere: false }), null);
  assert.equal(shardedRunStatus({ runDone: false, cancelled: false, createdHere: false }), null);
  assert.equal(shardedRunStatus({ runDone: false, cancelled: false, createdHere: true }), null);
});
