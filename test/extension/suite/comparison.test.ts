import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, waitFor } from './helpers';

/** What Compare Configurations returns to a caller. */
interface CompareResultLike {
  id: string;
  runA: string;
  runB: string | null;
  cancelled: boolean;
  simulated: boolean;
  pairs: number | null;
}

interface ComparisonHostLike {
  handle(method: string, params: unknown): Promise<unknown>;
  notified: Array<{ type: string; params: unknown }>;
}

interface ComparisonLike {
  id: string | null;
  a: { runId: string; label: string };
  b: { runId: string; label: string };
  tasks: Array<{ taskId: string; rewardA: number; rewardB: number; difference: number; rolloutIdsA: string[]; rolloutIdsB: string[] }>;
  aggregate: { pairs: number; meanDifference: number | null; wins: number; ties: number; losses: number };
}

interface TaskDetailLike {
  taskId: string;
  a: { label: string; samples: Array<{ rolloutId: string; protocol: string | null; criteria: Record<string, number> | null; finalReward: number | null }> };
  b: { label: string; samples: Array<{ rolloutId: string; protocol: string | null; criteria: Record<string, number> | null; finalReward: number | null }> };
}

async function comparisonHost(): Promise<ComparisonHostLike> {
  const a = await api();
  const get = a.panels.get as unknown as (kind: string) => ComparisonHostLike | undefined;
  return waitFor('the comparison panel host', () => get.call(a.panels, 'comparison'));
}

describe('comparison', () => {
  let run: CompareResultLike;

  it('Compare Configurations with an argument object runs both sides on the same tasks and opens the panel, which answers comparison/get', async () => {
    const r = await vscode.commands.executeCommand<CompareResultLike>('rolloutLab.compareConfigurations', {
      a: 'base',
      b: 'model:HypothesisRefiner=strong,model:ProtocolDesigner=strong,label:strong seniors',
      limit: 2,
    });
    assert.ok(r && typeof r.runA === 'string' && typeof r.runB === 'string', `the command returns both runs: ${JSON.stringify(r)}`);
    assert.equal(r.cancelled, false);
    assert.equal(r.simulated, true);
    assert.equal(r.pairs, 2);
    run = r;

    const host = await comparisonHost();
    assert.ok(host.notified.some((n) => n.type === 'comparison/show' && JSON.stringify(n.params) === JSON.stringify({ runA: r.runA, runB: r.runB })), 'the panel was told which runs to show');
    const c = (await host.handle('comparison/get', { runA: r.runA, runB: r.runB })) as ComparisonLike;
    assert.equal(c.id, r.id);
    assert.equal(c.a.label, 'base');
    assert.equal(c.b.label, 'strong seniors');
    assert.equal(c.aggregate.pairs, 2);
    assert.equal(c.tasks.length, 2);
    assert.equal(c.aggregate.wins + c.aggregate.ties + c.aggregate.losses, 2);
    const mean = c.tasks.reduce((s, t) => s + (t.rewardB - t.rewardA), 0) / 2;
    assert.ok(Math.abs((c.aggregate.meanDifference ?? NaN) - mean) < 1e-12);

    const list = (await host.handle('comparison/list', {})) as { comparisons: Array<{ id: string; runA: string; runB: string; status: string }> };
    const mine = list.comparisons.find((x) => x.id === r.id);
    assert.deepEqual(mine && [mine.runA, mine.runB, mine.status], [r.runA, r.runB, 'done']);

    const task = c.tasks[0]!;
    const d = (await host.handle('comparison/task', { runA: r.runA, runB: r.runB, taskId: task.taskId })) as TaskDetailLike;
    assert.equal(d.taskId, task.taskId);
    for (const [side, ids] of [[d.a, task.rolloutIdsA], [d.b, task.rolloutIdsB]] as const) {
      assert.deepEqual(side.samples.map((s) => s.rolloutId), ids);
      assert.ok(side.samples[0]!.protocol && side.samples[0]!.protocol.length > 0, 'the protocol the judge scored');
      assert.ok(side.samples[0]!.criteria && Object.keys(side.samples[0]!.criteria).length > 0, 'judge scores');
    }
  });

  it('checks its arguments and the panel\'s parameters like any external input', async () => {
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.compareConfigurations', { a: 'base', b: 'base' })), /limit/);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.compareConfigurations', { a: 'base', b: 'model:Nobody=strong', limit: 1 })), /agent "Nobody"/);
    const host = await comparisonHost();
    await assert.rejects(host.handle('comparison/get', { runA: '<b>x</b>', runB: 'run-1' }));
    await assert.rejects(host.handle('comparison/get', { runA: 'run-1', runB: 'run-2', extra: true }));
    await assert.rejects(host.handle('comparison/get', { runA: 'run-nope', runB: 'run-nada' }), /not in this workspace's store/);
  });

  it('Open Comparison with { runA, runB } shows those runs in the panel', async () => {
    assert.ok(run, 'the first test made a comparison');
    await vscode.commands.executeCommand('rolloutLab.openComparison', { runA: run.runB, runB: run.runA });
    const host = await comparisonHost();
    const last = host.notified.filter((n) => n.type === 'comparison/show').pop();
    assert.deepEqual(last?.params, { runA: run.runB, runB: run.runA });
    const swapped = (await host.handle('comparison/get', { runA: run.runB, runB: run.runA })) as ComparisonLike;
    assert.equal(swapped.a.label, 'strong seniors');
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.openComparison', { runA: run.runA })), /runB/);
  });
});
