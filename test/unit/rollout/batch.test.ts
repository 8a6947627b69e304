import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { UsageError } from '../../../src/core/errors';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runBatch, type BatchPlanned } from '../../../src/core/lab/batch';
import { BatchRunParamsSchema, parseBatchPlan, parseBatchRunParams, resolveBatchParams } from '../../../src/core/rollout/batchPlan';
import { runRollouts } from '../../../src/core/rollout/runner';
import { storePaths } from '../../../src/core/store/storePaths';
import { main } from '../../../src/cli/main';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');
const RUNNER = { samples: 2, seed: 7, concurrency: 3 } as Parameters<typeof resolveBatchParams>[1];

async function workspace(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-batch-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  return dir;
}

const tcpServers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;

test('a batch plan is checked by its schema; left-out options come from the command and lab.json', () => {
  assert.equal(parseBatchPlan({ command: 'eval', dataset: undefined }).command, 'eval');
  for (const bad of [{ command: 'run', limit: 0 }, { command: 'run', split: 'test' }, { command: 'train' }, { command: 'run', sample: 2 }, { command: 'run', seed: 1.5 }]) {
    assert.throws(() => parseBatchPlan(bad), (e: unknown) => e instanceof UsageError && /invalid batch options/.test(e.message), JSON.stringify(bad));
  }
  assert.deepEqual(resolveBatchParams({ command: 'eval' }, RUNNER), { command: 'eval', dataset: null, split: 'val', limit: null, samples: 2, seed: 7 });
  assert.deepEqual(resolveBatchParams({ command: 'run', dataset: 'd', split: 'all', limit: 3, samples: 1, seed: 0 }, RUNNER), { command: 'run', dataset: 'd', split: 'all', limit: 3, samples: 1, seed: 0 });
});

test("stored run options that are not a batch's cannot be resumed as one, and the error says which run and why", () => {
  assert.deepEqual(parseBatchRunParams('run-1', { command: 'run', dataset: null, split: 'train', limit: 5, samples: 1, seed: 0 }).limit, 5);
  assert.throws(
    () => parseBatchRunParams('run-c', { dataset: null, split: 'val', limit: 3, comparison: { id: 'cmp-1' } }),
    (e: unknown) => e instanceof UsageError && /run "run-c" cannot be resumed as a batch/.test(e.message) && /command/.test(e.message),
  );
});

test('runBatch runs the plan, stores typed options, returns the metrics, and resumes with the stored options', async () => {
  const dir = await workspace();
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const events: string[] = [];
    let planned: BatchPlanned | undefined;
    const r = await runBatch(lab, { command: 'eval', limit: 2, samples: 1, concurrency: 2 }, {
      onPlanned: (p) => {
        planned = p;
        events.push('planned');
      },
      onStart: () => events.push('start'),
      onProgress: () => events.push('progress'),
    });
    assert.deepEqual(events, ['planned', 'start', 'progress', 'progress']);
    assert.equal(planned!.tasks, 2);
    assert.equal(planned!.resumed, false);
    assert.deepEqual(r.params, { command: 'eval', dataset: null, split: 'val', limit: 2, samples: 1, seed: lab.loaded.config.runner.seed });
    assert.deepEqual(BatchRunParamsSchema.parse(lab.store.getRun(r.runId)!.params), r.params);
    assert.equal(r.rollouts.length, 2);
    assert.equal(r.metrics.rollouts, 2);
    assert.equal(r.metrics.succeeded, 2);
    assert.equal(r.allFailedError, null);
    assert.equal(r.simulated, true);

    const again = await runBatch(lab, { command: 'eval', resume: r.runId });
    assert.equal(again.runId, r.runId);
    assert.equal(again.skipped, 2);
    assert.equal(again.ranNow, 0);
    assert.deepEqual(again.params, r.params);

    await assert.rejects(runBatch(lab, { command: 'run', resume: 'run-nope' }), /"run-nope" is not in this workspace's store/);
    const ds = await lab.loadDataset();
    const other = await runRollouts(await lab.environment(ds.tasks), { tasks: [], samples: 1, concurrency: 1, params: { comparison: { id: 'c' } } });
    await assert.rejects(runBatch(lab, { command: 'run', resume: other.runId }), /cannot be resumed as a batch/);
    const runs = lab.store.listRuns().length;
    await assert.rejects(runBatch(lab, { command: 'run', limit: -1 }), UsageError);
    assert.equal(lab.store.listRuns().length, runs, 'a bad plan starts no run');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a bad option is an error with nothing started: no store files, no simulator', async () => {
  const dir = await workspace();
  try {
    const servers = tcpServers();
    await assert.rejects(main(['run', '--workspace', dir, '--samples', '0']), (e: unknown) => e instanceof UsageError && /--samples/.test(e.message));
    await assert.rejects(main(['eval', '--workspace', dir, '--split', 'test']), UsageError);
    await assert.rejects(main(['run', '--workspace', dir, '--dataset', '']), /invalid batch options — dataset/);
    await assert.rejects(main(['run', '--workspace', dir, '--base-url', 'localhost:8000']), /base URL must be an http\(s\) URL/);
    await assert.rejects(Lab.open({ workspace: dir, baseUrl: 'ftp://example.org/v1', env: {} }), UsageError);
    assert.equal(existsSync(storePaths(dir).root), false, 'the store was never opened');
    assert.equal(tcpServers(), servers, 'no simulated endpoint was started');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
