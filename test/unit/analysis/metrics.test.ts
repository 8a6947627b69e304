import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricsTable } from '../../../src/core/analysis/metricsTable';
import { computeMetrics } from '../../../src/core/analysis/metrics';
import type { RewardSetup } from '../../../src/core/reward/rewardSetup';
import type { RolloutRecord } from '../../../src/core/store/types';

function rollout(p: Partial<RolloutRecord>): RolloutRecord {
  return {
    id: 'x', runId: 'r', taskId: 't', split: 'val', sample: 0, status: 'succeeded', failure: null, finalReward: 0.5, criteria: { a: 0.5, b: 1 }, rewardBreakdown: null,
    judgeFailed: false, decision: 'GO', expectedDecision: 'yes', turns: 6, error: null, simulated: true, startTime: 0, endTime: 1, spanCount: 1, agents: [], ...p,
  };
}

const JUDGED: RewardSetup = { criteria: ['a', 'b'], judge: true, custom: false };
/** A custom reward in mode "replace" whose module never asks for the judge. */
const CUSTOM_ONLY: RewardSetup = { criteria: ['a', 'b'], judge: false, custom: true };

test('evaluation table: success rate, reward, alignment with maybe apart, turns, judge means', () => {
  const m = computeMetrics(
    [
      rollout({ finalReward: 0.8, decision: 'GO', expectedDecision: 'yes', turns: 5, criteria: { a: 1, b: 0.5 } }),
      rollout({ finalReward: 0.4, decision: 'GO', expectedDecision: 'no', turns: 7, criteria: { a: 0, b: 0.5 } }),
      rollout({ finalReward: 0.6, decision: 'NO-GO', expectedDecision: 'maybe', turns: 6, criteria: { a: 0.5, b: 0.5 } }),
      rollout({ finalReward: 0.1, decision: 'GO', expectedDecision: 'no', turns: 15, judgeFailed: true, criteria: { a: 0.1, b: 0.1 } }),
      rollout({ status: 'failed', failure: 'server_error', finalReward: null, decision: null, turns: null, criteria: null, error: 'HTTP 500' }),
      rollout({ status: 'running' }),
    ],
    JUDGED,
  );
  assert.equal(m.rollouts, 5);
  assert.equal(m.succeeded, 4);
  assert.equal(m.failed, 1);
  assert.deepEqual([m.noOutput, m.crashed], [0, 1]);
  assert.deepEqual(m.failures, { server_error: 1 });
  assert.equal(m.executionSuccessRate, 80);
  assert.ok(Math.abs(m.averageFinalReward! - 0.475) < 1e-12);
  assert.equal(m.rewarded, 4);
  assert.deepEqual(m.shape, { judge: true, alignment: true, customReward: false });
  // yes/no tasks: aligned GO/yes; misaligned GO/no twice
  assert.equal(m.alignmentDenominator, 3);
  assert.equal(m.alignedCount, 1);
  assert.ok(Math.abs(m.decisionAlignment! - 100 / 3) < 1e-9);
  assert.deepEqual(m.maybe, { rollouts: 1, go: 0, noGo: 1, undecided: 0 });
  assert.equal(m.averageTurnCount, (5 + 7 + 6 + 15) / 4);
  assert.equal(m.judgeFailures, 1);
  // judge means leave out judge failures
  assert.equal(m.judge.a, 0.5);
  assert.equal(m.judge.b, 0.5);
  assert.deepEqual(m.customReward, {});
});

test('a rollout whose graph gave no output fails the success rate but counts, with its reward, in the mean; one that threw does not', () => {
  const m = computeMetrics(
    [
      rollout({ finalReward: 0.9 }),
      rollout({ finalReward: 0.7 }),
      // As in the issue: every agent step failed, the Supervisor had nothing to choose from, reward 0.
      rollout({ status: 'failed', failure: 'no_output', finalReward: 0, criteria: null, decision: null, turns: 4, error: 'the graph finished without a final output' }),
      rollout({ status: 'failed', failure: 'truncated', finalReward: 0, criteria: null, decision: null, turns: 3, error: "the graph gave no final output: PI's answer was truncated at max_tokens" }),
      rollout({ status: 'failed', failure: 'timeout', finalReward: null, criteria: null, decision: null, turns: null, error: 'timed out' }),
      rollout({ status: 'cancelled', failure: 'cancelled', finalReward: null }),
    ],
    JUDGED,
  );
  assert.deepEqual([m.rollouts, m.succeeded, m.failed, m.noOutput, m.truncated, m.crashed], [5, 2, 3, 2, 1, 1]);
  assert.equal(m.executionSuccessRate, 40, 'succeeded / finished: the no-output rollouts count against it');
  assert.equal(m.rewarded, 4);
  assert.ok(Math.abs(m.averageFinalReward! - (0.9 + 0.7 + 0 + 0) / 4) < 1e-12, "the no-output rollouts' 0 is in the mean, the timeout is not");
  assert.deepEqual(m.failures, { no_output: 1, truncated: 1, timeout: 1 });
  // A no-output rollout on a yes task made no decision: not aligned, as before.
  assert.deepEqual([m.alignedCount, m.alignmentDenominator], [2, 4]);
  assert.equal(m.averageTurnCount, (6 + 6 + 4 + 3) / 4);

  const text = metricsTable(m, false);
  assert.match(text, /Execution Success Rate\s+40\.0 %\s+2\/5 rollouts; failed: 2 no final output \(1 truncated at max_tokens\), 1 timeout/);
  assert.match(text, /Average Final Reward\s+0\.400\s+over 4 rollouts, 2 without output included; 1 failed without a reward \(left out\)/);
});

