import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts, type PlannedTask, type RolloutEnvironment, type RunRequest } from '../../../src/core/rollout/runner';
import { resumeSummaryText, type ResumeSummary } from '../../../src/core/rollout/resumePlan';
import { runOutcome, runOutcomeText } from '../../../src/core/analysis/runOutcome';
import { buildEvaluationReport } from '../../../src/core/analysis/evaluationReport';
import { computeMetrics } from '../../../src/core/analysis/metrics';
import { rewardSetupOf } from '../../../src/core/reward/rewardSetup';
import { TraceStore } from '../../../src/core/store/traceStore';
import { statusText } from '../../../src/core/store/failureKinds';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** Errors as the model client words them, per task: on the way to the model, and one of the agent's own. */
const FAULTS: Array<[string, () => Error]> = [
  ['connection', () => new Error("model 'main' at http://127.0.0.1:9/v1: connection failed (ECONNREFUSED) — check the server log or raise models.main.maxRetries")],
  ['connection', () => new Error("model 'main' at http://127.0.0.1:9/v1: connection failed (ECONNRESET) after 4 retries")],
  ['timeout', () => new Error("model 'main' timed out after 120000 ms")],
  ['server_error', () => Object.assign(new Error('503 service unavailable'), { status: 503 })],
  ['invalid_output', () => new Error('unreadable response (Unterminated string in JSON at position 40)')],
];

async function openLab(): Promise<{ lab: Lab; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-resume-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  return { lab: await Lab.open({ workspace: dir, env: {} }), dir };
}

/** The lab's environment, with the tasks in `failing` throwing their fault instead of running. */
function faulty(env: RolloutEnvironment, failing: Map<string, () => Error>): RolloutEnvironment {
  return { ...env, runGraph: (task: PlannedTask, opts) => (failing.has(task.id) ? Promise.reject(failing.get(task.id)!()) : env.runGraph(task, opts)) };
}

