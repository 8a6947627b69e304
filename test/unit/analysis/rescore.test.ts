import { test } from 'node:test';
import assert from 'node:assert/strict';
import { distribution, rescore } from '../../../src/core/analysis/rescore';
import { rescoreStoredRollouts } from '../../../src/core/analysis/rescoreStore';
import { TraceStore } from '../../../src/core/store/traceStore';
import { weightedReward } from '../../../src/core/reward/weighted';
import type { RolloutRecord } from '../../../src/core/store/types';
import { makeRollout, makeRun, tempWorkspace } from '../store/helpers/storeFixtures';

const OLD = { a: { weight: 0.75 }, b: { weight: 0.25 } };

function rollout(id: string, criteria: Record<string, number> | null, extra: Partial<RolloutRecord> = {}): RolloutRecord {
  return {
    id, runId: 'run', taskId: `task-${id}`, split: 'val', sample: 0, status: 'succeeded',
    finalReward: criteria ? weightedReward(criteria, OLD) : 0,
    criteria, judgeFailed: false, decision: 'GO', expectedDecision: 'yes', turns: 3, error: null,
    simulated: true, startTime: 1, endTime: 2, spanCount: 10, agents: [], ...extra,
  };
}

// Old weights favour criterion a; r1 is strong on a, r3 on b.
const ROLLOUTS = [
  rollout('r1', { a: 0.95, b: 0.15 }), // 0.75 → 0.35
  rollout('r2', { a: 0.55, b: 0.55 }), // 0.55 → 0.55
  rollout('r3', { a: 0.15, b: 0.95 }), // 0.35 → 0.75
  rollout('r4', null), // no final output: noOutputReward 0
  rollout('r5', { a: 0.1, b: 0.1 }, { judgeFailed: true, finalReward: 0.1 }),
];

test('moving weight from a to b reverses the ranking of the scored rollouts, from stored scores only', () => {
  const r = rescore(ROLLOUTS, { a: { weight: 0.25 }, b: { weight: 0.75 } }, { top: 1 });
  const by = new Map(r.rows.map((x) => [x.rolloutId, x]));
  assert.deepEqual(r.rows.map((x) => x.rolloutId), ['r1', 'r2', 'r3', 'r4', 'r5']);
  assert.ok(Math.abs(by.get('r1')!.before! - 0.75) < 1e-12);
  assert.ok(Math.abs(by.get('r1')!.after! - 0.35) < 1e-12);
  assert.ok(Math.abs(by.get('r3')!.after! - 0.75) < 1e-12);
  assert.deepEqual(r.rows.map((x) => [x.rankBefore, x.rankAfter]), [[1, 3], [2, 2], [3, 1], [5, 5], [4, 4]]);
  assert.equal(by.get('r1')!.taskId, 'task-r1');
  // Rollouts without usable criterion scores keep their reward and say why.
  assert.equal(by.get('r4')!.kept, 'no-criteria');
  assert.equal(by.get('r4')!.after, 0);
  assert.equal(by.get('r5')!.kept, 'judge-failed');
  assert.equal(by.get('r5')!.after, 0.1);
  assert.equal(by.get('r2')!.kept, null);
  assert.equal(r.rescored, 3);
  assert.equal(r.kept, 2);
  // Spearman by hand: rank differences 2, 0, −2, 0, 0 → 1 − 6·8 / (5·24) = 0.6.
  assert.ok(Math.abs(r.rankCorrelation! - 0.6) < 1e-12);
  assert.deepEqual(r.changedTop, { k: 1, before: ['r1'], after: ['r3'], entered: ['r3'], left: ['r1'], changed: true });
  assert.deepEqual(r.missingCriteria, []);
  // Distributions: the mean moves, the histogram shows where.
  assert.ok(Math.abs(r.before.mean! - (0.75 + 0.55 + 0.35 + 0 + 0.1) / 5) < 1e-12);
  assert.ok(Math.abs(r.after.mean! - r.before.mean!) < 1e-12, 'a mirror-image swap keeps the mean');
  assert.ok(Math.abs(r.after.median! - 0.35) < 1e-12);
  assert.equal(r.after.min, 0);
  assert.ok(Math.abs(r.after.max! - 0.75) < 1e-12);
  assert.deepEqual(r.after.histogram, [1, 1, 0, 1, 0, 1, 0, 1, 0, 0]);
  assert.equal(r.after.count, 5);
});

test('the same weights at another scale change nothing (weights are normalised)', () => {
  const r = rescore(ROLLOUTS, { a: { weight: 3 }, b: { weight: 1 } });
  for (const row of r.rows) assert.ok(Math.abs(row.after! - row.before!) < 1e-12);
  assert.equal(r.rankCorrelation, 1);
  assert.equal(r.changedTop.changed, false);
  assert.equal(r.changedTop.k, 10);
  assert.equal(r.changedTop.before.length, 5);
});

test('a new criterion without stored scores is reported and counts as 0', () => {
  const r = rescore(ROLLOUTS, { a: { weight: 1 }, b: { weight: 0 }, c: { weight: 1 } });
  assert.deepEqual(r.missingCriteria, ['c']);
  assert.ok(Math.abs(r.rows[0]!.after! - 0.475) < 1e-12);
});

test('rollouts without a reward get no rank; empty input gives empty distributions', () => {
  const running = rollout('r6', null, { finalReward: null, status: 'running' });
  const r = rescore([running, ROLLOUTS[0]!], OLD);
  assert.equal(r.rows[0]!.rankBefore, null);
  assert.equal(r.rows[0]!.rankAfter, null);
  assert.equal(r.rows[1]!.rankAfter, 1);
  assert.equal(r.rankCorrelation, null);
  const empty = rescore([], OLD);
  assert.deepEqual(empty.before, distribution([]));
  assert.deepEqual(empty.before.histogram, new Array(10).fill(0));
  assert.equal(empty.before.mean, null);
  assert.deepEqual(distribution([1, 0, 0.999]).histogram, [1, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
});

test('re-scoring in a store: a rollout without output keeps its reward and stays in the distributions; one that threw is not there', async () => {
  const ws = tempWorkspace();
  const store = await TraceStore.open(ws.dir);
  try {
    store.startRun(makeRun('run-r'));
    const judged = makeRollout({ runId: 'run-r', taskId: 'judged', finalReward: 0.6 });
    const empty = { ...makeRollout({ runId: 'run-r', taskId: 'empty', status: 'failed', failure: 'no_output', finalReward: 0 }), criteria: null };
    const crashed = { ...makeRollout({ runId: 'run-r', taskId: 'crashed', status: 'failed', failure: 'timeout', finalReward: null }), criteria: null };
    for (const r of [judged, empty, crashed]) {
      store.startRollout(r);
      store.finishRollout(r);
    }
    const { result, rescoreId } = rescoreStoredRollouts(store, { novelty: { weight: 1 }, clarity: { weight: 0 } }, { dryRun: true });
    assert.equal(rescoreId, null);
    assert.deepEqual(result.rows.map((r) => [r.taskId, r.before, r.after, r.kept]).sort(), [
      ['empty', 0, 0, 'no-criteria'],
      ['judged', 0.6, 0.5, null],
    ]);
    assert.equal(result.before.count, 2);
  } finally {
    await store.close();
    ws.cleanup();
  }
});
