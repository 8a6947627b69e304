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
import { TraceToolbar } from './traceToolbar';
import { computeTotals } from './traceTotals';
import { TreeView } from './treeView';

/** Collapsed spans are kept in the panel state only while the list stays small. */
const MAX_SAVED_COLLAPSED = 2000;

/** What a view of a trace keeps across a reload of its spans or of the window, by span id. */
export interface ViewMemory {
  selected?: string;
  collapsed?: string[];
  search?: string;
  node?: string;
}

/**
 * One rollout's trace on screen: header, span tree, details and footer, and
 * what the user does there (expand and collapse, search, select, jump to a
 * graph node's visits). It saves that view to the panel state as it changes;
 * where the spans come from is the app's business.
 */
export class TraceView {
  private readonly header = el('header', 'te-header');
  private readonly toolbar: TraceToolbar;
  private readonly split: HTMLElement;
  private readonly tree: TreeView;
  private readonly details = el('div', 'te-details');
  private readonly footer = el('footer', 'te-footer');
  private readonly message = el('div', 'te-message');

  /** The rollout last shown: it stays while another one loads. */
  private current: RolloutRecord | null = null;
  private model: TraceModel | null = null;
  private finder: SpanSearch | null = null;
  private collapsed: Uint8Array = new Uint8Array(0);
  /** The collapsed set from before a search, put back when the search is cleared. */
  private beforeSearch: Uint8Array | null = null;
  private query = '';
  private selected = -1;
  private toolSpans = new Map<string, number>();
  /** The graph node the view was asked to show, if any. */
  private askedNode: string | undefined;
  private saveTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    root: HTMLElement,
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
    this.toolbar = new TraceToolbar({
      search: (q) => this.setQuery(q),
      focusTree: () => this.tree.focus(),
      setAllCollapsed: (collapse) => this.setAllCollapsed(collapse),
    });

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

    root.classList.add('te-app');
    root.append(this.header, this.toolbar.element, this.message, this.split, this.footer);
  }

  /** The rollout last shown: it stays while another one loads. */
  get rollout(): RolloutRecord | null {
    return this.current;
  }

  /** The graph node the view was asked to show, if any. */
  get node(): string | undefined {
    return this.askedNode;
  }

  /** Whether a trace is on screen (none while another rollout loads). */
  get shown(): boolean {
    return this.model !== null;
  }

  /** Another rollout is loading: the trace shown goes (its rollout record stays until the new one comes). */
  drop(): void {
    this.model = null;
  }

  showMessage(text: string, error = false): void {
    this.message.textContent = text;
    this.message.className = `te-message${error ? ' te-error-text' : ''}`;
    this.message.hidden = false;
  }

  /** What the view has open, selected and searched, by span id: it survives a reload of the trace. */
  memory(): ViewMemory {
    const m = this.model;
    if (!m) return {};
    const collapsed: string[] = [];
    const set = this.beforeSearch ?? this.collapsed;
    for (let i = 0; i < set.length; i++) if (set[i]) collapsed.push(m.spans[i]!.spanId);
    return { selected: m.spans[this.selected]?.spanId, collapsed, search: this.query || undefined };
  }

  show(rollout: RolloutRecord, spans: SpanRecord[], memory: ViewMemory): void {
    const m = buildTraceModel(spans);
    this.current = rollout;
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
    this.askedNode = memory.node;
    document.body.dataset.rolloutId = rollout.id;
    document.body.dataset.spansShown = String(spans.length);

    renderHeader(this.header, rollout, m.spans.find((s) => s.kind === 'rollout'), isSimulated(rollout, spans), m.inCycle);
    renderFooter(this.footer, computeTotals(m.spans));
    this.message.hidden = true;
    if (!m.spans.length) this.showMessage(rollout.status === 'running' ? 'This rollout is still running; its spans appear as they finish.' : 'This rollout has no spans.');

    this.tree.setModel(m);
    this.selected = -1;
    const q = memory.search ?? '';
    this.toolbar.setQuery(q);
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

  /** Moves to a graph node's first visit, opening every visit, and saves the node with the view. */
  goToNode(node: string): void {
    this.askedNode = node;
    const i = this.focusNode(node);
    if (i >= 0) {
      this.select(i);
      this.tree.reveal(i, true);
    }
    this.client.setState({ node });
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
    this.toolbar.setInfo(first < 0 ? `Node ${node} did not run in this rollout` : `Node ${node}: ${visits} visit${visits === 1 ? '' : 's'}`);
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
        this.toolbar.setInfo(`${formatInt(r.count)} of ${formatInt(m.spans.length)} spans match`);
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
      this.toolbar.setInfo('');
      if (this.selected >= 0) revealIndex(m, this.collapsed, this.selected);
    }
    this.query = query;
    this.toolbar.showClear(query);
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
      if (!this.current) return;
      const mem = this.memory();
      this.client.setState({
        rolloutId: this.current.id,
        selected: mem.selected,
        collapsed: mem.collapsed && mem.collapsed.length <= MAX_SAVED_COLLAPSED ? mem.collapsed : undefined,
        search: mem.search,
      });
    }, 150);
  }
}
