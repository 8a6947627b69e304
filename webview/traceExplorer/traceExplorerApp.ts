import type { RolloutRecord } from '../../src/core/store/types';
import type { SpanRecord } from '../../src/core/trace/span';
import type { HostClient } from '../shared/hostClient';
import { formatInt } from './format';
import { TraceView, type ViewMemory } from './traceView';

/** Spans in the first page of a rollout (enough for the first screens of rows) and in each page after it. */
const FIRST_PAGE = 1000;
const PAGE = 10_000;

/**
 * The trace explorer: loads one rollout's spans from the host, a first page
 * then the rest, reloads a rollout that is still running when the store
 * changes, and brings back the view the panel had before a reload; the
 * TraceView shows what it loads. The state that matters after a window
 * reload goes to setState, so the panel serializer can bring the same view back.
 */
export class TraceExplorerApp {
  private readonly view: TraceView;
  private loadSeq = 0;
  /** The load in flight: a `trace/show` for the same rollout joins it instead of starting another. */
  private inflight: { id: string; memory: ViewMemory } | null = null;
  /** The view the panel had before it was discarded or the window reloaded, until the host says what it wants shown. */
  private saved: { rolloutId: string; memory: ViewMemory } | null = null;
  private reloading = false;
  private reloadAgain = false;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'traceExplorer'>,
  ) {
    this.view = new TraceView(root, client);
  }

  /**
   * Registers for notifications and keeps the rollout the panel had before a
   * reload, if any, to show once the host has replayed its requests (see start).
   */
  listen(): void {
    const st = this.client.getState();
    if (st.rolloutId) this.saved = { rolloutId: st.rolloutId, memory: { node: st.node, selected: st.selected, collapsed: st.collapsed, search: st.search } };
    this.client.on('trace/show', (p) => this.onShow(p.rolloutId, p.node));
    this.client.on('store/changed', () => void this.onStoreChanged());
  }

  /**
   * Shows the saved rollout once the host has replayed its requests and none
   * of them asked for another rollout, so an older rollout never shows first
   * (the panel reloads when it is shown again after being hidden).
   */
  start(replayed: Promise<void>): void {
    void replayed.then(() => {
      const saved = this.saved;
      this.saved = null;
      if (this.inflight || this.view.shown) return;
      if (saved) void this.open(saved.rolloutId, saved.memory);
      else this.view.showMessage('No rollout selected. Open one from the Rollouts view, or run “Rollout Lab: Open Trace Explorer”.');
    });
  }

  /**
   * `trace/show`: another rollout loads; the rollout already shown (or loading,
   * as after a window reload, where the host repeats what the restored state
   * says) keeps its view and only moves to the node, if one is named.
   */
  private onShow(rolloutId: string, node: string | undefined): void {
    // The host repeating, after a window reload, the rollout the saved view shows: that view comes back whole.
    const saved = this.saved;
    this.saved = null;
    if (saved?.rolloutId === rolloutId && !this.inflight && !this.view.shown) {
      void this.open(rolloutId, { ...saved.memory, node: node ?? saved.memory.node });
      return;
    }
    if (this.inflight?.id === rolloutId) {
      if (node) this.inflight.memory.node = node;
      return;
    }
    if (this.view.shown && this.view.rollout?.id === rolloutId) {
      if (node && node !== this.view.node) {
        this.view.goToNode(node);
      } else if (this.view.rollout.status === 'running') {
        void this.onStoreChanged();
      }
      return;
    }
    void this.open(rolloutId, { node });
  }

  private async open(rolloutId: string, memory: ViewMemory = {}, keepView = false): Promise<void> {
    const seq = ++this.loadSeq;
    this.inflight = { id: rolloutId, memory };
    if (!keepView) {
      this.client.setState({ rolloutId, node: memory.node, selected: undefined, collapsed: undefined, search: undefined });
      if (this.view.rollout?.id !== rolloutId) {
        this.view.drop();
        this.view.showMessage(`Loading rollout ${rolloutId}…`);
      }
    }
    let res: { rollout: RolloutRecord; spans: SpanRecord[]; total?: number };
    document.body.dataset.requestAt = String(performance.now());
    try {
      res = await this.client.request('trace/get', { rolloutId, limit: FIRST_PAGE });
    } catch (err) {
      if (seq === this.loadSeq) {
        this.inflight = null;
        this.view.showMessage(`Could not load rollout ${rolloutId}: ${(err as Error).message}`, true);
      }
      return;
    }
    if (seq !== this.loadSeq) return;
    this.inflight = null;
    performance.mark('rl:data');
    document.body.dataset.dataAt = String(performance.now());
    if (keepView && this.view.shown) {
      // A reload of the shown rollout (it was still running): keep what the user had open and selected.
      memory = { ...this.view.memory(), ...memory };
    }
    const total = res.total ?? res.spans.length;
    document.body.dataset.spansTotal = String(total);
    this.view.show(res.rollout, res.spans, memory);
    if (res.spans.length < total) await this.loadRest(seq, res.rollout, res.spans, total);
  }

  /**
   * The rest of a large rollout, in pages after the first: the rows the first
   * page drew stay usable meanwhile, and the whole trace replaces them (with
   * the user's selection, expansion and search) once every span is here.
   */
  private async loadRest(seq: number, rollout: RolloutRecord, first: SpanRecord[], total: number): Promise<void> {
    const spans = first.slice();
    while (spans.length < total) {
      this.view.showMessage(`Loading spans: ${formatInt(spans.length)} of ${formatInt(total)}… Until then the totals and search cover the first ${formatInt(first.length)}.`);
      let page: { spans: SpanRecord[]; total?: number };
      try {
        page = await this.client.request('trace/get', { rolloutId: rollout.id, offset: spans.length, limit: PAGE });
      } catch (err) {
        if (seq === this.loadSeq) this.view.showMessage(`Could not load the rest of rollout ${rollout.id} (${formatInt(spans.length)} of ${formatInt(total)} spans shown): ${(err as Error).message}`, true);
        return;
      }
      if (seq !== this.loadSeq) return;
      if (!page.spans.length) break;
      for (const sp of page.spans) spans.push(sp);
    }
    this.view.show(rollout, spans, { ...this.view.memory(), node: this.view.node });
  }

  private async onStoreChanged(): Promise<void> {
    if (!this.view.rollout || this.view.rollout.status !== 'running') return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = true;
    try {
      do {
        this.reloadAgain = false;
        await this.open(this.view.rollout.id, {}, true);
      } while (this.reloadAgain && this.view.rollout?.status === 'running');
    } finally {
      this.reloading = false;
    }
  }
}
