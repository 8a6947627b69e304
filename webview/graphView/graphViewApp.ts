import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { RolloutRecord } from '../../src/core/store/types';
import type { GraphNodeInfo, RequestResults } from '../../src/shared/protocol';
import type { HostClient } from '../shared/hostClient';
import { GraphCanvas } from './graphCanvas';
import { NodeMenu } from './nodeMenu';
import { GRAPH_MODES, describeNode, formatCount, type AggregateOverlay, type GraphMode, type RolloutOverlay } from './overlay';
import { fillRunPicker } from '../shared/runPicker';
import { el } from '../shared/dom';

/*
 * The Graph View panel: the lab's graph as LangGraph describes it, with a
 * structure view, one rollout's path, or statistics over many rollouts.
 * Mode, rollout and run survive a reload through the panel state.
 */

const ROLLOUT_PICKER_LIMIT = 200;
const MODE_LABELS: Record<GraphMode, string> = { structure: 'Structure', rollout: 'Rollout', aggregate: 'Aggregate' };

/** A rollout in the picker: what tells it apart (task, sample number from 1, reward, status); run and start in the description line, the id in the tooltip. */
export function rolloutOption(r: RolloutRecord, selected: boolean): { label: string; value: string; description: string; selected: boolean; disabled: boolean } {
  const reward = r.finalReward === null ? 'no reward' : `reward ${r.finalReward.toFixed(3)}`;
  return {
    label: `task ${r.taskId} #${r.sample + 1} · ${reward} · ${r.status}`,
    value: r.id,
    description: `${r.runId} · started ${new Date(r.startTime).toLocaleString()}`,
    selected,
    disabled: false,
  };
}

