import * as vscode from 'vscode';
import * as path from 'node:path';
import { statusText } from '../core/store/failureKinds';
import type { RolloutRecord, RunRecord } from '../core/store/types';
import type { TraceStore } from '../core/store/traceStore';
import { errorMessage } from '../core/errors';
import { CoalescingTrigger } from './coalescingTrigger';
import { Disposable } from './disposable';
import type { LabService } from './labService';
import { SETTINGS } from './settings';
import { describeFilter, filterToQuery, isEmptyFilter, type RolloutFilter } from './view/rolloutFilter';
import {
  escapeMarkdown,
  rolloutDescription,
  rolloutIcon,
  rolloutTooltipMarkdown,
  runDescription,
  runKindBadge,
  runLabel,
  samplesPerTask,
  summariseRollouts,
  type RunSummary,
} from './view/rolloutPresentation';

/** An element of the rollouts view. */
export type RolloutsTreeNode =
  | { kind: 'lab'; folder: string }
  | { kind: 'run'; folder: string; run: RunRecord; newest?: boolean; twin?: boolean }
  | { kind: 'rollout'; folder: string; rollout: RolloutRecord; samplesPerTask?: number }
  | { kind: 'more'; folder: string; runId: string; shown: number; total: number }
  | { kind: 'message'; folder: string | null; text: string; error?: boolean };

/** A running run's mean reward reads all its rollouts: do that at most this often. */
const RUNNING_SUMMARY_MS = 5000;

interface CachedSummary {
  key: string;
  at: number;
  summary: RunSummary;
}

/**
 * Runs (newest first) → rollouts, for every lab in the workspace (a level of
 * labs only when there are several). Filters by status, reward range and
 * split; pages long runs with "Load more…"; follows the store live through
 * LabService's change event.
 */
export class RolloutsTree extends Disposable implements vscode.TreeDataProvider<RolloutsTreeNode> {
  private readonly changed = this.register(new vscode.EventEmitter<RolloutsTreeNode | undefined>());
  readonly onDidChangeTreeData: vscode.Event<RolloutsTreeNode | undefined> = this.changed.event;
  private filter: RolloutFilter = {};
  /** How many rollouts of a run are shown, by `${folder}\0${runId}`. */
  private readonly shown = new Map<string, number>();
  private readonly summaries = new Map<string, CachedSummary>();
  private readonly refresher: CoalescingTrigger;
  private view: vscode.TreeView<RolloutsTreeNode> | undefined;

  constructor(
    private readonly service: LabService,
    private readonly pageSize: () => number = () => SETTINGS.rolloutsPerPage.default,
  ) {
    super();
    // A run reports every rollout, and watchers fire in bursts: redraw once per burst.
    this.refresher = this.register(new CoalescingTrigger(async () => this.changed.fire(undefined), 200));
    this.register(service.onDidChange(() => this.refresher.trigger()));
  }

  /** The view this provider feeds: its description and message show the filter. */
  attach(view: vscode.TreeView<RolloutsTreeNode>): void {
    this.view = view;
    this.updateViewText();
  }

  refresh(): void {
    this.summaries.clear();
    this.changed.fire(undefined);
  }

  getFilter(): RolloutFilter {
    return { ...this.filter, status: this.filter.status ? [...this.filter.status] : undefined };
  }

  setFilter(f: RolloutFilter): void {
    this.filter = { ...f };
    this.shown.clear();
    void vscode.commands.executeCommand('setContext', 'rolloutLab.filtered', !isEmptyFilter(this.filter));
    this.updateViewText();
    this.changed.fire(undefined);
  }

  /** Shows another page of a run's rollouts. */
  loadMore(folder: string, runId: string): void {
    const k = `${folder}\0${runId}`;
    this.shown.set(k, (this.shown.get(k) ?? this.pageSize()) + this.pageSize());
    this.changed.fire(undefined);
  }

