import { Attr, type SpanKind } from '../../src/core/trace/span';
import { codicon, el } from './dom';
import { formatInt, formatMs, formatScore } from './format';
import { TimeAxis, TRACK_PAD } from './timeAxis';
import { rewardLook } from './rewardBreakdown';
import { hasChildren, type TraceModel } from './traceModel';

/** Fixed row height: row positions are arithmetic, never measured. */
export const ROW_HEIGHT = 22;
/** Rows rendered above and below the viewport, so a fast scroll does not show gaps. */
const OVERSCAN = 10;

export const KIND_ICON: Record<SpanKind, string> = {
  rollout: 'pulse',
  node: 'symbol-class',
  llm: 'comment-discussion',
  tool: 'tools',
  reward: 'star-full',
};

/** What the tree asks the app to do; the app owns the state and hands back new rows. */
export interface TreeIntents {
  select(index: number): void;
  toggle(index: number, expand: boolean): void;
  /** Enter: show the details of the row (and move focus there). */
  activate(index: number): void;
}

export interface TreeRows {
  /** Model indices of the visible rows, in order. */
  rows: Int32Array;
  collapsed: Uint8Array;
  /** While searching: which spans match (highlighted) and which have a kept child (twisty shown). */
  match: Uint8Array | null;
  keptChild: Uint8Array | null;
  selected: number;
}

interface RowEl {
  root: HTMLDivElement;
  name: HTMLDivElement;
  twisty: HTMLSpanElement;
  icon: HTMLSpanElement;
  label: HTMLSpanElement;
  meta: HTMLSpanElement;
  bar: HTMLDivElement;
  barLabel: HTMLSpanElement;
  node: number;
  stamp: number;
}

/**
 * The span tree and its waterfall as one virtualised list: one scrolling
 * viewport, a spacer as tall as all rows, and only the rows in view (plus
 * overscan) in the DOM, recycled as it scrolls. Each row holds the tree cell
 * (indent, twisty, icon, name) and the waterfall cell (a bar placed in percent
 * of the rollout's time span), so the two always line up.
 */
export class TreeView {
  readonly element: HTMLDivElement;
  readonly viewport: HTMLDivElement;
  private readonly spacer: HTMLDivElement;
  private readonly rowsEl: HTMLDivElement;
  private readonly axis = new TimeAxis();
  private readonly pool: RowEl[] = [];
  private model: TraceModel | null = null;
  private state: TreeRows = { rows: new Int32Array(0), collapsed: new Uint8Array(0), match: null, keptChild: null, selected: -1 };
  /** Position of each model index in `rows` (-1 when hidden), rebuilt with the rows. */
  private position = new Int32Array(0);
  private stamp = 0;
  private viewHeight = 0;
  private scrollTop = 0;
  private scale = 0;

  constructor(private readonly intents: TreeIntents) {
    this.element = el('div', 'te-tree-pane');
    const heads = el('div', 'te-colheads');
    const nameHead = el('div', 'te-colhead-name', 'Span');
    const timeHead = el('div', 'te-colhead-time');
    timeHead.append(this.axis.element);
    heads.append(nameHead, timeHead);

    this.viewport = el('div', 'te-viewport');
    this.viewport.tabIndex = 0;
    this.viewport.setAttribute('role', 'tree');
    this.viewport.setAttribute('aria-label', 'Spans');
    this.spacer = el('div', 'te-spacer');
    this.rowsEl = el('div', 'te-rows');
    this.rowsEl.setAttribute('role', 'presentation');
    this.spacer.append(this.rowsEl);
    this.viewport.append(this.spacer);
    this.element.append(heads, this.viewport);
    this.element.style.setProperty('--te-row-height', `${ROW_HEIGHT}px`);
    this.element.style.setProperty('--te-track-pad', `${TRACK_PAD}px`);

    this.viewport.addEventListener('scroll', () => {
      this.scrollTop = this.viewport.scrollTop;
      this.render();
    });
    new ResizeObserver((entries) => {
      const h = entries[entries.length - 1]!.contentRect.height;
      if (h !== this.viewHeight) {
        this.viewHeight = h;
        this.render();
      }
    }).observe(this.viewport);
    this.viewport.addEventListener('keydown', (e) => this.onKey(e));
    this.rowsEl.addEventListener('click', (e) => this.onClick(e));
    this.rowsEl.addEventListener('dblclick', (e) => {
      const i = this.rowIndexOf(e.target);
      if (i >= 0 && this.expandable(i)) this.intents.toggle(i, !!this.state.collapsed[i]);
    });
  }

  setModel(model: TraceModel): void {
    this.model = model;
    this.scale = 100 / Math.max(model.t1 - model.t0, 1e-6);
    this.axis.setDuration(model.t1 - model.t0);
    this.viewport.scrollTop = 0;
    this.scrollTop = 0;
    for (const r of this.pool) r.node = -1;
  }

  /** Selection only: the rows stay, their classes change. */
  setSelected(index: number): void {
    this.state = { ...this.state, selected: index };
    this.stamp++;
    this.render();
  }

