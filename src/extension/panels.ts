import * as vscode from 'vscode';
import { PanelKind, type PanelState } from '../shared/protocol';
import { PanelHost, panelOptions, panelTitle, type CommandHandlers, type RequestHandlers } from './webviews/panelHost';

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
 */
export class Panels implements vscode.Disposable {
  private readonly hosts = new Map<PanelKind, PanelHost>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly requests: RequestHandlers,
    private readonly commands: CommandHandlers,
    private readonly log: (line: string) => void,
  ) {
    for (const kind of PanelKind.options) {
      this.disposables.push(
        vscode.window.registerWebviewPanelSerializer(PANEL_VIEW_TYPES[kind], {
          deserializeWebviewPanel: async (panel: vscode.WebviewPanel, state: unknown): Promise<void> => {
            this.restore(kind, panel, isPanelState(state) ? state : {});
          },
        }),
      );
    }
  }

  get(kind: PanelKind): PanelHost | undefined {
    return this.hosts.get(kind);
  }

  /** Opens the panel of a kind (or reveals it) and returns its host. */
  open(kind: PanelKind, column: vscode.ViewColumn = vscode.ViewColumn.Active): PanelHost {
    const existing = this.hosts.get(kind);
    if (existing) {
      existing.panel.reveal(existing.panel.viewColumn ?? column, false);
      return existing;
    }
    // Not retained when hidden: the panels keep their state (getState/setState) and load again when shown.
    const panel = vscode.window.createWebviewPanel(PANEL_VIEW_TYPES[kind], panelTitle(kind), { viewColumn: column, preserveFocus: false }, panelOptions(this.extensionUri));
    return this.adopt(kind, panel);
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

  private restore(kind: PanelKind, panel: vscode.WebviewPanel, state: PanelState): void {
    const old = this.hosts.get(kind);
    // A second restored panel of a kind would break "one per kind": keep the first.
    if (old) {
      panel.dispose();
      return;
    }
    const host = this.adopt(kind, panel);
    // The webview restores itself from its saved state too; telling it again costs one request and covers a webview that lost it.
    if (kind === 'traceExplorer' && typeof state.rolloutId === 'string') {
      host.notify('trace/show', typeof state.node === 'string' ? { rolloutId: state.rolloutId, node: state.node } : { rolloutId: state.rolloutId });
    }
    if (kind === 'graphView' && typeof state.rolloutId === 'string') host.notify('graph/showRollout', { rolloutId: state.rolloutId });
    if (kind === 'traceDiff' && typeof state.left === 'string' && typeof state.right === 'string') host.notify('diff/show', { left: state.left, right: state.right });
    this.log(`restored the ${kind} panel${typeof state.rolloutId === 'string' ? ` (rollout ${state.rolloutId})` : ''}`);
  }

  private adopt(kind: PanelKind, panel: vscode.WebviewPanel): PanelHost {
    // Tab icons are images, not codicons: one drawn for each theme kind.
    panel.iconPath = {
      light: vscode.Uri.joinPath(this.extensionUri, 'media', 'rollout-lab-light.svg'),
      dark: vscode.Uri.joinPath(this.extensionUri, 'media', 'rollout-lab-dark.svg'),
    };
    const host = new PanelHost(panel, kind, this.extensionUri, this.requests, this.commands, this.log);
    this.hosts.set(kind, host);
    panel.onDidDispose(() => {
      if (this.hosts.get(kind) === host) this.hosts.delete(kind);
      host.dispose();
    });
    return host;
  }

  dispose(): void {
    for (const host of this.hosts.values()) {
      host.dispose();
      host.panel.dispose();
    }
    this.hosts.clear();
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

function isPanelState(s: unknown): s is PanelState {
  return typeof s === 'object' && s !== null && !Array.isArray(s);
}
