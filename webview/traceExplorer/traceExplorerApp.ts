import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import type { RolloutRecord } from '../../src/core/store/types';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import type { HostClient } from '../shared/hostClient';
import { renderDetails } from './detailsPane';
import { el } from './dom';
import { formatInt } from './format';
import { SpanSearch, highlightMatches } from './spanSearch';
import { renderFooter } from './traceFooter';
import { isSimulated, renderHeader } from './traceHeader';
import { buildTraceModel, hasChildren, keepForMatches, revealIndex, visibleRows, type TraceModel } from './traceModel';
import { computeTotals } from './traceTotals';
import { TreeView } from './treeView';

/** Spans in the first page of a rollout (enough for the first screens of rows) and in each page after it. */
const FIRST_PAGE = 1000;
const PAGE = 10_000;
/** Collapsed spans are kept in the panel state only while the list stays small. */
const MAX_SAVED_COLLAPSED = 2000;

interface ViewMemory {
  selected?: string;
  collapsed?: string[];
  search?: string;
  node?: string;
}

/**
 * The trace explorer: loads one rollout's spans from the host, keeps the
 * view state (expanded spans, search, selection), and drives the tree,
 * details, header and footer. The state that matters after a window reload
 * goes to setState, so the panel serializer can bring the same view back.
 */
export class TraceExplorerApp {
  private readonly header = el('header', 'te-header');
  private readonly search: VscodeTextfield;
  private readonly searchInfo = el('span', 'te-search-info te-muted');
  private readonly clearSearch = el('button', 'te-search-clear codicon codicon-close');
  private readonly split: HTMLElement;
  private readonly tree: TreeView;
  private readonly details = el('div', 'te-details');
  private readonly footer = el('footer', 'te-footer');
  private readonly message = el('div', 'te-message');