export class GraphViewApp {
  private mode: GraphMode = 'structure';
  private rolloutId: string | null = null;
  private runId: string | null = null;
  private graph: RequestResults['graph/describe'] | null = null;
  private rollout: RolloutOverlay | null = null;
  private aggregate: AggregateOverlay | null = null;
  private rollouts: RolloutRecord[] = [];
  private readonly canvas: GraphCanvas;
  private readonly menu: NodeMenu;
  private readonly modeGroup: HTMLElement;
  private readonly rolloutPicker: VscodeSingleSelect;
  private readonly runPicker: VscodeSingleSelect;
  private readonly status: HTMLElement;
  private readonly message: HTMLElement;
  private readonly pathLine: HTMLElement;
  private readonly info: HTMLElement;
  private loadSeq = 0;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'graphView'>,
  ) {
    root.classList.add('gv-root');
    const toolbar = el('div', 'toolbar gv-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Graph view');

    this.modeGroup = document.createElement('vscode-radio-group');
    this.modeGroup.className = 'gv-modes';
    this.modeGroup.setAttribute('aria-label', 'Overlay');
    for (const m of GRAPH_MODES) {
      const r = document.createElement('vscode-radio');
      r.setAttribute('name', 'gv-mode');
      r.value = m;
      r.label = MODE_LABELS[m];
      r.dataset.mode = m;
      r.textContent = MODE_LABELS[m];
      this.modeGroup.append(r);
    }
    this.modeGroup.addEventListener('change', (ev) => {
      const r = ev.target as HTMLElement & { checked?: boolean; value?: string };
      if (r.checked && r.value && (GRAPH_MODES as readonly string[]).includes(r.value)) void this.setMode(r.value as GraphMode);
    });

    this.rolloutPicker = document.createElement('vscode-single-select');
    this.rolloutPicker.className = 'gv-rollout-picker';
    this.rolloutPicker.setAttribute('aria-label', 'Rollout');
    this.rolloutPicker.combobox = true;
    this.rolloutPicker.addEventListener('change', () => {
      const id = this.rolloutPicker.value;
      this.titleRolloutPicker();
      if (id && id !== this.rolloutId) void this.showRollout(id);
    });

    this.runPicker = document.createElement('vscode-single-select');
    this.runPicker.className = 'gv-run-picker';
    this.runPicker.setAttribute('aria-label', 'Run');
    this.runPicker.addEventListener('change', () => {
      const id = this.runPicker.value || null;
      if (id !== this.runId) {
        this.runId = id;
        this.client.setState({ runId: id ?? undefined });
        void this.loadAggregate();
      }
    });

    const fit = document.createElement('vscode-button');
    fit.className = 'gv-fit';
    fit.setAttribute('secondary', '');
    fit.textContent = 'Fit';
    fit.title = 'Fit the graph to the panel (F)';
    fit.addEventListener('click', () => this.canvas.fit());
    const zoomIn = document.createElement('vscode-button');
    zoomIn.className = 'gv-zoom-in';
    zoomIn.setAttribute('secondary', '');
    zoomIn.setAttribute('aria-label', 'Zoom in');
    zoomIn.textContent = '+';
    zoomIn.addEventListener('click', () => this.canvas.zoomBy(1.25));
    const zoomOut = document.createElement('vscode-button');
    zoomOut.className = 'gv-zoom-out';
    zoomOut.setAttribute('secondary', '');
    zoomOut.setAttribute('aria-label', 'Zoom out');
    zoomOut.textContent = '−';
    zoomOut.addEventListener('click', () => this.canvas.zoomBy(0.8));

    this.status = el('span', 'gv-status muted');
    this.status.setAttribute('aria-live', 'polite');
    toolbar.append(this.modeGroup, this.rolloutPicker, this.runPicker, el('span', 'gv-spacer'), this.status, zoomOut, zoomIn, fit);

    this.message = el('div', 'banner gv-message');
    this.message.hidden = true;
    this.message.setAttribute('role', 'status');

    const stage = el('div', 'gv-stage');
    this.canvas = new GraphCanvas(
      stage,
      (node, anchor) => this.menu.open(node, anchor),
      (node) => this.inspect(node),
    );
    this.menu = new NodeMenu(stage, {
      openPrompt: (agent) => this.client.command('prompt/open', { agent }),
      showSpans: (node) => this.client.command('trace/filterNode', { node }),
    });
    this.pathLine = el('div', 'gv-path');
    this.pathLine.hidden = true;
    this.pathLine.setAttribute('aria-label', 'Path of the rollout');
    // The figures of the node under the pointer or keyboard focus, in full (the node card shows only the headline).
    this.info = el('div', 'gv-info');
    this.info.hidden = true;
    this.info.setAttribute('aria-live', 'polite');
    root.append(toolbar, this.message, stage, this.pathLine, this.info, this.legend());

    stage.addEventListener('keydown', (ev) => {
      if (this.menu.isOpen || ev.target instanceof HTMLInputElement) return;
      if (ev.key === 'f' || ev.key === 'F') this.canvas.fit();
      else if (ev.key === '+' || ev.key === '=') this.canvas.zoomBy(1.25);
      else if (ev.key === '-') this.canvas.zoomBy(0.8);
    });
    window.addEventListener('resize', () => this.canvas.fit(false));
  }

  private legend(): HTMLElement {
    const l = el('div', 'gv-legend muted');
    l.setAttribute('aria-hidden', 'true');
    const item = (cls: string, text: string): void => {
      const s = el('span', 'gv-legend-item');
      s.append(el('span', `gv-swatch ${cls}`), el('span', undefined, text));
      l.append(s);
    };
    item('gv-swatch-agent', 'agent');
    item('gv-swatch-tools', 'tool node');
    item('gv-swatch-conditional', 'conditional edge');
    item('gv-swatch-taken', 'path taken');
    item('gv-swatch-error', 'error');
    return l;
  }

  private inspected: GraphNodeInfo | null = null;

  private inspect(node: GraphNodeInfo | null): void {
    if (node) this.inspected = node;
    const n = this.inspected;
    this.info.hidden = this.mode !== 'aggregate' || !this.aggregate;
    if (this.info.hidden) return;
    this.info.textContent = n ? describeNode(n, this.mode, { rollout: this.rollout, aggregate: this.aggregate, edges: this.graph?.edges ?? [] }) : 'Hover or focus a node (Tab, then arrow keys) for its figures; edge labels count the steps taken along them.';
  }

  /** Notification handlers; call before client.ready(). */
  listen(): void {
    this.client.on('graph/showRollout', ({ rolloutId }) => {
      void this.setMode('rollout', rolloutId);
    });
    this.client.on('store/changed', () => void this.refresh());
  }

  async start(): Promise<void> {
    const st = this.client.getState();
    const mode = st.mode ?? 'structure';
    this.rolloutId = this.rolloutId ?? st.rolloutId ?? null;
    this.runId = st.runId ?? null;
    try {
      this.graph = await this.client.request('graph/describe', {});
    } catch (err) {
      this.showMessage(`Cannot draw the graph: ${(err as Error).message}`);
      return;
    }
    await this.canvas.setGraph(this.graph.nodes, this.graph.edges);
    // A showRollout that arrived while the graph was loading has already set the mode.
    await this.setMode(this.mode !== 'structure' ? this.mode : mode, this.rolloutId ?? undefined);
    document.body.dataset.ready = 'true';
  }

  private showMessage(text: string | null): void {
    this.message.hidden = text === null;
    this.message.textContent = text ?? '';
  }

  async setMode(mode: GraphMode, rolloutId?: string): Promise<void> {
    this.mode = mode;
    if (rolloutId) this.rolloutId = rolloutId;
    this.client.setState({ mode, rolloutId: this.rolloutId ?? undefined });
    for (const r of Array.from(this.modeGroup.querySelectorAll<HTMLElement & { checked: boolean }>('vscode-radio'))) r.checked = r.dataset.mode === mode;
    this.rolloutPicker.hidden = mode !== 'rollout';
    this.runPicker.hidden = mode !== 'aggregate';
    this.pathLine.hidden = true;
    this.showMessage(null);
    if (!this.graph) return;
    if (mode === 'rollout') await this.loadRollouts();
    else if (mode === 'aggregate') await Promise.all([this.loadRuns(), this.loadAggregate()]);
    else this.render();
  }

  private async refresh(): Promise<void> {
    if (!this.graph) return;
    if (this.mode === 'aggregate') await Promise.all([this.loadRuns(), this.loadAggregate()]);
    else if (this.mode === 'rollout') await this.loadRollouts(false);
  }

  private async loadRollouts(showLatest = true): Promise<void> {
    try {
      const list = await this.client.request('rollouts/list', { limit: ROLLOUT_PICKER_LIMIT });
      this.rollouts = list.rollouts;
    } catch (err) {
      this.showMessage(`Cannot list rollouts: ${(err as Error).message}`);
      return;
    }
    let id = this.rolloutId;
    if (!id && showLatest) id = this.rollouts.find((r) => r.status !== 'running')?.id ?? this.rollouts[0]?.id ?? null;
    this.fillRolloutPicker(id);
    if (!id) {
      this.rollout = null;
      this.showMessage('No rollouts yet: run some (Rollout Lab: Run Rollouts) to see the path they take.');
      this.render();
      return;
    }
    if (this.mode === 'rollout' && (id !== this.rollout?.rolloutId || !showLatest)) await this.showRollout(id);
    else this.render();
  }

  private fillRolloutPicker(selected: string | null): void {
    const opts = this.rollouts.map((r) => rolloutOption(r, r.id === selected));
    if (selected && !this.rollouts.some((r) => r.id === selected)) {
      opts.unshift({ label: `rollout ${selected.slice(0, 8)}… (older than the list)`, value: selected, description: '', selected: true, disabled: false });
    }
    this.rolloutPicker.options = opts;
    if (selected) this.rolloutPicker.value = selected;
    this.titleRolloutPicker();
  }

  private titleRolloutPicker(): void {
    const id = this.rolloutPicker.value;
    const r = this.rollouts.find((x) => x.id === id);
    this.rolloutPicker.title = id ? `Rollout ${id}${r ? ` · ${r.runId}` : ''}` : '';
  }

  async showRollout(id: string): Promise<void> {
    const seq = ++this.loadSeq;
    this.rolloutId = id;
    this.client.setState({ rolloutId: id });
    if (this.rolloutPicker.value !== id) this.fillRolloutPicker(id);
    try {
      const overlay = await this.client.request('graph/rolloutOverlay', { rolloutId: id });
      if (seq !== this.loadSeq) return;
      this.rollout = overlay;
      this.showMessage(null);
    } catch (err) {
      if (seq !== this.loadSeq) return;
      this.rollout = null;
      this.showMessage(`Cannot show rollout ${id}: ${(err as Error).message}`);
    }
    this.render();
  }

  private async loadRuns(): Promise<void> {
    await fillRunPicker(this.client, this.runPicker, this.runId);
  }

  private async loadAggregate(): Promise<void> {
    const seq = ++this.loadSeq;
    try {
      const a = await this.client.request('graph/aggregate', this.runId ? { runId: this.runId } : {});
      if (seq !== this.loadSeq) return;
      this.aggregate = a;
      this.showMessage(a.rollouts ? null : 'No finished rollouts yet: the figures appear as rollouts finish.');
    } catch (err) {
      if (seq !== this.loadSeq) return;
      this.aggregate = null;
      this.showMessage(`Cannot compute the aggregate: ${(err as Error).message}`);
    }
    this.render();
  }

  private render(): void {
    if (!this.graph) return;
    this.canvas.apply({ mode: this.mode, rollout: this.rollout, aggregate: this.aggregate });
    this.inspect(null);
    const g = this.graph;
    const agents = g.nodes.filter((n) => n.kind === 'agent').length;
    const source = g.source === 'module' ? 'your graph module' : g.source === 'command' ? 'your command agent, as observed' : 'research lab';
    if (this.mode === 'rollout' && this.rollout) {
      const r = this.rollouts.find((x) => x.id === this.rollout!.rolloutId);
      const loops = Object.values(this.rollout.visits).filter((v) => v > 1).length;
      const reward = r?.finalReward != null ? ` · reward ${r.finalReward.toFixed(3)}` : '';
      this.status.textContent = `${this.rollout.path.length} steps · ${loops} revisited`;
      this.status.title = `${this.rollout.path.length} node visits; ${loops} node${loops === 1 ? '' : 's'} visited more than once${reward}`;
      this.pathLine.hidden = false;
      this.pathLine.textContent = `Path: ${this.rollout.path.join(' → ')}`;
    } else if (this.mode === 'aggregate' && this.aggregate) {
      const a = this.aggregate;
      this.status.textContent = `${formatCount(a.rollouts)} rollouts${this.runId ? ` in ${this.runId}` : ''}`;
      this.status.title = `Visits, errors and rewards over ${formatCount(a.rollouts)} finished rollouts; latency percentiles, retries, tool nodes and edge counts over the spans of the ${formatCount(a.spanSample)} most recent.`;
    } else {
      this.status.textContent = `${source} · ${agents} agents · ${g.nodes.length} nodes · ${g.edges.length} edges`;
      this.status.title = this.status.textContent;
    }
  }
}
