import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig } from '../../../src/core/config/loader';
import { registerModelVersion } from '../../../src/core/config/modelRegistry';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { boundedMeanInterval, pairedTTest } from '../../../src/core/analysis/statistics';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { learningCurve } from '../../../src/core/train/pipeline/learningCurve';
import { registerTrainedModel } from '../../../src/core/train/phases/trainedModel';
import { learningCurveTable } from '../../../src/cli/format';
import { intervalGauge } from '../../../src/core/train/pipeline/learningCurveText';
import { makeAgent, makeRollout, makeRun, tempWorkspace } from '../store/helpers/storeFixtures';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

function close(actual: number | null | undefined, expected: number, what: string): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) < 1e-9, `${what}: ${actual} vs ${expected}`);
}

async function evaluate(dir: string, limit: number): Promise<RolloutRecord[]> {
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const seed = lab.loaded.config.runner.seed;
    const tasks = lab.selectTasks(ds, { split: 'val', limit, seed });
    const r = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 2, params: { command: 'eval', split: 'val', seed }, seed });
    return r.rollouts;
  } finally {
    await lab.close();
  }
}

test('the simulated research lab evaluated before and after registering a junior version: one point per version, paired on the same tasks', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-curve-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const before = await evaluate(dir, 3);
  // A "trained" junior on the same simulated endpoint: only the version label the rollouts record differs.
  registerTrainedModel(await loadConfig(dir), 'junior', { version: 'sft-1', phase: 'sft-juniors' });
  const after = await evaluate(dir, 3);
  assert.equal(before.length, 3);
  assert.equal(after.length, 3);

  const loaded = await loadConfig(dir);
  const store = await TraceStore.open(dir, { readOnly: true });
  t.after(() => store.close());
  const curve = learningCurve(store, loaded);
  assert.equal(curve.split, 'val');
  assert.equal(curve.hint, null);
  const junior = curve.series.find((s) => s.model === 'junior')!;
  assert.deepEqual(junior.agents, ['Geneticist', 'Pharmacologist', 'Neurologist']);
  assert.deepEqual(
    junior.points.map((p) => [p.label, p.rollouts, p.tasks, p.simulated, p.active, p.producedBy?.phase ?? null]),
    [
      ['base', 3, 3, 3, false, null],
      ['junior@sft-1', 3, 3, 3, true, 'sft-juniors'],
    ],
  );
  const rewards = (rs: RolloutRecord[]): number[] => rs.map((r) => r.finalReward!);
  close(junior.points[0]!.reward.mean, rewards(before).reduce((a, b) => a + b) / 3, 'base mean');
  close(junior.points[1]!.reward.mean, rewards(after).reduce((a, b) => a + b) / 3, 'sft-1 mean');
  assert.deepEqual(junior.points[0]!.reward.ci, boundedMeanInterval(rewards(before)));
  const change = junior.points[1]!.change!;
  assert.equal(change.versus, 'base');
  assert.equal(change.pairs, 3, 'the same tasks, samples and seed');
  const byTask = new Map(before.map((r) => [r.taskId, r.finalReward!]));
  const t3 = pairedTTest(after.map((r) => byTask.get(r.taskId)!), rewards(after))!;
  close(change.delta, t3.delta, 'paired delta');
  assert.equal(change.pValue, t3.pValue);
  assert.equal(junior.points[0]!.change, null);

  // The seniors were never retrained: one base point over the same rollouts.
  const senior = curve.series.find((s) => s.model === 'senior')!;
  assert.deepEqual(senior.points.map((p) => [p.label, p.rollouts]), [['base', 6]]);

  // Simulated rollouts are flagged, and can be left out.
  const real = learningCurve(store, loaded, { excludeSimulated: true });
  assert.equal(real.simulatedLeftOut, 6);
  assert.deepEqual(real.series.find((s) => s.model === 'junior')!.points.map((p) => [p.label, p.rollouts]), [['junior@sft-1', 0]]);
  assert.match(real.hint ?? '', /rollout-lab eval/);

  const text = learningCurveTable(curve);
  assert.match(text, /junior@sft-1 \*\s+sft-juniors/);
  assert.match(text, /3 \(3 tasks\), 3 SIMULATED/);
  assert.match(text, /SIMULATED: some rollouts were answered by the simulated endpoint/);
});

