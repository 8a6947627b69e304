import { test } from 'node:test';
import assert from 'node:assert/strict';
import { banditLearning } from '../../../bench/banditLearning';

/*
 * The short version of the learning.bandit benchmark: on the simulated
 * research lab, a Supervisor policy trained from 80 train-split rollouts,
 * deciding on 60 validation tasks, beats the Supervisor's own (position-biased)
 * choice on the same tasks with the same seeds, well clear of noise. The
 * rollouts are deterministic for fixed seeds; the margin is a paired test,
 * never a time.
 */
test('a bandit policy trained on simulated train rollouts beats bandit off on validation (paired, p < 0.01)', async () => {
  const r = await banditLearning({ trainTasks: 80, valTasks: 60, seed: 5 });
  assert.equal(r.trainRecords, 80, 'every train rollout gave the policy a Supervisor decision');
  assert.equal(r.taskIds.length, 60, 'every validation task has a reward under both modes');
  const detail = `off ${r.meanOff.toFixed(3)} → decide ${r.meanDecide.toFixed(3)} (+${r.delta.toFixed(3)} ± ${r.se.toFixed(3)} SE, p = ${r.pValue.toPrecision(2)})`;
  assert.ok(r.delta >= 0.02, `the policy should gain at least 0.02 reward: ${detail}`);
  assert.ok(r.pValue < 0.01, `the gain should be well clear of noise: ${detail}`);
});
