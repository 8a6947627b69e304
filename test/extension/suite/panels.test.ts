import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, ensureRun, runInTree, waitFor, type PanelHostLike, type PanelKind } from './helpers';

interface SpanLike {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  kind: string;
  name: string;
}

async function firstRolloutId(): Promise<string> {
  const run = await ensureRun();
  const a = await api();
  const found = await waitFor(`run ${run.runId} in the rollouts view`, () => runInTree(a.rolloutsTree, run.runId));
  const id = found.rollouts[0]?.rollout?.id;
  assert.ok(id, 'the run has rollouts in the view');
  return id;
}

async function panel(kind: PanelKind): Promise<PanelHostLike> {
  const a = await api();
  const host = await waitFor(`the ${kind} panel host`, () => a.panels.get(kind));
  assert.equal(typeof host.handle, 'function', `PanelHost.handle(method, params) on the ${kind} host`);
  return host;
}

describe('panels', () => {
  it('Open Trace Explorer on a rollout opens the panel, which answers trace/get with its span tree', async () => {
    const rolloutId = await firstRolloutId();
    await vscode.commands.executeCommand('rolloutLab.openTraceExplorer', rolloutId);
    const host = await panel('traceExplorer');
    const r = (await host.handle('trace/get', { rolloutId })) as { rollout: { id: string; status: string }; spans: SpanLike[] };
    assert.equal(r.rollout.id, rolloutId);
    const root = r.spans.filter((s) => s.parentSpanId === null);
    assert.equal(root.length, 1, 'one root span');
    assert.equal(root[0]!.kind, 'rollout');
    for (const kind of ['node', 'llm', 'reward']) assert.ok(r.spans.some((s) => s.kind === kind), `a ${kind} span`);
    const ids = new Set(r.spans.map((s) => s.spanId));
    for (const s of r.spans) if (s.parentSpanId) assert.ok(ids.has(s.parentSpanId), `span ${s.name} has its parent in the trace`);
  });

  it('checks webview requests like any external input: bad params are rejected', async () => {
    const host = await panel('traceExplorer');
    await assert.rejects(host.handle('trace/get', { rolloutId: '<img src=x onerror=alert(1)>' }));
    await assert.rejects(host.handle('trace/get', { rolloutId: 'a'.repeat(32), extra: 1 }));
    await assert.rejects(host.handle('no/such/method', {}));
  });

  it('Open Graph View opens the panel, which answers graph/describe, graph/rolloutOverlay and graph/aggregate', async () => {
    const rolloutId = await firstRolloutId();
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    const host = await panel('graphView');
    const g = (await host.handle('graph/describe', {})) as { nodes: Array<{ id: string; kind: string }>; edges: Array<{ source: string; target: string; conditional: boolean }>; source: string };
    assert.equal(g.source, 'research-lab');
    const ids = new Set(g.nodes.map((n) => n.id));
    for (const agent of ['Supervisor', 'PrincipalInvestigator', 'PeerReviewer']) assert.ok(ids.has(agent), `node ${agent}`);
    assert.ok(g.edges.some((e) => e.conditional), 'conditional edges');
    for (const e of g.edges) assert.ok(ids.has(e.source) && ids.has(e.target), `edge ${e.source}→${e.target} joins known nodes`);
    const overlay = (await host.handle('graph/rolloutOverlay', { rolloutId })) as { rolloutId: string; path: string[]; visits: Record<string, number> };
    assert.equal(overlay.rolloutId, rolloutId);
    assert.ok(overlay.path.length > 0, 'the path the rollout took');
    for (const n of overlay.path) assert.ok(ids.has(n), `path node ${n} is on the graph`);
    const agg = (await host.handle('graph/aggregate', {})) as { rollouts: number; nodes: Array<{ node: string; visits: number }> };
    assert.ok(agg.rollouts >= 3);
    assert.ok(agg.nodes.some((n) => n.visits > 0));
  });

  it('Open Reward Curve opens the panel, which answers rewards/series', async () => {
    const run = await ensureRun();
    await vscode.commands.executeCommand('rolloutLab.openRewardCurve');
    const host = await panel('rewardCurve');
    const s = (await host.handle('rewards/series', { runId: run.runId })) as { points: Array<{ runId: string; finalReward: number }>; criteria: string[] };
    assert.equal(s.points.length, run.succeeded, 'one point per rollout that has a reward');
    for (const p of s.points) {
      assert.equal(p.runId, run.runId);
      assert.ok(Number.isFinite(p.finalReward));
    }
    assert.ok(s.criteria.length > 0, 'the reward criteria');
  });

  it('opening a panel kind again reveals the same panel', async () => {
    const a = await api();
    const before = a.panels.get('graphView');
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    assert.equal(a.panels.get('graphView'), before);
  });
});
