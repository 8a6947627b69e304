import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { rewardSeries } from '../../../src/core/analysis/rewardSeries';
import { rolloutSeed, runRollouts } from '../../../src/core/rollout/runner';
import { computeMetrics } from '../../../src/core/analysis/metrics';
import { rewardSetupOf } from '../../../src/core/reward/rewardSetup';
import { startSimServer } from '../../../src/core/sim/simServer';
import { Attr } from '../../../src/core/trace/span';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

async function openLab(): Promise<{ lab: Lab; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-runner-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  return { lab: await Lab.open({ workspace: dir, env: {} }), dir };
}

test('rollout seeds differ by task and sample and repeat for the same inputs', () => {
  assert.equal(rolloutSeed(42, 't1', 0), rolloutSeed(42, 't1', 0));
  assert.notEqual(rolloutSeed(42, 't1', 0), rolloutSeed(42, 't1', 1));
  assert.notEqual(rolloutSeed(42, 't1', 0), rolloutSeed(43, 't1', 0));
  assert.ok(rolloutSeed(1, 'x', 3) >= 0 && rolloutSeed(1, 'x', 3) < 2 ** 31);
});

test('tasks × samples: a group per task, samples that differ, progress for each, records that match the spans', async () => {
  const { lab, dir } = await openLab();
  try {
    assert.equal(lab.simulated, true);
    assert.match(lab.simulationNotice()!, /SIMULATED/);
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 2, seed: 5 });
    const env = await lab.environment(ds.tasks);
    const progress: number[] = [];
    const r = await runRollouts(env, { tasks, samples: 3, concurrency: 3, params: {}, seed: 5, onProgress: (p) => progress.push(p.done) });
    assert.deepEqual(progress, [1, 2, 3, 4, 5, 6]);
    assert.equal(r.rollouts.length, 6);
    for (const t of tasks) {
      const group = r.rollouts.filter((x) => x.taskId === t.id);
      assert.deepEqual(group.map((x) => x.sample).sort(), [0, 1, 2]);
      const protocols = group.map((x) => {
        const pi = lab.store.getSpans(x.id).find((s) => s.kind === 'node' && s.name === 'PrincipalInvestigator');
        return String(pi?.attributes[Attr.output] ?? '');
      });
      assert.ok(new Set(protocols).size > 1, 'samples of one task are not identical');
    }
    for (const x of r.rollouts) {
      assert.equal(x.status, 'succeeded');
      const spans = lab.store.getSpans(x.id);
      assert.equal(x.spanCount, spans.length);
      const agents = new Map(x.agents.map((a) => [a.agent, a]));
      assert.equal(agents.get('PrincipalInvestigator')!.visits, 1);
      assert.equal(agents.get('Supervisor')!.promptVersion?.length, 12);
      const llmCalls = spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'HypothesisRefiner').length;
      assert.equal(agents.get('HypothesisRefiner')!.llmCalls, llmCalls);
      assert.ok(x.criteria && Object.keys(x.criteria).length === 6);
    }
    assert.equal(lab.store.listPromptVersions().length, 9, 'each agent prompt version is stored once');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('cancelling stops new rollouts, marks the ones in flight, and resume completes the run without redoing any', async () => {
  const { lab, dir } = await openLab();
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: 8, seed: 9 });
    const env = await lab.environment(ds.tasks);
    const controller = new AbortController();
    const first = await runRollouts(env, {
      tasks, samples: 1, concurrency: 2, params: { limit: 8 }, seed: 9, signal: controller.signal,
      onProgress: (p) => { if (p.done === 3) controller.abort(); },
    });
    assert.equal(first.cancelled, true);
    assert.ok(first.rollouts.length >= 3 && first.rollouts.length < 8, `${first.rollouts.length} finished`);
    assert.equal(lab.store.getRun(first.runId)!.status, 'cancelled');
    const cancelled = lab.store.listRollouts({ runId: first.runId, status: 'cancelled' }).rollouts;
    for (const c of cancelled) {
      assert.ok(lab.store.getSpans(c.id).some((s) => s.status === 'error'), 'a cancelled rollout keeps its spans, closed as errors');
      assert.deepEqual([c.failure, c.finalReward], ['cancelled', null]);
    }

    const second = await runRollouts(env, { tasks, samples: 1, concurrency: 2, params: { limit: 8 }, seed: 9, resumeRunId: first.runId });
    assert.equal(second.runId, first.runId);
    assert.equal(second.skipped, first.rollouts.filter((x) => x.status === 'succeeded').length);
    const done = second.rollouts.filter((x) => x.status === 'succeeded');
    assert.equal(done.length, 8);
    assert.equal(new Set(done.map((x) => x.taskId)).size, 8);
    assert.equal(lab.store.getRun(first.runId)!.status, 'done');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a graph that finishes without a final output fails as "no output", is still scored, and counts against the success rate', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-runner-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const cfgFile = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
  cfg.reward = { ...cfg.reward, noOutputReward: 0.05 };
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
  const probe = await Lab.open({ workspace: dir, env: {} });
  const ds = await probe.loadDataset();
  const tasks = probe.selectTasks(ds, { split: 'val', limit: 3, seed: 2 });
  await probe.close();
  // On one task the Principal Investigator answers prose instead of its JSON: the graph ends with no final protocol.
  const server = await startSimServer({
    faults: ({ agent, request }) => (agent === 'PrincipalInvestigator' && JSON.stringify(request.messages).includes(tasks[0]!.goal) ? { kind: 'not-json' } : null),
  });
  const lab = await Lab.open({ workspace: dir, env: {}, baseUrl: server.url });
  try {
    const run = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 2, params: {}, seed: 2 });
    const empty = run.rollouts.find((r) => r.taskId === tasks[0]!.id)!;
    assert.equal(empty.status, 'failed');
    assert.equal(empty.failure, 'no_output');
    assert.equal(empty.finalReward, 0.05, 'scored with reward.noOutputReward');
    assert.equal(empty.criteria, null, 'nothing for the judge to score');
    assert.match(empty.error!, /^the graph finished without a final output \(PrincipalInvestigator: /);
    assert.equal(empty.truncatedAnswers, 0);
    const spans = lab.store.getSpans(empty.id);
    const root = spans.find((s) => s.kind === 'rollout')!;
    assert.equal(root.status, 'error');
    assert.equal(root.attributes[Attr.failure], 'no_output');
    assert.deepEqual(
      spans.filter((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'final').map((s) => [s.name, s.attributes[Attr.rewardValue]]),
      [
        ['no-output', 0.05],
        ['final', 0.05],
      ],
    );
    const others = run.rollouts.filter((r) => r !== empty);
    for (const r of others) assert.deepEqual([r.status, r.failure], ['succeeded', null]);

    const m = computeMetrics(run.rollouts, rewardSetupOf(lab.loaded.config));
    assert.ok(Math.abs(m.executionSuccessRate - 200 / 3) < 1e-9, 'not 100 %');
    const mean = (0.05 + others[0]!.finalReward! + others[1]!.finalReward!) / 3;
    assert.ok(Math.abs(m.averageFinalReward! - mean) < 1e-12, 'its reward is in the mean');
    assert.ok(lab.store.finishedKeys(run.runId).has(`${empty.taskId}#0`), 'resume does not redo it: it ran to its end');
    assert.deepEqual(
      rewardSeries(lab.store, [], { runId: run.runId }).points.map((p) => p.rolloutId).sort(),
      run.rollouts.map((r) => r.id).sort(),
      'the reward curve has it too',
    );
  } finally {
    await lab.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
