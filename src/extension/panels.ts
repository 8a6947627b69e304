import * as vscode from 'vscode';
import { LabPanelKind } from '../shared/protocol';
import { parsePanelState } from '../shared/panelState';
import { Disposable } from './disposable';
import { PanelHost, panelHandlers, panelIcon, panelOptions, panelTitle, type CommandHandlers, type RequestHandlers } from './webviews/panelHost';

type PanelKind = LabPanelKind;

/** viewType of each panel, as registered with VS Code (and named in activationEvents). */
export const PANEL_VIEW_TYPES: Record<PanelKind, string> = {
  traceExplorer: 'rolloutLab.traceExplorer',
  graphView: 'rolloutLab.graphView',
  rewardCurve: 'rolloutLab.rewardCurve',
  rewardWeights: 'rolloutLab.rewardWeights',
  evalReport: 'rolloutLab.evalReport',
  comparison: 'rolloutLab.comparison',
  traceDiff: 'rolloutLab.traceDiff',
  rolloutsTable: 'rolloutLab.rolloutsTable',
};


/**
 * One panel per kind: opening a kind that is open reveals it. Panels survive
 * a window reload through a serializer per viewType, which gets back the
 * state the webview saved (its rollout, node, run) and re-creates the host.
 * Each host answers only its own panel's requests and commands, taken from
 * the handlers of all of them.
 */
