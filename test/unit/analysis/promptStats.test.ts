import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { bestVersion, compareToPrevious, promptVersionStats, statsForRollouts } from '../../../src/core/analysis/promptStats';
import { DEFAULT_CRITERIA } from '../../../src/core/config/schema';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

test('two prompt versions of Supervisor from real rollouts: stats per version, delta and Welch p-value against the previous', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-promptstats-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 4, seed: 3 });
    const first = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 2, params: {}, seed: 3 });
    assert.equal(first.rollouts.filter((r) => r.status === 'succeeded').length, 4);

    const promptFile = join(dir, '.rollout-lab', 'prompts', 'Supervisor.md');
    const oldText = readFileSync(promptFile, 'utf8');
    appendFileSync(promptFile, '\nAlways ask for a power calculation before approving a protocol.\n');
    const second = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 2, params: {}, seed: 4 });
    assert.equal(second.rollouts.filter((r) => r.status === 'succeeded').length, 4);

    const stats = promptVersionStats(lab.store, 'Supervisor');
    assert.equal(stats.length, 2, 'two versions of the Supervisor prompt');
    const [v1, v2] = stats as [(typeof stats)[0], (typeof stats)[0]];
    assert.notEqual(v1.version, v2.version);
    assert.equal(v1.text, oldText);
    assert.match(v2.text!, /power calculation/);
    assert.ok(v1.firstSeen <= v2.firstSeen);
    assert.equal(first.rollouts[0]!.agents.find((a) => a.agent === 'Supervisor')!.promptVersion, v1.version);
    assert.equal(second.rollouts[0]!.agents.find((a) => a.agent === 'Supervisor')!.promptVersion, v2.version);

    for (const [s, run] of [[v1, first], [v2, second]] as const) {
      assert.equal(s.rollouts, 4);
      assert.equal(s.rewards.length, 4);
      const rewards = run.rollouts.map((r) => r.finalReward!);
      const expectedMean = rewards.reduce((a, b) => a + b, 0) / 4;
      assert.ok(Math.abs(s.meanReward! - expectedMean) < 1e-12);
      assert.ok(s.ci && s.ci[0] <= s.meanReward! && s.meanReward! <= s.ci[1]);
      assert.deepEqual(Object.keys(s.criteria).sort(), Object.keys(DEFAULT_CRITERIA).sort());
      for (const v of Object.values(s.criteria)) assert.ok(v === null || (v >= 0 && v <= 1));
      assert.ok(s.decisionAlignment === null || (s.decisionAlignment >= 0 && s.decisionAlignment <= 100));
      assert.equal([...s.sparkline].length, 4);
      assert.match(s.sparkline, /^[▁▂▃▄▅▆▇█]{4}$/);
      assert.equal(s.lastRun, Math.max(...run.rollouts.map((r) => r.endTime!)));
    }
    assert.ok(v1.lastRun! <= v2.lastRun!);

    const cmp = compareToPrevious(stats);
    assert.equal(cmp.length, 2);
    assert.deepEqual(cmp[0], { version: v1.version, previous: null, delta: null, pValue: null, significant: false, notComparable: null });
    assert.equal(cmp[1]!.previous, v1.version);
    assert.ok(Math.abs(cmp[1]!.delta! - (v2.meanReward! - v1.meanReward!)) < 1e-12);
    assert.ok(cmp[1]!.pValue !== null && cmp[1]!.pValue >= 0 && cmp[1]!.pValue <= 1);
    assert.equal(cmp[1]!.significant, cmp[1]!.pValue! < 0.05);

    const best = bestVersion(stats);
    assert.equal(best!.version, v1.meanReward! >= v2.meanReward! ? v1.version : v2.version);
    assert.equal(bestVersion(stats, 5), null, 'no version has 5 rollouts');

    // Other agents' prompts did not change: one version each, with all eight rollouts.
    const pi = promptVersionStats(lab.store, 'PrincipalInvestigator');
    assert.equal(pi.length, 1);
    assert.equal(pi[0]!.rollouts, 8);
    assert.equal(compareToPrevious(pi)[0]!.delta, null);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('stats for hand-made rollouts: alignment counts only yes/no tasks, judge-failed rollouts stay out of criterion means', () => {
  const base = {
    runId: 'r', split: 'val' as const, sample: 0, status: 'succeeded' as const, turns: 1, error: null, simulated: true,
    spanCount: 1, agents: [], judgeFailed: false,
  };
  const rs = [
    { ...base, id: 'a', taskId: 't1', finalReward: 0.8, criteria: { x: 0.8 }, decision: 'GO', expectedDecision: 'yes', startTime: 30, endTime: 40 },
    { ...base, id: 'b', taskId: 't2', finalReward: 0.4, criteria: { x: 0.4 }, decision: 'GO', expectedDecision: 'no', startTime: 10, endTime: 15 },
    { ...base, id: 'c', taskId: 't3', finalReward: 0.1, criteria: { x: 0.1 }, decision: 'NO-GO', expectedDecision: 'maybe', startTime: 20, endTime: 50, judgeFailed: true },
  ];
  const s = statsForRollouts('Supervisor', 'abc', rs);
  assert.equal(s.decisionAlignment, 50);
  assert.ok(Math.abs(s.criteria['x']! - 0.6) < 1e-12);
  assert.deepEqual(s.rewards, [0.4, 0.1, 0.8], 'oldest first');
  assert.equal(s.lastRun, 50);
  assert.equal(s.firstSeen, 10);
  assert.equal(s.sparkline, '▄▁▇');
  // A rollout whose graph gave no output counts with its reward; one that threw has none and is left out.
  const withFailures = statsForRollouts('Supervisor', 'abc', [
    ...rs,
    { ...base, status: 'failed' as const, failure: 'no_output' as const, id: 'd', taskId: 't4', finalReward: 0, criteria: null, decision: null, expectedDecision: 'yes', startTime: 60, endTime: 70 },
    { ...base, status: 'failed' as const, failure: 'timeout' as const, id: 'e', taskId: 't5', finalReward: null, criteria: null, decision: null, expectedDecision: 'yes', startTime: 80, endTime: 90 },
  ]);
  assert.equal(withFailures.rollouts, 4);
  assert.deepEqual(withFailures.rewards, [0.4, 0.1, 0.8, 0]);
  assert.ok(Math.abs(withFailures.decisionAlignment! - 100 / 3) < 1e-9, 'no decision on a yes task: not aligned');
  assert.ok(withFailures.ci![0] >= 0 && withFailures.ci![1] <= 1, `inside 0..1: ${withFailures.ci}`);
  // A graph whose decisions are not GO / NO-GO has no alignment to show.
  assert.equal(statsForRollouts('Writer', 'x', [{ ...rs[0]!, decision: 'CORRECT' }]).decisionAlignment, null);
  const none = statsForRollouts('Supervisor', 'def', []);
  assert.deepEqual([none.rollouts, none.meanReward, none.ci, none.lastRun, none.sparkline, none.decisionAlignment], [0, null, null, null, '', null]);
  assert.equal(compareToPrevious([s, none])[1]!.pValue, null);
});