test('resume redoes what failed on the way to the model, keeps the agent\'s own failures unless asked, and every count is by final attempt', async () => {
  const { lab, dir } = await openLab();
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 8, seed: 3 });
    const env = await lab.environment(ds.tasks);
    const failing = new Map(FAULTS.map(([, fault], i) => [tasks[i]!.id, fault]));
    const req: RunRequest = { tasks, samples: 1, concurrency: 2, params: { limit: 8 }, seed: 3 };
    const first = await runRollouts(faulty(env, failing), req);
    assert.deepEqual(
      first.rollouts.filter((r) => r.status === 'failed').map((r) => r.failure).sort(),
      ['connection', 'connection', 'invalid_output', 'server_error', 'timeout'],
      'the premise: each fault is classified as meant',
    );

    // The server is back: the transport failures are redone, the invalid output is not.
    let resume: ResumeSummary | undefined;
    const second = await runRollouts(env, { ...req, resumeRunId: first.runId, onStart: (i) => (resume = i.resume) });
    assert.deepEqual(resume, { done: 4, transport: { connection: 2, timeout: 1, server_error: 1 }, unfinished: 0, retried: {}, keptFailed: { invalid_output: 1 }, notStarted: 0 });
    assert.equal(
      resumeSummaryText(resume!),
      "redoing 4 rollouts that failed on transport (connection failed ×2, server error ×1, timeout ×1); 4 already done — 1 of those failed for the agent's own reasons (invalid output ×1) and is kept; add --retry-failed to redo it",
    );
    assert.equal(second.ranNow, 4);
    assert.equal(second.rollouts.length, 8, 'one rollout per planned task: the superseded attempts are not in the result');
    const metrics = computeMetrics(second.rollouts, rewardSetupOf(lab.loaded.config));
    assert.deepEqual([metrics.rollouts, metrics.succeeded, metrics.failed, metrics.failures], [8, 7, 1, { invalid_output: 1 }]);
    assert.equal(metrics.executionSuccessRate, 87.5);

    const outcome = runOutcome(lab.store, first.runId);
    assert.deepEqual(outcome, { runId: first.runId, planned: 8, succeeded: 7, failed: 1, cancelled: 0, running: 0, notStarted: 0, superseded: 4 });
    assert.equal(runOutcomeText(outcome), '7 succeeded, 1 failed, of 8 planned (4 earlier attempts redone, superseded)');
    const report = buildEvaluationReport(lab.store, { runId: first.runId, criteria: lab.loaded.config.reward.criteria });
    assert.deepEqual(report.run.counts, { total: 8, succeeded: 7, failed: 1, noOutput: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 4 });
    assert.deepEqual([report.table.executionSuccess.count, report.table.executionSuccess.n], [7, 8]);
    const superseded = lab.store.listRollouts({ runId: first.runId, superseded: true }).rollouts;
    assert.equal(superseded.length, 4);
    for (const old of superseded) {
      const by = lab.store.getRollout(old.supersededBy!)!;
      assert.deepEqual([by.taskId, by.sample, by.status], [old.taskId, old.sample, 'succeeded']);
      assert.match(statusText(old), /^failed \((connection failed|timeout|server error)\), superseded$/);
    }
    assert.equal(lab.store.queryTable({ runIds: [first.runId] }).rows.filter((r) => r.supersededBy !== null).length, 4, 'the table shows them, labelled');

    // Asked to, the agent's own failure is redone too.
    const third = await runRollouts(env, { ...req, resumeRunId: first.runId, retryFailed: true, onStart: (i) => (resume = i.resume) });
    assert.deepEqual(resume, { done: 7, transport: {}, unfinished: 0, retried: { invalid_output: 1 }, keptFailed: {}, notStarted: 0 });
    assert.match(resumeSummaryText(resume!), /^redoing 1 rollout that failed \(invalid output ×1\), as asked; 7 already done$/);
    assert.deepEqual([third.ranNow, third.rollouts.length, third.rollouts.every((r) => r.status === 'succeeded')], [1, 8, true]);
    assert.equal(runOutcome(lab.store, first.runId).superseded, 5);
  } finally {
    await lab.close();
  }
  // The links are in the journals: a catalog rebuilt from them, and one rebuilt from compacted segments, agree.
  const catalog = join(dir, '.rollout-lab/store/catalog.sqlite');
  try {
    for (const from of ['journals', 'segments']) {
      rmSync(catalog);
      const store = await TraceStore.open(dir);
      try {
        const runId = store.listRuns()[0]!.id;
        assert.deepEqual(runOutcome(store, runId), { runId, planned: 8, succeeded: 8, failed: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 5 }, `rebuilt from the ${from}`);
        if (from === 'journals') await store.compact();
      } finally {
        await store.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a cancelled run says what the store holds: succeeded, cancelled and not started, of planned; resume finishes it', async () => {
  const { lab, dir } = await openLab();
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 12, seed: 4 });
    const env = await lab.environment(ds.tasks);
    const controller = new AbortController();
    const req: RunRequest = { tasks, samples: 1, concurrency: 3, params: { limit: 12 }, seed: 4 };
    const first = await runRollouts(env, { ...req, signal: controller.signal, onProgress: (p) => p.done === 3 && controller.abort() });
    assert.equal(first.cancelled, true);
    const o = runOutcome(lab.store, first.runId);
    // What the Rollouts view and the table list for the run, by status.
    const stored = lab.store.listRollouts({ runId: first.runId }).rollouts;
    const by = (s: string): number => stored.filter((r) => r.status === s).length;
    assert.deepEqual([o.succeeded + o.failed, o.cancelled, o.notStarted, o.planned], [by('succeeded') + by('failed'), by('cancelled'), 12 - stored.length, 12]);
    assert.ok(o.cancelled > 0 && o.notStarted > 0, `the premise: some in flight were cancelled and some never started (${JSON.stringify(o)})`);
    assert.equal(runOutcomeText(o), `${o.succeeded} succeeded, ${o.failed} failed, ${o.cancelled} cancelled, ${o.notStarted} not started, of 12 planned`);

    let resume: ResumeSummary | undefined;
    await runRollouts(env, { ...req, resumeRunId: first.runId, onStart: (i) => (resume = i.resume) });
    assert.deepEqual([resume!.unfinished, resume!.notStarted, resume!.done], [o.cancelled, o.notStarted, o.succeeded + o.failed]);
    const after = runOutcome(lab.store, first.runId);
    assert.deepEqual([after.succeeded + after.failed, after.cancelled, after.notStarted, after.superseded], [12, 0, 0, o.cancelled]);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an attempt redone with retryFailed is no training example: export takes each task\'s final attempt', async () => {
  const { lab, dir } = await openLab();
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 3, seed: 8 });
    const env = await lab.environment(ds.tasks);
    // The graph ends without a final output on one task: failed, yet scored (noOutputReward), so export could take it.
    const empty: RolloutEnvironment = {
      ...env,
      runGraph: async (task, opts) => {
        const outcome = await env.runGraph(task, opts);
        return task.id === tasks[0]!.id ? { ...outcome, finalOutput: null } : outcome;
      },
    };
    const req: RunRequest = { tasks, samples: 1, concurrency: 3, params: { limit: 3 }, seed: 8 };
    const first = await runRollouts(empty, req);
    const old = first.rollouts.find((r) => r.taskId === tasks[0]!.id)!;
    assert.deepEqual([old.status, old.failure, old.finalReward !== null], ['failed', 'no_output', true], 'the premise: a scored failure');
    await runRollouts(env, { ...req, resumeRunId: first.runId, retryFailed: true });
    const { selectRollouts } = await import('../../../src/core/train/export/adapters/rolloutSelection');
    const picked = selectRollouts(lab.store, { runId: first.runId, agents: Object.keys(lab.loaded.config.agents), includeSimulated: true, keepScoredFailures: true }, {});
    assert.deepEqual(picked.map((r) => r.taskId).sort(), tasks.map((t) => t.id).sort(), 'one example per task');
    assert.ok(!picked.some((r) => r.id === old.id), 'the superseded attempt is not exported');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