  private rollout: RolloutRecord | null = null;
  private model: TraceModel | null = null;
  private finder: SpanSearch | null = null;
  private collapsed: Uint8Array = new Uint8Array(0);
  /** The collapsed set from before a search, put back when the search is cleared. */
  private beforeSearch: Uint8Array | null = null;
  private query = '';
  private selected = -1;
  private toolSpans = new Map<string, number>();
  private loadSeq = 0;
  /** The load in flight: a `trace/show` for the same rollout joins it instead of starting another. */
  private inflight: { id: string; memory: ViewMemory } | null = null;
  /** The view the panel had before it was discarded or the window reloaded, until the host says what it wants shown. */
  private saved: { rolloutId: string; memory: ViewMemory } | null = null;
  private node: string | undefined;
  private reloading = false;
  private reloadAgain = false;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: HostClient<'traceExplorer'>,
  ) {
    this.tree = new TreeView({
      select: (i) => this.select(i),
      toggle: (i, expand) => this.toggle(i, expand),
      activate: (i) => {
        this.select(i);
        this.details.focus();
      },
    });

    const toolbar = el('div', 'toolbar te-toolbar');
    this.search = document.createElement('vscode-textfield') as VscodeTextfield;
    this.search.className = 'te-search';
    this.search.placeholder = 'Search span names and content  ( / )';
    this.search.setAttribute('aria-label', 'Search spans');
    this.search.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.setQuery(this.search.value), 120);
    });
    this.search.addEventListener('keydown', (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        if (this.search.value) {
          this.search.value = '';
          this.setQuery('');
        } else {
          this.tree.focus();
        }
      } else if (e.key === 'Enter' || e.key === 'ArrowDown') {
        e.preventDefault();
        this.setQuery(this.search.value);
        this.tree.focus();
      }
    });
    this.clearSearch.type = 'button';
    this.clearSearch.setAttribute('aria-label', 'Clear search');
    this.clearSearch.title = 'Clear search (Escape)';
    this.clearSearch.hidden = true;
    this.clearSearch.addEventListener('click', () => {
      this.search.value = '';
      this.setQuery('');
      this.search.focus();
    });
    const expandAll = this.button('Expand all', () => this.setAllCollapsed(false));
    const collapseAll = this.button('Collapse all', () => this.setAllCollapsed(true));
    toolbar.append(this.search, this.clearSearch, this.searchInfo, el('span', 'te-spacer-flex'), expandAll, collapseAll);

    this.details.tabIndex = 0;
    this.details.setAttribute('role', 'region');
    this.details.setAttribute('aria-label', 'Span details');
    this.details.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.tree.focus();
      }
    });
    this.tree.element.slot = 'start';
    this.details.slot = 'end';
    this.split = document.createElement('vscode-split-layout');
    this.split.className = 'te-split';
    this.split.setAttribute('split', 'vertical');
    this.split.setAttribute('initial-handle-position', '58%');
    this.split.setAttribute('min-start', '240px');
    this.split.setAttribute('min-end', '200px');
    this.split.append(this.tree.element, this.details);

    this.root.classList.add('te-app');
    this.root.append(this.header, toolbar, this.message, this.split, this.footer);
    document.addEventListener('keydown', (e) => this.onGlobalKey(e));
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
      if (this.inflight || this.model) return;
      if (saved) void this.open(saved.rolloutId, saved.memory);
      else this.showMessage('No rollout selected. Open one from the Rollouts view, or run “Rollout Lab: Open Trace Explorer”.');
    });
  }

  private button(label: string, onClick: () => void): HTMLElement {
    const b = document.createElement('vscode-button');
    b.textContent = label;
    b.setAttribute('secondary', '');
    b.addEventListener('click', onClick);
    return b;
  }

  private showMessage(text: string, error = false): void {
    this.message.textContent = text;
    this.message.className = `te-message${error ? ' te-error-text' : ''}`;
    this.message.hidden = false;
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
    if (saved?.rolloutId === rolloutId && !this.inflight && !this.model) {
      void this.open(rolloutId, { ...saved.memory, node: node ?? saved.memory.node });
      return;
    }
    if (this.inflight?.id === rolloutId) {
      if (node) this.inflight.memory.node = node;
      return;
    }
    if (this.model && this.rollout?.id === rolloutId) {
      if (node && node !== this.node) {
        this.node = node;
        const i = this.focusNode(node);
        if (i >= 0) {
          this.select(i);
          this.tree.reveal(i, true);
        }
        this.client.setState({ node });
      } else if (this.rollout.status === 'running') {
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
      if (this.rollout?.id !== rolloutId) {
        this.model = null;
        this.showMessage(`Loading rollout ${rolloutId}…`);
      }
    }
    let res: { rollout: RolloutRecord; spans: SpanRecord[]; total?: number };
    document.body.dataset.requestAt = String(performance.now());
    try {
      res = await this.client.request('trace/get', { rolloutId, limit: FIRST_PAGE });
    } catch (err) {
      if (seq === this.loadSeq) {
        this.inflight = null;
        this.showMessage(`Could not load rollout ${rolloutId}: ${(err as Error).message}`, true);
      }
      return;
    }
    if (seq !== this.loadSeq) return;
    this.inflight = null;
    performance.mark('rl:data');
    document.body.dataset.dataAt = String(performance.now());
    if (keepView && this.model) {
      // A reload of the shown rollout (it was still running): keep what the user had open and selected.
      memory = { ...this.memory(), ...memory };
    }
    const total = res.total ?? res.spans.length;
    document.body.dataset.spansTotal = String(total);
    this.show(res.rollout, res.spans, memory);
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
      this.showMessage(`Loading spans: ${formatInt(spans.length)} of ${formatInt(total)}… Until then the totals and search cover the first ${formatInt(first.length)}.`);
      let page: { spans: SpanRecord[]; total?: number };
      try {
        page = await this.client.request('trace/get', { rolloutId: rollout.id, offset: spans.length, limit: PAGE });
      } catch (err) {
        if (seq === this.loadSeq) this.showMessage(`Could not load the rest of rollout ${rollout.id} (${formatInt(spans.length)} of ${formatInt(total)} spans shown): ${(err as Error).message}`, true);
        return;
      }
      if (seq !== this.loadSeq) return;
      if (!page.spans.length) break;
      for (const sp of page.spans) spans.push(sp);
    }
    this.show(rollout, spans, { ...this.memory(), node: this.node });
  }

  private memory(): ViewMemory {
    const m = this.model;
    if (!m) return {};
    const collapsed: string[] = [];
    const set = this.beforeSearch ?? this.collapsed;
    for (let i = 0; i < set.length; i++) if (set[i]) collapsed.push(m.spans[i]!.spanId);
    return { selected: m.spans[this.selected]?.spanId, collapsed, search: this.query || undefined };
  }

  private show(rollout: RolloutRecord, spans: SpanRecord[], memory: ViewMemory): void {
    const m = buildTraceModel(spans);
    this.rollout = rollout;
    this.model = m;
    this.finder = new SpanSearch(m.spans);
    this.toolSpans = new Map();
    for (let i = 0; i < m.spans.length; i++) {
      const id = m.spans[i]!.kind === 'tool' ? m.spans[i]!.attributes[Attr.toolCallId] : undefined;
      if (typeof id === 'string' && id) this.toolSpans.set(id, i);
    }
    this.collapsed = new Uint8Array(m.spans.length);
    for (const id of memory.collapsed ?? []) {
      const i = m.indexById.get(id);
      if (i !== undefined) this.collapsed[i] = 1;
    }
    this.beforeSearch = null;
    this.query = '';
    this.node = memory.node;
    document.body.dataset.rolloutId = rollout.id;
    document.body.dataset.spansShown = String(spans.length);

    renderHeader(this.header, rollout, m.spans.find((s) => s.kind === 'rollout'), isSimulated(rollout, spans));
    renderFooter(this.footer, computeTotals(m.spans));
    this.message.hidden = true;
    if (!m.spans.length) this.showMessage(rollout.status === 'running' ? 'This rollout is still running; its spans appear as they finish.' : 'This rollout has no spans.');

    this.tree.setModel(m);
    this.selected = -1;
    const q = memory.search ?? '';
    this.search.value = q;
    this.clearSearch.hidden = !q;
    if (q) this.setQuery(q, false);
    else this.refreshRows();

    let sel = memory.selected ? (m.indexById.get(memory.selected) ?? -1) : -1;
    if (sel < 0 && memory.node) sel = this.focusNode(memory.node);
    if (sel < 0 && m.spans.length) sel = 0;
    if (sel >= 0) {
      if (!q) {
        revealIndex(m, this.collapsed, sel);
        this.refreshRows();
      }
      this.select(sel);
      this.tree.reveal(sel, true);
    } else {
      renderDetails(this.details, m, -1, this.links());
    }
    performance.mark('rl:rendered');
    document.body.dataset.renderedAt = String(performance.now());
    requestAnimationFrame(() =>
      setTimeout(() => {
        performance.mark('rl:painted');
        document.body.dataset.paintedAt = String(performance.now());
      }, 0),
    );
  }

  /** Opens every visit of a graph node and returns the first, for `trace/show` with a node. */
  private focusNode(node: string): number {
    const m = this.model!;
    let first = -1;
    let visits = 0;
    for (let i = 0; i < m.spans.length; i++) {
      const s = m.spans[i]!;
      if (s.kind !== 'node' || (s.attributes[Attr.nodeName] ?? s.name) !== node) continue;
      visits++;
      if (first < 0) first = i;
      this.collapsed[i] = 0;
      revealIndex(m, this.collapsed, i);
    }
    this.refreshRows();
    this.searchInfo.textContent = first < 0 ? `Node ${node} did not run in this rollout` : `Node ${node}: ${visits} visit${visits === 1 ? '' : 's'}`;
    return first;
  }

  private refreshRows(): void {
    const m = this.model;
    if (!m) return;
    let keep: Uint8Array | null = null;
    let keptChild: Uint8Array | null = null;
    let match: Uint8Array | null = null;
    if (this.query) {
      const r = this.finder!.match(this.query);
      if (r) {
        match = r.match;
        ({ keep, keptChild } = keepForMatches(m, r.match));
        this.searchInfo.textContent = `${formatInt(r.count)} of ${formatInt(m.spans.length)} spans match`;
      }
    }
    const rows = visibleRows(m, this.collapsed, keep);
    if (this.selected >= 0 && keep && !keep[this.selected]) this.selected = -1;
    this.tree.setRows({ rows, collapsed: this.collapsed, match, keptChild, selected: this.selected });
  }

  private setQuery(q: string, save = true): void {
    const m = this.model;
    const query = q.trim();
    if (!m || query === this.query) return;
    if (query && !this.query) {
      // Searching opens everything that leads to a match; the user's own expand state comes back afterwards.
      this.beforeSearch = this.collapsed;
      this.collapsed = new Uint8Array(m.spans.length);
    } else if (query) {
      this.collapsed.fill(0);
    } else {
      this.collapsed = this.beforeSearch ?? new Uint8Array(m.spans.length);
      this.beforeSearch = null;
      this.searchInfo.textContent = '';
      if (this.selected >= 0) revealIndex(m, this.collapsed, this.selected);
    }
    this.query = query;
    this.clearSearch.hidden = !query;
    highlightMatches(this.details, query);
    const before = this.selected;
    this.refreshRows();
    if (this.selected < 0 && query) {
      // Select the first match, so the details pane follows the search.
      const r = this.finder!.match(query);
      const first = r ? r.match.indexOf(1) : -1;
      if (first >= 0) this.select(first);
    } else if (before >= 0) {
      this.tree.reveal(before, true);
    }
    if (save) this.saveSoon();
  }

  private select(i: number): void {
    const m = this.model;
    if (!m || i < 0 || i >= m.spans.length) return;
    if (this.tree.positionOf(i) < 0) {
      revealIndex(m, this.collapsed, i);
      this.refreshRows();
    }
    const changed = i !== this.selected;
    this.selected = i;
    this.tree.setSelected(i);
    this.tree.reveal(i);
    if (changed || this.details.dataset.spanId !== m.spans[i]!.spanId) {
      renderDetails(this.details, m, i, this.links());
      highlightMatches(this.details, this.query);
      this.details.scrollTop = 0;
    }
    this.saveSoon();
  }

  private toggle(i: number, expand: boolean): void {
    const m = this.model;
    if (!m || !hasChildren(m, i)) return;
    this.collapsed[i] = expand ? 0 : 1;
    this.refreshRows();
    // A collapse that hides the selected span moves the selection to the collapsed row.
    if (this.selected >= 0 && this.tree.positionOf(this.selected) < 0) this.select(i);
    this.saveSoon();
  }

  private setAllCollapsed(collapse: boolean): void {
    const m = this.model;
    if (!m) return;
    for (let i = 0; i < m.spans.length; i++) this.collapsed[i] = collapse && m.parent[i]! >= 0 && hasChildren(m, i) ? 1 : 0;
    this.refreshRows();
    if (this.selected >= 0 && this.tree.positionOf(this.selected) < 0) {
      let p = this.selected;
      while (p >= 0 && this.tree.positionOf(p) < 0) p = m.parent[p]!;
      this.select(Math.max(p, 0));
    }
    this.saveSoon();
  }

  private links(): Parameters<typeof renderDetails>[3] {
    return {
      openPrompt: (agent) => this.client.command('prompt/open', { agent }),
      selectSpan: (i) => {
        this.select(i);
        this.tree.reveal(i, true);
      },
      toolSpan: (callId) => {
        const i = this.toolSpans.get(callId);
        if (i === undefined) return null;
        const s = this.model!.spans[i]!;
        const r = s.attributes[Attr.toolResult];
        return { index: i, result: typeof r === 'string' ? r : r === undefined ? null : JSON.stringify(r), error: s.status === 'error' ? (s.statusMessage ?? 'error') : null };
      },
    };
  }

  private saveSoon(): void {
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => {
      if (!this.rollout) return;
      const mem = this.memory();
      this.client.setState({
        rolloutId: this.rollout.id,
        selected: mem.selected,
        collapsed: mem.collapsed && mem.collapsed.length <= MAX_SAVED_COLLAPSED ? mem.collapsed : undefined,
        search: mem.search,
      });
    }, 150);
  }

  private async onStoreChanged(): Promise<void> {
    if (!this.rollout || this.rollout.status !== 'running') return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = true;
    try {
      do {
        this.reloadAgain = false;
        await this.open(this.rollout.id, {}, true);
      } while (this.reloadAgain && this.rollout?.status === 'running');
    } finally {
      this.reloading = false;
    }
  }

  private onGlobalKey(e: KeyboardEvent): void {
    const path = e.composedPath();
    const typing = path.some((t) => t instanceof HTMLElement && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'VSCODE-TEXTFIELD'));
    if (((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'f') || (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey)) {
      e.preventDefault();
      this.search.focus();
    }
  }
}
