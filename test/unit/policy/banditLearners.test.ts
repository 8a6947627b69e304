import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BIAS_INDEX, hashSlot, hypothesisFeatures, stableHash32, textTokens } from '../../../src/core/policy/features';
import { LinUcb } from '../../../src/core/policy/linucb';
import { LogisticBandit } from '../../../src/core/policy/logistic';
import { learnerFromJSON } from '../../../src/core/policy/learners';
import { playSynthetic } from '../../../src/core/train/bandit/synthetic';
import { seededRandom } from '../../../src/core/data/seededRandom';

const norm = (v: Float64Array, skip: number[]): number => Math.sqrt([...v].reduce((s, x, i) => (skip.includes(i) ? s : s + x * x), 0));

test('feature hashing is stable across runs and machines: pinned hash values and slots', () => {
  // Pinned: a change here silently breaks every saved policy.
  assert.equal(stableHash32('w:kinase'), 2923153555);
  assert.equal(stableHash32('b:kinase inhibitor'), 1137234561);
  assert.equal(stableHash32('agent:Geneticist'), 3071873605);
  assert.equal(stableHash32('é'), 2387039943, 'non-ASCII text hashes its UTF-8 bytes');
  assert.deepEqual(hashSlot('w:kinase', 64), { index: 48, sign: -1 });
  assert.deepEqual(textTokens('Kinase-inhibitor, dosing!'), ['w:kinase', 'w:inhibitor', 'w:dosing', 'b:kinase inhibitor', 'b:inhibitor dosing']);
});

test('hypothesis features: text part L2-normalised, bias 1, agent one-hot 1, sorted distinct slots, case-insensitive', () => {
  const dim = 256;
  const x = hypothesisFeatures('Kinase inhibitor dosing lowers tau in older adults', 'Geneticist', dim);
  assert.equal(x.dim, dim);
  assert.equal(x.index.length, x.value.length);
  for (let i = 1; i < x.index.length; i++) assert.ok(x.index[i]! > x.index[i - 1]!, 'sorted, distinct');
  const dense = new Float64Array(dim);
  x.index.forEach((k, i) => (dense[k] = x.value[i]!));
  assert.equal(dense[BIAS_INDEX], 1);
  const agentSlot = hashSlot('agent:Geneticist', dim).index;
  const textOnly = hypothesisFeatures('Kinase inhibitor dosing lowers tau in older adults', null, dim);
  const textDense = new Float64Array(dim);
  textOnly.index.forEach((k, i) => (textDense[k] = textOnly.value[i]!));
  assert.ok(Math.abs(norm(textDense, [BIAS_INDEX]) - 1) < 1e-12, 'text features have unit norm');
  assert.ok(Math.abs(dense[agentSlot]! - textDense[agentSlot]! - 1) < 1e-12, 'the agent adds exactly 1 on its slot');
  assert.deepEqual(hypothesisFeatures('KINASE Inhibitor', 'A', dim), hypothesisFeatures('kinase inhibitor', 'A', dim));
  const empty = hypothesisFeatures('', null, dim);
  assert.deepEqual([...empty.index], [BIAS_INDEX], 'an empty text is just the bias');
  assert.throws(() => hypothesisFeatures('x', null, 8), /at least 16/);
});

test('LinUCB on a synthetic problem with a known best arm: regret at 5,000 rounds < 0.3 × random, sub-linear growth', () => {
  const rounds = 5000;
  const random = playSynthetic(null, { rounds, seed: 11 });
  const lin = playSynthetic(new LinUcb(128, 1), { rounds, seed: 11 });
  const at = (r: { cumulative: Float64Array }, n: number): number => r.cumulative[n - 1]!;
  assert.ok(at(random, rounds) > 500, `the random policy loses a lot (regret ${at(random, rounds)})`);
  assert.ok(at(lin, rounds) < 0.3 * at(random, rounds), `LinUCB regret ${at(lin, rounds)} vs random ${at(random, rounds)}`);
  const firstHalf = at(lin, rounds / 2);
  const secondHalf = at(lin, rounds) - firstHalf;
  assert.ok(secondHalf < firstHalf, `second half's regret ${secondHalf} is below the first half's ${firstHalf}`);
  // Random's regret grows linearly: its halves are about equal.
  const rHalf = at(random, rounds / 2);
  assert.ok(Math.abs(at(random, rounds) - 2 * rHalf) < 0.15 * at(random, rounds));
  assert.ok(lin.bestChosen > 0.75 * rounds, `LinUCB picks the best offered text in most rounds (${lin.bestChosen}; random: ${random.bestChosen})`);
});

test('logistic bandit weighted by reward learns the best arm too (weaker bound: < 0.5 × random)', () => {
  const rounds = 5000;
  const random = playSynthetic(null, { rounds, seed: 12 });
  const logit = playSynthetic(new LogisticBandit(128, 0.1), { rounds, seed: 12, epsilon: 0.05 });
  const r = random.cumulative[rounds - 1]!;
  const l = logit.cumulative[rounds - 1]!;
  assert.ok(l < 0.5 * r, `logistic regret ${l} vs random ${r}`);
  const half = logit.cumulative[rounds / 2 - 1]!;
  assert.ok(l - half < half, 'its second half costs less than its first');
});

test('learners round-trip through JSON exactly; ε-greedy explores at about rate ε and exploits otherwise', () => {
  const dim = 64;
  const xs = ['kinase inhibitor', 'sleep loss', 'gut flora shift'].map((t, i) => hypothesisFeatures(t, `A${i}`, dim));
  for (const learner of [new LinUcb(dim, 0.5), new LogisticBandit(dim, 0.2)]) {
    for (let i = 0; i < 30; i++) learner.update(xs[i % 3]!, i % 3 === 1 ? 1 : 0.1);
    const back = learnerFromJSON(JSON.parse(JSON.stringify(learner.toJSON())));
    assert.equal(back.algorithm, learner.algorithm);
    assert.equal(back.updates, 30);
    assert.deepEqual(back.scores(xs), learner.scores(xs));
    assert.deepEqual(back.estimates(xs), learner.estimates(xs));
    assert.equal(learner.choose(xs, seededRandom(1), 0).index, 1, 'exploits the rewarded candidate');
    const rng = seededRandom(5);
    let explored = 0;
    for (let i = 0; i < 2000; i++) {
      const c = learner.choose(xs, rng, 0.2);
      if (c.explored) explored++;
      else assert.equal(c.index, 1);
    }
    assert.ok(explored > 320 && explored < 480, `explored ${explored} of 2000 at ε = 0.2`);
  }
  assert.throws(() => learnerFromJSON({ algorithm: 'linucb', dim: 4, updates: 0, alpha: 1, theta: 'AAAA', ainv: '' }), /learner.theta has/);
  assert.throws(() => learnerFromJSON({ algorithm: 'ucb9', dim: 4, updates: 0 }), /unknown learner algorithm/);
  assert.throws(() => new LinUcb(64, 1).update(hypothesisFeatures('x', null, 32), 1), /expects 64/);
});