  setRows(state: TreeRows): void {
    this.state = state;
    const n = this.model?.spans.length ?? 0;
    if (this.position.length !== n) this.position = new Int32Array(n);
    this.position.fill(-1);
    state.rows.forEach((node, p) => (this.position[node] = p));
    this.spacer.style.height = `${state.rows.length * ROW_HEIGHT}px`;
    this.stamp++;
    this.render();
  }

  /** The row's position in the visible list, or -1. */
  positionOf(index: number): number {
    return index >= 0 && index < this.position.length ? this.position[index]! : -1;
  }

  /** Scrolls so the row is in view; with `center`, into the middle (used when jumping from afar). */
  reveal(index: number, center = false): void {
    const p = this.positionOf(index);
    if (p < 0) return;
    const h = this.height();
    const top = p * ROW_HEIGHT;
    let next = this.scrollTop;
    if (center) next = top - h / 2 + ROW_HEIGHT / 2;
    else if (top < this.scrollTop) next = top;
    else if (top + ROW_HEIGHT > this.scrollTop + h) next = top + ROW_HEIGHT - h;
    next = Math.max(0, Math.min(next, this.state.rows.length * ROW_HEIGHT - h));
    if (next !== this.scrollTop) {
      this.scrollTop = next;
      this.viewport.scrollTop = next;
      this.render();
    }
  }

  focus(): void {
    this.viewport.focus();
  }

  /** The row elements in the DOM (for tests and the benchmark). */
  renderedRowCount(): number {
    return this.pool.filter((r) => r.root.isConnected && !r.root.hidden).length;
  }

  private height(): number {
    // Read once, before the ResizeObserver has reported: one layout read per load, not per row.
    if (!this.viewHeight) this.viewHeight = this.viewport.clientHeight || 600;
    return this.viewHeight;
  }