test('a lab without a judge and with its own decisions: no judge rows, no alignment, its decisions counted, its reward breakdown shown', () => {
  const sql = (decision: string | null, exec: number, extra: Partial<RolloutRecord> = {}): RolloutRecord =>
    rollout({ decision, expectedDecision: null, criteria: null, finalReward: exec, rewardBreakdown: { execution_match: exec, valid_sql: decision ? 1 : 0 }, ...extra });
  const rollouts = [
    sql('CORRECT', 1),
    sql('CORRECT', 1),
    sql('CORRECT', 1),
    sql('INCORRECT', 0),
    sql('INCORRECT', 0),
    sql(null, 0, { status: 'failed', failure: 'no_output' }),
  ];
  const m = computeMetrics(rollouts, CUSTOM_ONLY);
  assert.deepEqual(m.shape, { judge: false, alignment: false, customReward: true });
  assert.deepEqual(m.judge, {}, 'no "Judge: … n/a" rows for a graph that never used the judge');
  assert.equal(m.decisionAlignment, null);
  assert.deepEqual(m.decisions, [
    { decision: 'CORRECT', count: 3 },
    { decision: 'INCORRECT', count: 2 },
    { decision: null, count: 1 },
  ]);
  assert.deepEqual(m.customReward, { execution_match: 0.5, valid_sql: 5 / 6 });

  const text = metricsTable(m, false);
  assert.doesNotMatch(text, /Judge|Decision Alignment/);
  assert.match(text, /Decisions\s+6\s+3 CORRECT, 2 INCORRECT, 1 none/);
  assert.match(text, /Reward: execution_match\s+0\.500/);
  assert.match(text, /Reward: valid_sql\s+0\.833/);

  // The same lab, once its reward module asked the judge: the judge's scores are shown for the rollouts that carry them.
  const asked = computeMetrics([...rollouts.slice(0, 5), sql('CORRECT', 1, { criteria: { a: 0.25, b: 0.75 } })], CUSTOM_ONLY);
  assert.equal(asked.shape.judge, true);
  assert.deepEqual(asked.judge, { a: 0.25, b: 0.75 });
});

test('alignment reads YES / NO decisions as GO / NO-GO, and only applies to labelled tasks', () => {
  const yesNo = computeMetrics(
    [rollout({ decision: 'yes', expectedDecision: 'yes' }), rollout({ decision: 'No', expectedDecision: 'yes' }), rollout({ decision: 'no', expectedDecision: 'no' })],
    JUDGED,
  );
  assert.equal(yesNo.shape.alignment, true);
  assert.deepEqual([yesNo.alignedCount, yesNo.alignmentDenominator], [2, 3]);
  assert.deepEqual(yesNo.decisions, [
    { decision: 'NO-GO', count: 2 },
    { decision: 'GO', count: 1 },
  ]);
  const unlabelled = computeMetrics([rollout({ decision: 'GO', expectedDecision: null })], JUDGED);
  assert.equal(unlabelled.shape.alignment, false);
  assert.equal(unlabelled.decisionAlignment, null);
  assert.deepEqual(unlabelled.decisions, [{ decision: 'GO', count: 1 }]);
});

test('empty input gives empty figures, not NaN', () => {
  const m = computeMetrics([], JUDGED);
  assert.equal(m.executionSuccessRate, 0);
  assert.equal(m.averageFinalReward, null);
  assert.equal(m.decisionAlignment, null);
  assert.equal(m.judge.a, null);
  assert.match(metricsTable(m, true), /Execution Success Rate\s+n\/a\s+0\/0 rollouts/);
});
