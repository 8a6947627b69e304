import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, ensureRun, runInTree, waitFor, type PanelHostLike, type PanelKind } from './helpers';
import { recordMetric } from './results';

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
    // Each panel answers only its own methods: the trace explorer may not ask for the reward weights.
    await assert.rejects(host.handle('weights/get', {}), /traceExplorer panel may not request weights\/get/);
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

/** What the intent tests look at on a host: its panel, what its webview asked for, and commands as from the webview. */
interface LiveHost extends PanelHostLike {
  panel: vscode.WebviewPanel | undefined;
  requested: Array<{ method: string; params: { rolloutId?: string } }>;
  notified: Array<{ type: string; params: { rolloutId?: string } }>;
  loads: number;
  runCommand(command: string, args: unknown): Promise<void>;
}

async function live(kind: PanelKind): Promise<LiveHost> {
  const a = await api();
  return waitFor(`the ${kind} panel, loaded`, () => {
    const h = a.panels.get(kind) as LiveHost | undefined;
    return h?.panel && h.loads > 0 ? h : undefined;
  }, 90_000);
}

/** The rollout of the last request of `method` the webview made after `since` requests, or undefined. */
function lastRequested(host: LiveHost, method: string, since: number): string | undefined {
  const r = host.requested.slice(since).filter((q) => q.method === method);
  return r[r.length - 1]?.params.rolloutId;
}

function webviewTabs(viewType: string): vscode.Tab[] {
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputWebview && (t.input.viewType === viewType || t.input.viewType.endsWith(`-${viewType}`)));
}

describe('panels: the last request wins', () => {
  it('a hidden trace explorer shows the rollout opened from the tree, a report link, a reward-curve point or a graph node, and the graph view follows', async function () {
    this.timeout(600_000);
    const run = await ensureRun();
    const a = await api();
    const found = await waitFor(`run ${run.runId} in the rollouts view`, () => runInTree(a.rolloutsTree, run.runId));
    const [A, B] = found.rollouts.map((n) => n.rollout!.id);
    assert.ok(A && B && A !== B, 'two rollouts to switch between');

    await vscode.commands.executeCommand('rolloutLab.openTraceExplorer', A);
    const explorer = await live('traceExplorer');
    await waitFor('the explorer to load A', () => lastRequested(explorer, 'trace/get', 0) === A);
    await vscode.commands.executeCommand('rolloutLab.openRewardCurve');
    // Only its host is needed (commands as from the webview): the page itself is hidden at once and never loads.
    const curve = (await panel('rewardCurve')) as LiveHost;
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    const graph = await live('graphView');

    /** Hides the explorer behind the graph view, opens `target` through `entry`, and checks what the explorer then loads. */
    const step = async (name: string, entry: () => Thenable<unknown>, target?: string): Promise<string> => {
      await vscode.commands.executeCommand('rolloutLab.openGraphView');
      await waitFor('the explorer hidden behind the graph view', () => explorer.panel?.visible === false);
      const mark = explorer.requested.length;
      const loads = explorer.loads;
      await entry();
      const want = target ?? (await waitFor(`${name}: the rollout it opened`, () => explorer.notified.filter((n) => n.type === 'trace/show').at(-1)?.params.rolloutId));
      await waitFor(`${name}: the explorer shown again`, () => explorer.panel?.visible === true);
      // The page is discarded while hidden; shown again, it loads, restores its saved rollout, and must end on the one asked for.
      await waitFor(`${name}: the explorer to load ${want} (it loaded ${explorer.requested.slice(mark).map((q) => q.params.rolloutId).join(', ') || 'nothing'}; page loads ${loads} → ${explorer.loads})`, () => lastRequested(explorer, 'trace/get', mark) === want, 90_000);
      return want;
    };
    await step('Rollouts tree', () => vscode.commands.executeCommand('rolloutLab.openTraceExplorer', B), B);
    await step('report link', () => curve.runCommand('trace/open', { rolloutId: A }), A);
    await step('reward-curve point', () => curve.runCommand('trace/open', { rolloutId: B }), B);
    // "Show spans…" opens the latest rollout that visited the node; start from another one.
    const shown = await step('graph node "Show spans…"', () => graph.runCommand('trace/filterNode', { node: 'Supervisor' }));
    const other = shown === A ? B : A;
    await step('Rollouts tree', () => vscode.commands.executeCommand('rolloutLab.openTraceExplorer', other), other);
    await step('graph node "Show spans…" again', () => graph.runCommand('trace/filterNode', { node: 'Supervisor' }), shown);

    // How many times the explorer's page loaded: more than the steps' count less one means it was discarded while hidden.
    recordMetric('explorerPageLoads', explorer.loads);
    // The graph view was hidden each time the explorer opened a rollout: shown again, it draws the last one's path.
    const mark = graph.requested.length;
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    await waitFor(`the graph view to draw ${shown} (it loaded ${graph.requested.slice(mark).map((q) => `${q.method} ${q.params.rolloutId ?? ''}`).join(', ') || 'nothing'})`, () => lastRequested(graph, 'graph/rolloutOverlay', mark) === shown, 90_000);
  });

  it('opening a panel whose tab VS Code restored but has not brought back adopts that tab instead of opening a second one', async function () {
    this.timeout(150_000);
    const a = await api();
    (a.panels.get('graphView') as LiveHost | undefined)?.panel?.dispose();
    await waitFor('no graph view', () => a.panels.get('graphView') === undefined && webviewTabs('rolloutLab.graphView').length === 0);
    // Stands in for a tab restored by a window reload: a Graph View tab that no host of the extension has.
    vscode.window.createWebviewPanel('rolloutLab.graphView', 'Rollout Lab: Graph View', { viewColumn: vscode.ViewColumn.Active, preserveFocus: true }, {});
    await vscode.commands.executeCommand('rolloutLab.openRewardCurve');
    await waitFor('the restored tab', () => webviewTabs('rolloutLab.graphView').length === 1);
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    const graph = await live('graphView');
    await waitFor('the graph view on screen', () => graph.panel?.visible);
    assert.equal(webviewTabs('rolloutLab.graphView').length, 1, 'one Graph View tab');
    await vscode.commands.executeCommand('rolloutLab.openGraphView');
    assert.equal(webviewTabs('rolloutLab.graphView').length, 1, 'still one Graph View tab');
  });
});
