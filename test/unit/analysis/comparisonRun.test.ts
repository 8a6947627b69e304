import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { compareRuns } from '../../../src/core/analysis/comparison';
import { listComparisons } from '../../../src/core/analysis/comparisonList';
import { comparisonOfRun } from '../../../src/core/analysis/comparisonRunParams';
import { comparisonTask } from '../../../src/core/analysis/comparisonTask';
import { protocolInJudgeMessage } from '../../../src/core/analysis/judgeInputProtocol';
import { parseVariantSpec } from '../../../src/core/config/variantSpec';
import { runComparison } from '../../../src/core/lab/runComparison';
import { Attr } from '../../../src/core/trace/span';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

test('runComparison runs both variants on the same tasks with the same seeds, and records the pair', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-cmprun-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'val', limit: 3, seed: 42 });
    const alt = join(dir, 'supervisor-v2.md');
    writeFileSync(alt, 'You are the Supervisor. Ask every specialist for a negative control and a sample size.\n');

    // The same configuration on both sides: same seeds, so every task scores the same.
    const same = await runComparison(lab, { a: parseVariantSpec('base'), b: parseVariantSpec('label:base again'), tasks, allTasks: ds.tasks, samples: 2, concurrency: 3, seed: 42 });
    assert.equal(same.cancelled, false);
    const r0 = compareRuns(lab.store, same.runA, same.runB!, Object.keys(lab.loaded.config.reward.criteria));
    assert.equal(r0.id, same.id);
    assert.equal(r0.aggregate.pairs, 3);
    for (const t of r0.tasks) {
      assert.equal(t.samplesA, 2);
      assert.equal(t.difference, 0, `task ${t.taskId}: same config and seeds give the same reward`);
    }
    assert.deepEqual([r0.aggregate.wins, r0.aggregate.ties, r0.aggregate.losses], [0, 3, 0]);
    assert.equal(r0.aggregate.wilcoxon, null, 'no non-zero difference to rank');
    assert.equal(r0.aggregate.pairedT!.pValue, 1);

    const progress: string[] = [];
    const run = await runComparison(lab, {
      a: parseVariantSpec('base'),
      b: parseVariantSpec(`prompt:Supervisor=@${alt},label:careful supervisor`),
      tasks,
      allTasks: ds.tasks,
      samples: 1,
      concurrency: 2,
      seed: 42,
      params: { split: 'val', limit: 3 },
      onProgress: (side, p) => progress.push(`${side}${p.done}`),
    });
    assert.deepEqual(progress, ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'], 'side A runs to the end, then side B');
    const runA = lab.store.getRun(run.runA)!;
    const runB = lab.store.getRun(run.runB!)!;
    assert.deepEqual(comparisonOfRun(runA), { id: run.id, side: 'a', label: 'base', variant: { label: 'base' } });
    assert.equal(comparisonOfRun(runB)!.label, 'careful supervisor');
    assert.equal(runB.params.split, 'val');
    assert.equal(runB.params.seed, 42);
    const ids = (runId: string): string[] => lab.store.listRollouts({ runId }).rollouts.map((r) => r.taskId).sort();
    assert.deepEqual(ids(run.runA), tasks.map((t) => t.id).sort());
    assert.deepEqual(ids(run.runB!), ids(run.runA), 'the same tasks on both sides');
    const supervisorVersion = (runId: string): Set<string | null> =>
      new Set(lab.store.listRollouts({ runId }).rollouts.map((r) => r.agents.find((a) => a.agent === 'Supervisor')?.promptVersion ?? null));
    const [vA] = [...supervisorVersion(run.runA)];
    const [vB] = [...supervisorVersion(run.runB!)];
    assert.notEqual(vA, vB);
    assert.match(lab.store.getPromptVersion(vB!)!.text, /negative control/);

    const listed = listComparisons(lab.store);
    assert.deepEqual(listed.slice(0, 2).map((c) => [c.id, c.status]), [[run.id, 'done'], [same.id, 'done']]);

    // The final output on the root is exactly what the judge was shown.
    const detail = comparisonTask(lab.store, { runA: run.runA, runB: run.runB! }, tasks[0]!.id);
    for (const s of [...detail.a.samples, ...detail.b.samples]) {
      assert.equal(s.protocolSource, 'output');
      assert.ok(s.protocol && s.protocol.length > 20);
      const spans = lab.store.getSpans(s.rolloutId);
      const judge = spans.find((x) => x.kind === 'reward' && x.attributes[Attr.rewardKind] === 'judge')!;
      const call = spans.find((x) => x.kind === 'llm' && x.parentSpanId === judge.spanId)!;
      const user = (JSON.parse(String(call.attributes[Attr.inputMessages])) as Array<{ role: string; content: string }>).find((m) => m.role === 'user')!;
      assert.equal(protocolInJudgeMessage(user.content), s.protocol);
      assert.ok(Object.keys(s.criteria ?? {}).length === 6);
    }
    assert.equal(detail.goal, tasks[0]!.goal);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('runComparison: a bad variant B fails before side A runs; cancelling during A leaves B unstarted', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-cmprun-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const lab = await Lab.open({ workspace: dir, env: {} });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'val', limit: 4, seed: 1 });
    await assert.rejects(
      runComparison(lab, { a: parseVariantSpec('base'), b: parseVariantSpec('model:ProtocolDesigner=trained'), tasks, samples: 1, concurrency: 1, seed: 1 }),
      /model "trained" for ProtocolDesigner is not under "models"/,
    );
    assert.equal(lab.store.listRuns().length, 0, 'nothing ran');
    await assert.rejects(runComparison(lab, { a: parseVariantSpec('base'), b: parseVariantSpec('base'), tasks: [], samples: 1, concurrency: 1, seed: 1 }), /task selection is empty/);

    const controller = new AbortController();
    const r = await runComparison(lab, {
      a: parseVariantSpec('base'),
      b: parseVariantSpec('label:other'),
      tasks,
      samples: 1,
      concurrency: 1,
      seed: 1,
      signal: controller.signal,
      onProgress: (side, p) => {
        if (side === 'a' && p.done === 1) controller.abort();
      },
    });
    assert.equal(r.cancelled, true);
    assert.equal(r.runB, null);
    assert.equal(lab.store.listRuns().length, 1);
    assert.equal(listComparisons(lab.store)[0]!.status, 'cancelled');
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
