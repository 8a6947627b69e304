import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RewardSchema } from '../../../src/core/config/schema';
import { judgedScores, rolloutScore } from '../../../src/core/reward/rolloutScore';

const reward = (over: Record<string, unknown> = {}) =>
  RewardSchema.parse({
    criteria: { a: { weight: 3, description: 'a' }, b: { weight: 1, description: 'b' } },
    judgeFailurePenalty: 0.2,
    noOutputReward: 0.05,
    customFailurePenalty: 0.01,
    customWeight: 0.25,
    ...over,
  });

test('a judge verdict is weighted by the criteria; a failed one gives every criterion the penalty', () => {
  const r = reward();
  assert.deepEqual(judgedScores({ scores: { a: 1, b: 0 }, failed: false }, r), { scores: { a: 1, b: 0 }, failed: false, reward: 0.75 });
  const failed = judgedScores({ scores: {}, failed: true }, r);
  assert.deepEqual(failed.scores, { a: 0.2, b: 0.2 });
  assert.equal(failed.failed, true);
  assert.ok(Math.abs(failed.reward - 0.2) < 1e-12);
});

test('without a custom reward: the judge scores an output, noOutputReward one without', () => {
  const r = reward();
  const judge = judgedScores({ scores: { a: 0.5, b: 1 }, failed: false }, r);
  assert.deepEqual(rolloutScore(r, { hasOutput: true, judge, custom: null }), {
    finalReward: 0.625,
    criteria: { a: 0.5, b: 1 },
    judgeFailed: false,
    rewardBreakdown: null,
    source: 'judge',
    customError: null,
  });
  assert.deepEqual(rolloutScore(r, { hasOutput: false, judge: null, custom: null }), {
    finalReward: 0.05,
    criteria: null,
    judgeFailed: false,
    rewardBreakdown: null,
    source: 'no-output',
    customError: null,
  });
  const failed = rolloutScore(r, { hasOutput: true, judge: judgedScores({ scores: {}, failed: true }, r), custom: null });
  assert.equal(failed.judgeFailed, true);
  assert.deepEqual(failed.criteria, { a: 0.2, b: 0.2 });
  assert.throws(() => rolloutScore(r, { hasOutput: true, judge: null, custom: null }), /scored by the judge/);
});

test('mode "replace": the custom reward is the final reward, the judge only counts when the module asked for it', () => {
  const r = reward({ module: 'reward.ts', mode: 'replace' });
  const custom = { ok: true as const, reward: 0.9, breakdown: { exact: 1 } };
  const s = rolloutScore(r, { hasOutput: true, judge: null, custom });
  assert.equal(s.finalReward, 0.9);
  assert.deepEqual(s.rewardBreakdown, { exact: 1 });
  assert.notEqual(s.rewardBreakdown, custom.breakdown, 'a copy: the record never shares the module result');
  assert.equal(s.criteria, null);
  assert.equal(s.source, 'custom');
  const asked = rolloutScore(r, { hasOutput: true, judge: judgedScores({ scores: { a: 1, b: 1 }, failed: false }, r), custom });
  assert.equal(asked.finalReward, 0.9);
  assert.deepEqual(asked.criteria, { a: 1, b: 1 });
  // Without an output the custom reward still decides.
  assert.equal(rolloutScore(r, { hasOutput: false, judge: null, custom }).finalReward, 0.9);
});

test('mode "combine" mixes judge and custom by customWeight; a failed custom reward gives its penalty', () => {
  const r = reward({ module: 'reward.ts', mode: 'combine' });
  const judge = judgedScores({ scores: { a: 1, b: 1 }, failed: false }, r);
  const s = rolloutScore(r, { hasOutput: true, judge, custom: { ok: true, reward: 0, breakdown: {} } });
  assert.equal(s.finalReward, 0.75);
  assert.equal(s.source, 'combine');
  const noOutput = rolloutScore(r, { hasOutput: false, judge: null, custom: { ok: true, reward: 1, breakdown: {} } });
  assert.ok(Math.abs(noOutput.finalReward - (0.75 * 0.05 + 0.25)) < 1e-12);
  const broken = rolloutScore(r, { hasOutput: true, judge, custom: { ok: false, error: 'reward.ts threw' } });
  assert.deepEqual(broken, { finalReward: 0.01, criteria: { a: 1, b: 1 }, judgeFailed: false, rewardBreakdown: null, source: 'combine', customError: 'reward.ts threw' });
});
