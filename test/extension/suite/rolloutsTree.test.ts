import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, CLI, ensureRun, runInTree, treeChildren, waitFor, workspaceDir } from './helpers';

/** Runs the CLI in its own process, as a user or a CI job would next to an open VS Code. */
function cliRun(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Under @vscode/test-electron the extension host is Electron: make it behave as node for the child.
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('rollouts view', () => {
  it('shows the run and its rollouts with status and reward after Run Rollouts', async () => {
    const run = await ensureRun();
    const a = await api();
    const found = await waitFor(`run ${run.runId} in the view`, async () => {
      const f = await runInTree(a.rolloutsTree, run.runId);
      return f && f.rollouts.length === run.rollouts ? f : undefined;
    });
    const runItem = await a.rolloutsTree.getTreeItem(found.run);
    assert.match(String(runItem.description), /3 rollouts/);
    assert.match(String(runItem.description), /SIMULATED/);
    for (const n of found.rollouts) {
      assert.equal(n.rollout!.runId, run.runId);
      assert.equal(n.rollout!.status, 'succeeded');
      assert.equal(typeof n.rollout!.finalReward, 'number');
      const item = await a.rolloutsTree.getTreeItem(n);
      assert.equal(item.label, n.rollout!.taskId);
      assert.match(String(item.description), /reward \d\.\d\d/);
      // Selecting a rollout opens it in the trace explorer.
      assert.equal(item.command?.command, 'rolloutLab.openTraceExplorer');
      assert.deepEqual(item.command?.arguments, [n.rollout!.id]);
    }
  });

  it('filters by status and clears the filter', async () => {
    const run = await ensureRun();
    const a = await api();
    await vscode.commands.executeCommand('rolloutLab.filterRollouts', { status: ['failed'] });
    const filtered = await runInTree(a.rolloutsTree, run.runId);
    assert.equal(filtered, undefined, 'a run with no failed rollout is hidden by a failed-only filter');
    await vscode.commands.executeCommand('rolloutLab.clearRolloutFilters');
    const all = await runInTree(a.rolloutsTree, run.runId);
    assert.equal(all?.rollouts.length, run.rollouts);
  });

  it('shows a run that the CLI wrote from another process, once the watcher fires', async () => {
    await ensureRun();
    const a = await api();
    const r = await cliRun(['run', '--workspace', workspaceDir(), '--limit', '1', '--json']);
    assert.equal(r.code, 0, `the CLI failed:\n${r.stderr}`);
    const { runId } = JSON.parse(r.stdout.trim().split('\n').pop()!) as { runId: string };
    // No refresh command: the store's file watcher (or its polling fallback) must bring it in.
    const found = await waitFor(`the CLI's run ${runId} in the view`, async () => {
      const f = await runInTree(a.rolloutsTree, runId);
      // The CLI has exited, so the rollout is finished: the view must catch up to that, not stop at "running".
      return f && f.rollouts.length === 1 && f.rollouts[0]!.rollout!.status !== 'running' ? f : undefined;
    }, 20_000);
    assert.equal(found.rollouts[0]!.rollout!.status, 'succeeded');
  });

  it('pages a long run with "Load more…" (rolloutLab.rolloutsPerPage)', async () => {
    const run = await ensureRun();
    const a = await api();
    const config = vscode.workspace.getConfiguration('rolloutLab');
    await config.update('rolloutsPerPage', 1, vscode.ConfigurationTarget.Global);
    try {
      const runNode = (await runInTree(a.rolloutsTree, run.runId))!.run;
      const page1 = await treeChildren(a.rolloutsTree, runNode);
      assert.deepEqual(page1.map((n) => n.kind), ['rollout', 'more']);
      const more = page1[1]!;
      const item = await a.rolloutsTree.getTreeItem(more);
      assert.equal(item.command?.command, 'rolloutLab.loadMoreRollouts');
      await vscode.commands.executeCommand(item.command!.command, ...(item.command!.arguments ?? []));
      const page2 = await treeChildren(a.rolloutsTree, runNode);
      assert.deepEqual(page2.map((n) => n.kind), ['rollout', 'rollout', 'more']);
    } finally {
      await config.update('rolloutsPerPage', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it("a rollout's context actions open it in the trace explorer and on the graph", async () => {
    const run = await ensureRun();
    const a = await api();
    const node = (await runInTree(a.rolloutsTree, run.runId))!.rollouts[0]!;
    await vscode.commands.executeCommand('rolloutLab.openRolloutInTraceExplorer', node);
    assert.ok(a.panels.get('traceExplorer'), 'the trace explorer is open');
    await vscode.commands.executeCommand('rolloutLab.openRolloutInGraphView', node);
    assert.ok(a.panels.get('graphView'), 'the graph view is open');
  });

  it('labels run rows short, marks evaluation and comparison runs, and numbers every sample from #1', async function () {
    this.timeout(180_000);
    const a = await api();
    const itemOf = async (runId: string): Promise<{ run: vscode.TreeItem; rollouts: vscode.TreeItem[] }> => {
      const found = await waitFor(`run ${runId} in the view`, () => runInTree(a.rolloutsTree, runId));
      return { run: await a.rolloutsTree.getTreeItem(found.run), rollouts: await Promise.all(found.rollouts.map((n) => a.rolloutsTree.getTreeItem(n))) };
    };
    const iconOf = (item: vscode.TreeItem): string => (item.iconPath as vscode.ThemeIcon).id;

    // Two samples of one task: "#1" and "#2" (the first sample was unnumbered).
    const plain = await vscode.commands.executeCommand<{ runId: string }>('rolloutLab.runRollouts', { limit: 1, samples: 2 });
    const p = await itemOf(plain.runId);
    assert.deepEqual(p.rollouts.map((r) => String(r.description).split(' · ')[0]).sort(), ['#1', '#2']);
    // A plain run: the time it started (and the tail of its id when another run started in the same minute).
    assert.match(String(p.run.label), /^(\w{3} \d{1,2} )?\d\d:\d\d( · [0-9a-f]{6})?$/);
    assert.match(String(p.run.description), /^2 rollouts · mean \d\.\d\d · SIMULATED$/);
    // Two runs at the same minute would read the same: both labels end with their ids' tails.
    const top = (await treeChildren(a.rolloutsTree)).filter((n) => n.kind === 'run');
    const items = await Promise.all(top.map(async (n) => ({ id: n.run!.id, label: String((await a.rolloutsTree.getTreeItem(n)).label) })));
    const labels = items.map((i) => i.label);
    assert.equal(new Set(labels).size, labels.length, `every run row reads differently: ${labels.join(' | ')}`);
    assert.equal(iconOf(p.run), 'play');

    const evaluated = await vscode.commands.executeCommand<{ runId: string }>('rolloutLab.evaluate', { limit: 1 });
    const e = await itemOf(evaluated.runId);
    assert.match(String(e.run.label), /^eval · /);
    assert.equal(iconOf(e.run), 'checklist');
    assert.ok(!/#\d/.test(String(e.rollouts[0]!.description)), 'one sample per task: no number');

    const compared = await vscode.commands.executeCommand<{ runA: string; runB: string }>('rolloutLab.compareConfigurations', { a: 'base', b: 'model:HypothesisRefiner=strong,label:strong refiner', limit: 1 });
    const b = await itemOf(compared.runB);
    assert.match(String(b.run.label), /^compare B · /);
    assert.match(String(b.run.description), /^B: strong refiner · 1 rollout/);
    assert.equal(iconOf(b.run), 'git-compare');
    assert.match(String((await itemOf(compared.runA)).run.label), /^compare A · /);
    for (const item of [p.run, e.run, b.run]) assert.ok(String(item.label).length <= 33, `a short label: ${String(item.label)}`);
  });

  it('Refresh Rollouts runs', async () => {
    await vscode.commands.executeCommand('rolloutLab.refreshRollouts');
  });
});