  private render(): void {
    const m = this.model;
    const rows = this.state.rows;
    if (!m) return;
    const h = this.height();
    const first = Math.max(0, Math.floor(this.scrollTop / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((this.scrollTop + h) / ROW_HEIGHT) + OVERSCAN);
    const count = Math.max(0, last - first);
    while (this.pool.length < count) this.pool.push(this.createRow());
    this.rowsEl.style.transform = `translateY(${first * ROW_HEIGHT}px)`;
    for (let k = 0; k < this.pool.length; k++) {
      const r = this.pool[k]!;
      if (k < count) {
        if (r.root.hidden) r.root.hidden = false;
        const node = rows[first + k]!;
        if (r.node !== node || r.stamp !== this.stamp) this.bind(r, node);
      } else if (!r.root.hidden) {
        r.root.hidden = true;
        r.node = -1;
      }
    }
    // aria-activedescendant may only name a row that is in the DOM.
    const sel = this.positionOf(this.state.selected);
    const active = sel >= first && sel < last ? `te-row-${this.state.selected}` : null;
    if (active !== this.viewport.getAttribute('aria-activedescendant')) {
      if (active) this.viewport.setAttribute('aria-activedescendant', active);
      else this.viewport.removeAttribute('aria-activedescendant');
    }
  }

  private createRow(): RowEl {
    const root = el('div', 'te-row');
    root.setAttribute('role', 'treeitem');
    const name = el('div', 'te-cell-name');
    const twisty = el('span', 'te-twisty codicon');
    twisty.setAttribute('aria-hidden', 'true');
    const icon = codicon('circle-small', 'te-kind-icon');
    const label = el('span', 'te-label');
    const meta = el('span', 'te-meta');
    name.append(twisty, icon, label, meta);
    const cell = el('div', 'te-cell-bar');
    const track = el('div', 'te-track');
    const bar = el('div', 'te-bar');
    const barLabel = el('span', 'te-bar-label');
    track.append(bar, barLabel);
    cell.append(track);
    root.append(name, cell);
    this.rowsEl.append(root);
    return { root, name, twisty, icon, label, meta, bar, barLabel, node: -1, stamp: -1 };
  }

  private expandable(i: number): boolean {
    const m = this.model!;
    return this.state.keptChild ? !!this.state.keptChild[i] : hasChildren(m, i);
  }

  private bind(r: RowEl, i: number): void {
    const m = this.model!;
    const s = m.spans[i]!;
    const st = this.state;
    const same = r.node === i;
    r.node = i;
    r.stamp = this.stamp;
    const expandable = this.expandable(i);
    const open = expandable && !st.collapsed[i];
    let cls = `te-row te-kind-${s.kind}`;
    if (i === st.selected) cls += ' te-selected';
    if (st.match?.[i]) cls += ' te-match';
    else if (st.match) cls += ' te-context';
    if (s.status === 'error') cls += ' te-error';
    r.root.className = cls;
    r.root.setAttribute('aria-selected', i === st.selected ? 'true' : 'false');
    if (expandable) r.root.setAttribute('aria-expanded', open ? 'true' : 'false');
    else r.root.removeAttribute('aria-expanded');
    r.twisty.className = `te-twisty codicon ${expandable ? (open ? 'codicon-chevron-down' : 'codicon-chevron-right') : 'te-leaf'}`;
    if (same) return;
    r.root.id = `te-row-${i}`;
    r.root.dataset.index = String(i);
    r.root.dataset.spanId = s.spanId;
    r.root.setAttribute('aria-level', String(m.depth[i]! + 1));
    r.root.setAttribute('aria-posinset', String(m.posInSet[i]));
    r.root.setAttribute('aria-setsize', String(m.setSize[i]));
    r.name.style.paddingLeft = `${4 + m.depth[i]! * 14}px`;
    const look = rewardLook(s);
    r.icon.className = `codicon codicon-${s.status === 'error' ? 'error' : look?.icon ?? KIND_ICON[s.kind] ?? 'circle-small'} te-kind-icon${look ? ` ${look.cls}` : ''}`;
    r.label.textContent = s.name;
    r.meta.textContent = rowMeta(s.kind, s.attributes);
    const left = (s.startTime - m.t0) * this.scale;
    const width = Math.max(0, s.endTime - s.startTime) * this.scale;
    r.bar.className = `te-bar te-bar-${s.kind}${look?.cls === 'te-penalty' ? ' te-bar-penalty' : ''}`;
    r.bar.style.left = `${left}%`;
    r.bar.style.width = `${width}%`;
    r.barLabel.textContent = formatMs(Math.max(0, s.endTime - s.startTime));
    // Label after the bar, or before it when the bar ends near the right edge.
    if (left + width > 75) {
      r.barLabel.style.left = '';
      r.barLabel.style.right = `${100 - left}%`;
      r.barLabel.className = 'te-bar-label te-bar-label-before';
    } else {
      r.barLabel.style.right = '';
      r.barLabel.style.left = `${left + width}%`;
      r.barLabel.className = 'te-bar-label';
    }
  }

  private rowIndexOf(target: EventTarget | null): number {
    const row = (target as Element | null)?.closest?.('.te-row') as HTMLElement | null;
    return row?.dataset.index ? Number(row.dataset.index) : -1;
  }

  private onClick(e: MouseEvent): void {
    const i = this.rowIndexOf(e.target);
    if (i < 0) return;
    if ((e.target as Element).classList.contains('te-twisty') && this.expandable(i)) {
      this.intents.toggle(i, !!this.state.collapsed[i]);
    } else {
      this.intents.select(i);
    }
    this.viewport.focus({ preventScroll: true });
  }

  private onKey(e: KeyboardEvent): void {
    const m = this.model;
    const rows = this.state.rows;
    if (!m || !rows.length) return;
    const sel = this.state.selected;
    const p = this.positionOf(sel);
    const page = Math.max(1, Math.floor(this.height() / ROW_HEIGHT) - 1);
    const go = (pos: number): void => {
      const q = Math.max(0, Math.min(rows.length - 1, pos));
      this.intents.select(rows[q]!);
      this.reveal(rows[q]!);
    };
    switch (e.key) {
      case 'ArrowDown':
        go(p < 0 ? 0 : p + 1);
        break;
      case 'ArrowUp':
        go(p < 0 ? 0 : p - 1);
        break;
      case 'Home':
        go(0);
        break;
      case 'End':
        go(rows.length - 1);
        break;
      case 'PageDown':
        go(p + page);
        break;
      case 'PageUp':
        go(p - page);
        break;
      case 'ArrowRight':
        if (p < 0) go(0);
        else if (this.expandable(sel) && this.state.collapsed[sel]) this.intents.toggle(sel, true);
        else if (this.expandable(sel) && p + 1 < rows.length && m.parent[rows[p + 1]!] === sel) go(p + 1);
        break;
      case 'ArrowLeft':
        if (p < 0) go(0);
        else if (this.expandable(sel) && !this.state.collapsed[sel]) this.intents.toggle(sel, false);
        else if (m.parent[sel]! >= 0 && this.positionOf(m.parent[sel]!) >= 0) go(this.positionOf(m.parent[sel]!));
        break;
      case 'Enter':
        if (sel >= 0) this.intents.activate(sel);
        break;
      case ' ':
        if (p < 0) go(0);
        else this.intents.select(sel);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }
}

/** The short fact beside a row's name: tokens of a model call, the value of a reward. */
function rowMeta(kind: SpanKind, a: Record<string, unknown>): string {
  if (kind === 'llm') {
    const i = a[Attr.inputTokens];
    const o = a[Attr.outputTokens];
    return typeof i === 'number' || typeof o === 'number' ? `${formatInt(Number(i ?? 0))} → ${formatInt(Number(o ?? 0))} tok` : '';
  }
  if (kind === 'reward') {
    const v = a[Attr.rewardValue] as number | undefined;
    return typeof v === 'number' && v < 0 ? `penalty ${formatScore(v)}` : formatScore(v);
  }
  if (kind === 'node') {
    const step = a[Attr.nodeStep];
    return typeof step === 'number' ? `step ${step}` : '';
  }
  return '';
}