  getTreeItem(node: RolloutsTreeNode): vscode.TreeItem {
    switch (node.kind) {
      case 'lab': {
        const item = new vscode.TreeItem(path.basename(node.folder), vscode.TreeItemCollapsibleState.Expanded);
        item.id = `lab:${node.folder}`;
        item.description = node.folder;
        item.iconPath = new vscode.ThemeIcon('beaker');
        item.contextValue = 'rolloutLab.lab';
        return item;
      }
      case 'run':
        return this.runItem(node.folder, node.run, node.newest === true, node.twin === true);
      case 'rollout':
        return rolloutItem(node.folder, node.rollout, node.samplesPerTask ?? 1);
      case 'more': {
        const item = new vscode.TreeItem('Load more…', vscode.TreeItemCollapsibleState.None);
        item.id = `more:${node.folder}:${node.runId}:${node.shown}`;
        item.description = `${node.shown} of ${node.total} shown`;
        item.iconPath = new vscode.ThemeIcon('ellipsis');
        item.command = { command: 'rolloutLab.loadMoreRollouts', title: 'Load more', arguments: [node] };
        item.contextValue = 'rolloutLab.more';
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
        item.iconPath = new vscode.ThemeIcon(node.error ? 'warning' : 'info', node.error ? new vscode.ThemeColor('problemsWarningIcon.foreground') : undefined);
        item.tooltip = node.text;
        if (node.error && node.folder) {
          item.command = { command: 'vscode.open', title: 'Open lab.json', arguments: [vscode.Uri.file(path.join(node.folder, '.rollout-lab', 'lab.json'))] };
        }
        return item;
      }
    }
  }

  async getChildren(node?: RolloutsTreeNode): Promise<RolloutsTreeNode[]> {
    if (!node) {
      const folders = this.service.labFolders();
      if (folders.length === 0) return [];
      if (folders.length > 1) return folders.map((folder) => ({ kind: 'lab', folder }));
      return this.runs(folders[0]!);
    }
    if (node.kind === 'lab') return this.runs(node.folder);
    if (node.kind === 'run') return this.rollouts(node.folder, node.run);
    return [];
  }

  getParent(node: RolloutsTreeNode): RolloutsTreeNode | undefined {
    const multi = this.service.labFolders().length > 1;
    if (node.kind === 'run') return multi ? { kind: 'lab', folder: node.folder } : undefined;
    if (node.kind === 'rollout' || node.kind === 'more') {
      const runId = node.kind === 'rollout' ? node.rollout.runId : node.runId;
      const run = this.service.openedStore(node.folder)?.getRun(runId);
      return run ? { kind: 'run', folder: node.folder, run } : undefined;
    }
    return undefined;
  }

  private async runs(folder: string): Promise<RolloutsTreeNode[]> {
    let store: TraceStore;
    try {
      store = await this.service.store(folder);
    } catch (err) {
      return [{ kind: 'message', folder, text: `Could not open the lab: ${errorMessage(err)}`, error: true }];
    }
    const runs = store.listRuns().sort((a, b) => b.startTime - a.startTime);
    const newest = runs[0]?.id;
    // Runs whose labels would read the same (same kind, same minute) add the tail of their id.
    const labels = new Map<string, number>();
    for (const run of runs) labels.set(runLabel(run), (labels.get(runLabel(run)) ?? 0) + 1);
    const node = (run: RunRecord): RolloutsTreeNode => ({ kind: 'run', folder, run, newest: run.id === newest, twin: (labels.get(runLabel(run)) ?? 0) > 1 });
    if (isEmptyFilter(this.filter)) return runs.map(node);
    const matching = runs.filter((run) => store.listRollouts(filterToQuery(this.filter, { runId: run.id, limit: 0 })).total > 0);
    if (runs.length > 0 && matching.length === 0) return [{ kind: 'message', folder, text: 'No rollouts match the filter' }];
    return matching.map(node);
  }

  private async rollouts(folder: string, run: RunRecord): Promise<RolloutsTreeNode[]> {
    let store: TraceStore;
    try {
      store = await this.service.store(folder);
    } catch (err) {
      return [{ kind: 'message', folder, text: `Could not open the lab: ${errorMessage(err)}`, error: true }];
    }
    const limit = this.shown.get(`${folder}\0${run.id}`) ?? this.pageSize();
    const page = store.listRollouts(filterToQuery(this.filter, { runId: run.id, limit }));
    const samples = samplesPerTask(run);
    const nodes: RolloutsTreeNode[] = page.rollouts.map((rollout) => ({ kind: 'rollout', folder, rollout, samplesPerTask: samples }));
    if (page.total > page.rollouts.length) nodes.push({ kind: 'more', folder, runId: run.id, shown: page.rollouts.length, total: page.total });
    if (nodes.length === 0) nodes.push({ kind: 'message', folder, text: isEmptyFilter(this.filter) ? 'No rollouts yet' : 'No rollouts of this run match the filter' });
    return nodes;
  }