test('points follow the registry order, group by the trained agent\'s version, and pair on task × sample × seed', async (t) => {
  const ws = tempWorkspace();
  await initWorkspace(ws.dir, { dataset: PUBMEDQA });
  const labDir = join(ws.dir, '.rollout-lab');
  mkdirSync(labDir, { recursive: true });
  // Registered b before a; c never evaluated; x evaluated but unknown to the registry.
  registerModelVersion(labDir, 'junior', { version: 'b', producedBy: { phase: 'sft-juniors', at: 5 } });
  registerModelVersion(labDir, 'junior', { version: 'a' });
  registerModelVersion(labDir, 'junior', { version: 'c' });
  const store = await TraceStore.open(ws.dir);
  t.after(async () => {
    await store.close();
    ws.cleanup();
  });
  let clock = 10_000;
  const run = (id: string, seed: number, split: 'val' | 'train' = 'val'): void => {
    store.startRun(makeRun(id, { startTime: clock, status: 'done', params: { command: 'eval', split, seed } }));
  };
  const add = (runId: string, taskId: string, sample: number, reward: number, version: string | null, over: Partial<RolloutRecord> = {}): void => {
    const agents = [
      makeAgent('Geneticist', { model: 'junior', modelVersion: version }),
      // The Supervisor shares the model but is not trained: its version never decides the group.
      makeAgent('Supervisor', { model: 'junior', modelVersion: 'a' }),
    ];
    const r = { ...makeRollout({ runId, taskId, sample, finalReward: reward, split: 'val', startTime: clock++, agents }), simulated: false, ...over };
    store.startRollout({ ...r, status: 'running', finalReward: null });
    store.finishRollout(r);
  };
  const A = [0.2, 0.4, 0.5, 0.3];
  const B = [0.6, 0.5, 0.9, 0.7];
  run('r-a', 1);
  A.forEach((x, i) => add('r-a', `t${i}`, 0, x, 'a'));
  run('r-b', 1);
  B.forEach((x, i) => add('r-b', `t${i}`, 0, x, 'b'));
  // Another seed: not a pair of the seed-1 runs.
  add('r-b', 't0', 1, 1, 'b');
  run('r-b2', 2);
  add('r-b2', 't1', 0, 0, 'b');
  run('r-base', 1);
  add('r-base', 't0', 0, 0.1, null);
  add('r-base', 't1', 0, 0.3, null);
  run('r-x', 1);
  add('r-x', 't0', 0, 1, 'x');
  add('r-x', 't9', 0, 1, 'x', { simulated: true });
  // Neither validation nor scored: left out.
  add('r-x', 't1', 0, 1, 'x', { split: 'train' });
  add('r-x', 't2', 0, 0, 'x', { status: 'failed', finalReward: null, failure: 'server_error' });

  const loaded = await loadConfig(ws.dir);
  const curve = learningCurve(store, loaded, { agent: 'Geneticist' });
  assert.equal(curve.series.length, 1);
  const s = curve.series[0]!;
  assert.deepEqual(s.agents, ['Geneticist']);
  assert.deepEqual(
    s.points.map((p) => [p.label, p.rollouts, p.tasks, p.simulated, p.active]),
    [
      ['base', 2, 2, 0, false],
      ['junior@b', 6, 4, 0, false],
      ['junior@a', 4, 4, 0, false],
      ['junior@c', 0, 0, 0, true],
      ['junior@x', 2, 2, 1, false],
    ],
  );
  assert.deepEqual(s.points[1]!.producedBy, { phase: 'sft-juniors', at: 5 });
  // b vs base: t0 and t1 with sample 0 and seed 1 only.
  const b = s.points[1]!.change!;
  assert.equal(b.versus, 'base');
  assert.equal(b.pairs, 2);
  close(b.delta, (0.6 - 0.1 + (0.5 - 0.3)) / 2, 'b − base');
  // a vs b over t0..t3 (seed 1, sample 0).
  const a = s.points[2]!.change!;
  const ref = pairedTTest(B, A)!;
  assert.equal(a.pairs, 4);
  close(a.delta, ref.delta, 'a − b');
  close(a.pValue, ref.pValue, 'p');
  assert.deepEqual(a.ci, [Math.max(-1, ref.ci[0]), Math.min(1, ref.ci[1])]);
  assert.deepEqual(s.points[2]!.reward.ci, boundedMeanInterval(A));
  assert.equal(s.points[3]!.change, null, 'not evaluated');
  // x is compared with the last evaluated point (a), on t0 only.
  const x = s.points[4]!.change!;
  assert.equal(x.versus, 'junior@a');
  assert.equal(x.pairs, 1);
  close(x.delta, 1 - 0.2, 'x − a');
  assert.equal(x.ci, null);
  assert.equal(x.pValue, null);

  assert.throws(() => learningCurve(store, loaded, { agent: 'Nobody' }), /--agent: no agent "Nobody".*Geneticist/);
});

test('the interval gauge draws the interval over 0..1 and the mean on it', () => {
  assert.equal(intervalGauge(0.5, [0.25, 0.75], 5), '·━●━·');
  assert.equal(intervalGauge(1, [0.9, 1], 11), '·········━●');
  assert.equal(intervalGauge(0, null, 4), '●···');
});
