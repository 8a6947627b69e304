import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RewardSchema, type RewardConfig } from '../../../src/core/config/schema';
import { DIFFERENT_REWARDS, compareToPrevious, statsForRollouts } from '../../../src/core/analysis/promptStats';
import { rewardDefinitionKey, rewardUnder } from '../../../src/core/reward/rewardDefinition';
import { weightedReward } from '../../../src/core/reward/weighted';
import type { RolloutRecord } from '../../../src/core/store/types';
import { versionLensTitle, versionReportMarkdown } from '../../../src/extension/view/promptLens';
import { makeRollout } from '../store/helpers/storeFixtures';

const NOW = Date.UTC(2026, 11, 1);
const reward = (weights: Record<string, number>, over: Partial<RewardConfig> = {}): RewardConfig =>
  RewardSchema.parse({ criteria: Object.fromEntries(Object.entries(weights).map(([k, weight]) => [k, { weight, description: k }])), ...over });

// The same judge scores in both versions (the prompt change did nothing); only the weights changed between them.
const SCORES = [0.2, 0.3, 0.25, 0.35, 0.3, 0.2, 0.3, 0.25].map((novelty, i) => ({ novelty, clarity: 0.9 - (i % 3) * 0.05 }));
const OLD = reward({ novelty: 0, clarity: 1 });
const NEW = reward({ novelty: 1, clarity: 0 });

function scoredUnder(r: RewardConfig, startTime: number): RolloutRecord[] {
  return SCORES.map((criteria, i) => ({
    ...makeRollout({ runId: 'run', taskId: `t${i}`, startTime: startTime + i, finalReward: weightedReward(criteria, r.criteria) }),
    criteria,
    rewardDefinition: rewardDefinitionKey(r),
  }));
}

test('prompt versions scored under different weights are compared under the current ones, never as stored', () => {
  const v1 = scoredUnder(OLD, 1_000);
  const v2 = scoredUnder(NEW, 2_000);

  // As stored, the weights alone make v2 look far worse (the lens said "Δ -0.6, significant"); they are not compared as stored.
  const asStored = [statsForRollouts('Writer', 'v1', v1), statsForRollouts('Writer', 'v2', v2)];
  assert.ok(asStored[0]!.meanReward! - asStored[1]!.meanReward! > 0.5, 'the premise: stored rewards differ by the weights alone');
  assert.equal(compareToPrevious(asStored)[1]!.notComparable, DIFFERENT_REWARDS, 'their recorded reward definitions differ');

  // Under the current weights both are re-scored from their judge scores: identical scores, no difference.
  const s1 = statsForRollouts('Writer', 'v1', v1, { reward: NEW });
  const s2 = statsForRollouts('Writer', 'v2', v2, { reward: NEW });
  assert.deepEqual([s1.rewardBasis, s1.rescored, s2.rewardBasis, s2.rescored], ['current', 8, 'current', 0]);
  assert.deepEqual(s1.rewards, s2.rewards);
  const [, cmp] = compareToPrevious([s1, s2]);
  assert.deepEqual([cmp!.delta, cmp!.significant, cmp!.notComparable], [0, false, null]);
  const title = versionLensTitle(s1, null, NOW);
  assert.match(title, /reward 0\.27 ± 0\.\d\d \(95% CI\) under the current weights/);
  assert.match(versionReportMarkdown(s1, null, false, NOW), /8 rewards re-scored on the fly under the current weights/);
});

test('rewards that cannot be re-scored (a custom reward) are not compared across reward definitions, and the lens says so', () => {
  const oldCustom = reward({ novelty: 0, clarity: 1 }, { module: 'reward.ts', mode: 'combine', customWeight: 0.5 });
  const newCustom = reward({ novelty: 1, clarity: 0 }, { module: 'reward.ts', mode: 'combine', customWeight: 0.5 });
  assert.equal(rewardUnder(scoredUnder(oldCustom, 0)[0]!, newCustom), null, 'the custom part cannot be recomputed from what was stored');
  const s1 = statsForRollouts('Writer', 'v1', scoredUnder(oldCustom, 1_000), { reward: newCustom });
  const s2 = statsForRollouts('Writer', 'v2', scoredUnder(newCustom, 2_000), { reward: newCustom });
  assert.deepEqual([s1.rewardBasis, s2.rewardBasis], ['stored', 'stored']);
  const [, cmp] = compareToPrevious([s1, s2]);
  assert.deepEqual([cmp!.delta, cmp!.pValue, cmp!.significant, cmp!.notComparable], [null, null, false, DIFFERENT_REWARDS]);
  const title = versionLensTitle(s2, cmp!, NOW);
  assert.match(title, /vs previous: scored under different weights — re-score to compare/);
  assert.doesNotMatch(title, /significant|Δ/);
  assert.match(versionReportMarkdown(s2, cmp!, false, NOW), /Against previous version `v1`: scored under different weights — re-score to compare/);

  // Under one definition they compare as before.
  const same = compareToPrevious([statsForRollouts('Writer', 'v1', scoredUnder(newCustom, 1_000), { reward: newCustom }), s2]);
  assert.equal(same[1]!.notComparable, null);
  assert.equal(same[1]!.delta, 0);
});

test('the reward definition key ignores the scale of the weights and follows everything that changes a reward', () => {
  assert.equal(rewardDefinitionKey(reward({ a: 1, b: 1 })), rewardDefinitionKey(reward({ a: 3, b: 3 })));
  assert.notEqual(rewardDefinitionKey(reward({ a: 1, b: 1 })), rewardDefinitionKey(reward({ a: 1, b: 2 })));
  assert.notEqual(rewardDefinitionKey(reward({ a: 1 })), rewardDefinitionKey(reward({ a: 1 }, { judgeFailurePenalty: 0.3 })));
  assert.notEqual(rewardDefinitionKey(reward({ a: 1 })), rewardDefinitionKey(reward({ a: 1 }, { module: 'r.ts' })));
  const failedJudge = { ...makeRollout({ runId: 'r', finalReward: 0.1 }), judgeFailed: true };
  assert.equal(rewardUnder(failedJudge, reward({ a: 1 }, { judgeFailurePenalty: 0.3 })), 0.3, 'a failed judge gets the current penalty');
  const noOutput = { ...makeRollout({ runId: 'r', finalReward: 0, status: 'failed', failure: 'no_output' }), criteria: null };
  assert.equal(rewardUnder(noOutput, reward({ a: 1 }, { noOutputReward: 0.05 })), 0.05);
  assert.equal(rewardUnder({ ...makeRollout({ runId: 'r' }), criteria: { b: 0.5 } }, reward({ a: 1 })), null, 'a criterion it was never scored on');
});