export class Panels extends Disposable {
  private readonly hosts = new Map<PanelKind, PanelHost>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly requests: RequestHandlers,
    private readonly commands: CommandHandlers,
    private readonly log: (line: string) => void,
  ) {
    super();
    for (const kind of LabPanelKind.options) {
      this.register(
        vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPES[kind], {
          deserializeWebviewPanel: async (panel: vscode.WebviewPanel, state: unknown): Promise<void> => {
            this.restore(kind, panel, state);
          },
        }),
      );
    }
  }

  get(kind: PanelKind): PanelHost | undefined {
    return this.hosts.get(kind);
  }

  /**
   * Opens the panel of a kind (or reveals it) and returns its host. After a
   * window reload VS Code restores the panels' tabs but brings a hidden one
   * back (deserializes it) only when it is shown: such a tab is revealed and
   * adopted, not opened a second time.
   */
  open(kind: PanelKind, column: vscode.ViewColumn = vscode.ViewColumn.Active): PanelHost {
    const existing = this.hosts.get(kind);
    if (existing) {
      // A host still waiting for its restored panel has asked VS Code to show it already.
      existing.panel?.reveal(existing.panel.viewColumn ?? column, false);
      return existing;
    }
    const tab = restoredTab(kind);
    if (tab) {
      const host = this.host(kind);
      void this.reviveTab(kind, host, tab);
      return host;
    }
    // Not retained when hidden: the panels keep their state (getState/setState) and load again when shown.
    return this.host(kind, this.createPanel(kind, column));
  }

  private createPanel(kind: PanelKind, column: vscode.ViewColumn): vscode.WebviewPanel {
    return vscode.window.createWebviewPanel(PANEL_VIEW_TYPES[kind], panelTitle(kind), { viewColumn: column, preserveFocus: false }, panelOptions(this.extensionUri));
  }

  /**
   * Shows a restored tab so VS Code deserializes it into `host` (see restore).
   * Should that not happen (the tab went away, or the workbench would not
   * show it), the tab is closed and a new panel opened in its place.
   */
  private async reviveTab(kind: PanelKind, host: PanelHost, tab: vscode.Tab): Promise<void> {
    const column = tab.group.viewColumn;
    try {
      if (!tab.group.isActive) await vscode.commands.executeCommand(FOCUS_GROUP[column - 1] ?? 'workbench.action.focusFirstEditorGroup');
      const index = tab.group.tabs.indexOf(tab);
      if (index >= 0) await vscode.commands.executeCommand('workbench.action.openEditorAtIndex', index);
    } catch (err) {
      this.log(`could not show the restored ${kind} tab: ${(err as Error).message}`);
    }
    const deadline = Date.now() + REVIVE_TIMEOUT_MS;
    while (!host.panel && Date.now() < deadline && this.hosts.get(kind) === host) await new Promise((r) => setTimeout(r, 50));
    if (host.panel || this.hosts.get(kind) !== host) return;
    this.log(`the restored ${kind} tab did not come back: opening the panel anew`);
    const stale = restoredTab(kind);
    if (stale) await vscode.window.tabGroups.close(stale, true).then(undefined, () => false);
    if (!host.panel && this.hosts.get(kind) === host) this.bind(kind, host, this.createPanel(kind, column));
  }

  /** Shows a rollout in the trace explorer, optionally filtered to one graph node. */
  showTrace(rolloutId: string, node?: string): PanelHost {
    const host = this.open('traceExplorer');
    host.notify('trace/show', node ? { rolloutId, node } : { rolloutId });
    // An open graph view follows the selection, drawing the path of the rollout being read.
    this.hosts.get('graphView')?.notify('graph/showRollout', { rolloutId });
    return host;
  }

  /** Opens the graph view, with a rollout's path drawn over it when one is given. */
  showGraph(rolloutId?: string): PanelHost {
    const host = this.open('graphView');
    if (rolloutId) host.notify('graph/showRollout', { rolloutId });
    return host;
  }

  /** Opens the trace diff on two rollouts (left, right). */
  showDiff(left: string, right: string): PanelHost {
    const host = this.open('traceDiff');
    host.notify('diff/show', { left, right });
    return host;
  }

  /** Tells every open panel that the store changed. */
  broadcast(rollouts: number): void {
    for (const host of this.hosts.values()) host.notify('store/changed', { rollouts });
  }

  openKinds(): PanelKind[] {
    return [...this.hosts.keys()];
  }

  private restore(kind: PanelKind, panel: vscode.WebviewPanel, saved: unknown): void {
    const old = this.hosts.get(kind);
    if (old && !old.panel) {
      // The tab open() revealed: the host waiting for it takes it, with the intents it was given since.
      this.bind(kind, old, panel);
      this.log(`restored the ${kind} panel on request`);
      return;
    }
    // A second restored panel of a kind would break "one per kind": keep the first.
    if (old) {
      panel.dispose();
      return;
    }
    const host = this.host(kind, panel);
    // The webview restores itself from its saved state too; telling it again costs one request and covers a webview that lost it.
    let rolloutId: string | undefined;
    if (kind === 'traceExplorer') {
      const { rolloutId: id, node } = parsePanelState(kind, saved);
      if (id) host.notify('trace/show', node ? { rolloutId: id, node } : { rolloutId: id });
      rolloutId = id;
    } else if (kind === 'graphView') {
      rolloutId = parsePanelState(kind, saved).rolloutId;
      if (rolloutId) host.notify('graph/showRollout', { rolloutId });
    } else if (kind === 'traceDiff') {
      const { left, right } = parsePanelState(kind, saved);
      if (left && right) host.notify('diff/show', { left, right });
    }
    this.log(`restored the ${kind} panel${rolloutId ? ` (rollout ${rolloutId})` : ''}`);
  }

  /** A new host for a kind, with its panel or waiting for one. */
  private host(kind: PanelKind, panel?: vscode.WebviewPanel): PanelHost {
    const own = panelHandlers(kind, this.requests, this.commands);
    const host = new PanelHost(kind, this.extensionUri, own.requests, own.commands, this.log);
    this.hosts.set(kind, host);
    if (panel) this.bind(kind, host, panel);
    return host;
  }

  private bind(kind: PanelKind, host: PanelHost, panel: vscode.WebviewPanel): void {
    panel.iconPath = panelIcon(this.extensionUri);
    host.attach(panel);
    panel.onDidDispose(() => {
      if (this.hosts.get(kind) === host) this.hosts.delete(kind);
      host.dispose();
    });
  }

  override dispose(): void {
    for (const host of this.hosts.values()) {
      host.dispose();
      host.panel?.dispose();
    }
    this.hosts.clear();
    super.dispose();
  }
}

/** How long open() waits for VS Code to bring back a restored tab it showed. */
const REVIVE_TIMEOUT_MS = 5000;
const FOCUS_GROUP = ['First', 'Second', 'Third', 'Fourth', 'Fifth', 'Sixth', 'Seventh', 'Eighth'].map((n) => `workbench.action.focus${n}EditorGroup`);

/**
 * A tab of the kind's panel that no host has: VS Code restored it after a
 * window reload and has not deserialized it yet (it does so when it is shown).
 * The webview tab's viewType may carry a prefix ("mainThreadWebview-").
 */
function restoredTab(kind: PanelKind): vscode.Tab | undefined {
  const viewType = PANEL_VIEW_TYPES[kind];
  for (const group of vscode.window.tabGroups.all) {
    for (const tab of group.tabs) {
      if (tab.input instanceof vscode.TabInputWebview && (tab.input.viewType === viewType || tab.input.viewType.endsWith(`-${viewType}`))) return tab;
    }
  }
  return undefined;
}
