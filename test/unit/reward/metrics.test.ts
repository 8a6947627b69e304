import { test } from 'node:test';
import assert from 'node:assert/strict';
import { computeMetrics } from '../../../src/core/reward/metrics';
import type { RolloutRecord } from '../../../src/core/store/types';

function rollout(p: Partial<RolloutRecord>): RolloutRecord {
  return {
    id: 'x', runId: 'r', taskId: 't', split: 'val', sample: 0, status: 'succeeded', finalReward: 0.5, criteria: { a: 0.5, b: 1 },
    judgeFailed: false, decision: 'GO', expectedDecision: 'yes', turns: 6, error: null, simulated: true, startTime: 0, endTime: 1, spanCount: 1, agents: [], ...p,
  };
}

test('evaluation table: success rate, reward, alignment with maybe apart, turns, judge means', () => {
  const m = computeMetrics(
    [
      rollout({ finalReward: 0.8, decision: 'GO', expectedDecision: 'yes', turns: 5, criteria: { a: 1, b: 0.5 } }),
      rollout({ finalReward: 0.4, decision: 'GO', expectedDecision: 'no', turns: 7, criteria: { a: 0, b: 0.5 } }),
      rollout({ finalReward: 0.6, decision: 'NO-GO', expectedDecision: 'maybe', turns: 6, criteria: { a: 0.5, b: 0.5 } }),
      rollout({ finalReward: 0.1, decision: null, expectedDecision: 'no', turns: 15, judgeFailed: true, criteria: { a: 0.1, b: 0.1 } }),
      rollout({ status: 'failed', finalReward: null, decision: null, turns: null, criteria: null, error: 'HTTP 500' }),
      rollout({ status: 'running' }),
    ],
    ['a', 'b'],
  );
  assert.equal(m.rollouts, 5);
  assert.equal(m.succeeded, 4);
  assert.equal(m.failed, 1);
  assert.equal(m.executionSuccessRate, 80);
  assert.ok(Math.abs(m.averageFinalReward! - 0.475) < 1e-12);
  // yes/no tasks: aligned GO/yes; misaligned GO/no; undecided on a "no" task counts against
  assert.equal(m.alignmentDenominator, 3);
  assert.equal(m.alignedCount, 1);
  assert.ok(Math.abs(m.decisionAlignment! - 100 / 3) < 1e-9);
  assert.deepEqual(m.maybe, { rollouts: 1, go: 0, noGo: 1, undecided: 0 });
  assert.equal(m.averageTurnCount, (5 + 7 + 6 + 15) / 4);
  assert.equal(m.judgeFailures, 1);
  // judge means leave out judge failures
  assert.equal(m.judge.a, 0.5);
  assert.equal(m.judge.b, 0.5);
});

test('empty input gives empty figures, not NaN', () => {
  const m = computeMetrics([], ['a']);
  assert.equal(m.executionSuccessRate, 0);
  assert.equal(m.averageFinalReward, null);
  assert.equal(m.decisionAlignment, null);
  assert.equal(m.judge.a, null);
});