  private runItem(folder: string, run: RunRecord, newest: boolean, twin: boolean): vscode.TreeItem {
    const summary = this.summary(folder, run);
    const item = new vscode.TreeItem(twin ? `${runLabel(run)} · ${run.id.slice(-6)}` : runLabel(run), newest ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
    item.id = `run:${folder}:${run.id}`;
    item.description = summary ? runDescription(run, summary) : run.status;
    // A finished run shows what kind it is (Run Rollouts, an evaluation, a comparison side…); others their status.
    const icon =
      run.status === 'running' ? 'loading~spin' : run.status === 'failed' ? 'error' : run.status === 'done' ? runKindBadge(run).icon : 'circle-slash';
    item.iconPath = new vscode.ThemeIcon(icon, run.status === 'failed' ? new vscode.ThemeColor('testing.iconFailed') : undefined);
    const md = new vscode.MarkdownString(undefined, false);
    const kindText = runKindBadge(run).word;
    md.appendMarkdown(`**Run ${escapeMarkdown(run.id)}**${kindText ? ` · ${escapeMarkdown(kindText)}` : ''}${run.simulated ? ' · SIMULATED' : ''}  \n`);
    md.appendMarkdown(`Status: ${escapeMarkdown(run.status)} · started ${escapeMarkdown(new Date(run.startTime).toLocaleString())}  \n`);
    md.appendMarkdown(`Planned: ${run.planned} rollouts${summary ? ` · stored: ${summary.rollouts}` : ''}  \n`);
    const params = Object.entries(run.params)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${escapeMarkdown(k)} ${escapeMarkdown(typeof v === 'string' ? v : JSON.stringify(v))}`);
    if (params.length) md.appendMarkdown(`Options: ${params.join(', ')}`);
    item.tooltip = md;
    item.contextValue = 'rolloutLab.run';
    return item;
  }

  private summary(folder: string, run: RunRecord): RunSummary | undefined {
    const store = this.service.openedStore(folder);
    if (!store) return undefined;
    const k = `${folder}\0${run.id}`;
    const total = store.listRollouts({ runId: run.id, limit: 0 }).total;
    const key = `${run.status}:${run.endTime}:${total}`;
    const cached = this.summaries.get(k);
    const now = Date.now();
    if (cached && (cached.key === key || (run.status === 'running' && now - cached.at < RUNNING_SUMMARY_MS))) {
      return { ...cached.summary, rollouts: total };
    }
    const summary = summariseRollouts(store.listRollouts({ runId: run.id }).rollouts);
    this.summaries.set(k, { key, at: now, summary });
    return summary;
  }

  private updateViewText(): void {
    if (!this.view) return;
    const text = describeFilter(this.filter);
    this.view.description = text ? `filtered: ${text}` : undefined;
    this.view.message = text ? `Showing rollouts where ${text}. Clear the filter to see all.` : undefined;
  }
}

function rolloutItem(folder: string, r: RolloutRecord, samples: number): vscode.TreeItem {
  const item = new vscode.TreeItem(r.taskId, vscode.TreeItemCollapsibleState.None);
  item.id = `rollout:${folder}:${r.id}`;
  const description = rolloutDescription(r, Date.now(), samples);
  item.description = description;
  const icon = rolloutIcon(r);
  item.iconPath = new vscode.ThemeIcon(icon.icon, icon.color ? new vscode.ThemeColor(icon.color) : undefined);
  // Not trusted, no HTML: task ids and errors come from datasets and models.
  item.tooltip = new vscode.MarkdownString(rolloutTooltipMarkdown(r, Date.now(), samples), false);
  item.command = { command: 'rolloutLab.openTraceExplorer', title: 'Open in Trace Explorer', arguments: [r.id] };
  item.contextValue = `rolloutLab.rollout.${r.status}`;
  item.accessibilityInformation = { label: `${r.taskId}, ${statusText(r)}, ${description}` };
  return item;
}
