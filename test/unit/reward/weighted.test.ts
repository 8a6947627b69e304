import { test } from 'node:test';
import assert from 'node:assert/strict';
import { weightedReward } from '../../../src/core/reward/weighted';
import { DEFAULT_CRITERIA } from '../../../src/core/config/schema';
import { decisionAlignment } from '../../../src/core/data/decisionAlignment';

test('weighted reward uses the reference weights', () => {
  const scores = { novelty: 0.8, feasibility: 0.7, impact: 0.9, clarity: 0.85, groundedness: 0.95, efficiency: 0.9 };
  // 0.1*0.8 + 0.2*0.7 + 0.3*0.9 + 0.15*0.85 + 0.2*0.95 + 0.05*0.9
  assert.ok(Math.abs(weightedReward(scores, DEFAULT_CRITERIA) - 0.8525) < 1e-9);
});

test('weights are normalised, missing scores count as zero and scores are clamped', () => {
  const criteria = { a: { weight: 2 }, b: { weight: 2 } };
  assert.equal(weightedReward({ a: 1, b: 0 }, criteria), 0.5);
  assert.equal(weightedReward({ a: 1 }, criteria), 0.5);
  assert.equal(weightedReward({ a: 7, b: -3 }, criteria), 0.5);
  assert.equal(weightedReward({ a: Number.NaN, b: 1 }, criteria), 0.5);
  assert.equal(weightedReward({}, {}), 0);
});

test('decision alignment: GO↔yes, NO-GO↔no, maybe apart', () => {
  assert.equal(decisionAlignment('GO', 'yes'), 'aligned');
  assert.equal(decisionAlignment('NO-GO', 'no'), 'aligned');
  assert.equal(decisionAlignment('no go', 'no'), 'aligned');
  assert.equal(decisionAlignment('GO', 'no'), 'misaligned');
  assert.equal(decisionAlignment('NO-GO', 'yes'), 'misaligned');
  assert.equal(decisionAlignment('GO', 'maybe'), 'maybe');
  assert.equal(decisionAlignment(null, 'yes'), 'unknown');
  assert.equal(decisionAlignment('GO', null), 'unknown');
  assert.equal(decisionAlignment('PERHAPS', 'yes'), 'unknown');
});
