import type { RolloutTableQuery, RolloutTableRow, TableSortKey } from '../../src/core/store/tableQuery';
import type { TableFacets } from '../../src/shared/tableProtocol';
import { el } from '../shared/dom';
import type { HostClient } from '../shared/hostClient';
import { columnsFor, firstOrder, type Column } from './columns';

export const ROW_HEIGHT = 24;
export const PAGE_SIZE = 200;
/** Rows drawn beyond the visible ones, above and below, so a short scroll shows no gap. */
const OVERSCAN = 10;

type Filters = Omit<RolloutTableQuery, 'sort' | 'order' | 'offset' | 'limit'>;

interface Select {
  label: string;
  key: string;
  options: () => Array<{ value: string; label: string }>;
}

/**
 * The rollouts table: every rollout of the workspace, a page at a time from
 * the host (the query runs in the store), drawn as rows only where the
 * viewport shows them. Filters and sort change the query; rows are selected
 * with the mouse or the keyboard and the toolbar acts on the selection.
 */
export class TableApp {
  private facets: TableFacets = { runs: [], agents: [], failures: [], criteria: [], promptVersions: [], modelVersions: [], prices: false };
  private columns: Column[] = columnsFor(this.facets);
  private filters: Filters = {};
  private sort: TableSortKey = 'startTime';
  private order: 'asc' | 'desc' = 'desc';
  private total = 0;
  /** Pages by index; a page being fetched is 'loading'. Cleared when the query changes. */
  private pages = new Map<number, RolloutTableRow[] | 'loading'>();
  /** Bumped with each new query: answers to older ones are dropped. */
  private generation = 0;
  private readonly selected = new Set<string>();
  /** Row index the keyboard is on, and where a Shift range starts. */
  private focus = 0;
  private anchor = 0;
  private rendering = false;
  private emptyShown = false;
  private readonly pool: HTMLElement[] = [];

  private readonly search: HTMLInputElement;
  private readonly filterBar: HTMLElement;
  private readonly moreFilters: HTMLElement;
  private readonly status: HTMLElement;
  private readonly message: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly head: HTMLElement;
  private readonly body: HTMLElement;
  private readonly grid: HTMLElement;
  private readonly buttons: Record<'open' | 'compare' | 'export' | 'rescore' | 'dataset', HTMLButtonElement>;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: HostClient<'rolloutsTable'>,
  ) {
    const state = client.getState();
    if (state.filters) this.filters = state.filters as Filters;
    if (state.sort) this.sort = state.sort as TableSortKey;
    if (state.order) this.order = state.order;

    const toolbar = el('div', 'toolbar rt-toolbar');
    toolbar.setAttribute('role', 'search');
    this.search = el('input', 'rt-search');
    this.search.type = 'search';
    this.search.placeholder = 'Search span names, messages, tool calls, outputs…';
    this.search.setAttribute('aria-label', 'Search the rollouts’ spans');
    this.search.value = this.filters.text ?? '';
    let searchTimer: ReturnType<typeof setTimeout> | undefined;
    const applySearch = (): void => this.setFilter({ text: this.search.value.trim() || undefined });
    this.search.addEventListener('input', () => {
      clearTimeout(searchTimer);
      searchTimer = setTimeout(applySearch, 200);
    });
    this.search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        clearTimeout(searchTimer);
        applySearch();
      }
    });
    this.filterBar = el('div', 'rt-filters');
    this.moreFilters = el('div', 'rt-filters rt-more');
    const toggle = el('button', 'rt-button rt-secondary', 'More filters');
    toggle.setAttribute('aria-expanded', 'false');
    toggle.addEventListener('click', () => {
      const open = this.moreFilters.hidden;
      this.moreFilters.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
    });
    this.moreFilters.hidden = true;
    const clear = el('button', 'rt-button rt-secondary', 'Clear filters');
    clear.addEventListener('click', () => {
      this.filters = {};
      this.search.value = '';
      this.buildFilters();
      this.requery();
    });
    toolbar.append(this.search, toggle, clear);
    this.filterBar.classList.add('toolbar');

    const actions = el('div', 'toolbar rt-actions');
    actions.setAttribute('role', 'toolbar');
    actions.setAttribute('aria-label', 'Selected rollouts');
    this.status = el('span', 'rt-status');
    this.status.setAttribute('role', 'status');
    const button = (label: string, title: string, fn: () => void): HTMLButtonElement => {
      const b = el('button', 'rt-button', label);
      b.title = title;
      b.addEventListener('click', fn);
      return b;
    };
    this.buttons = {
      open: button('Open', 'Open the focused rollout in the Trace Explorer (Enter)', () => this.openFocused()),
      compare: button('Compare', 'Compare two selected rollouts side by side', () => this.compare()),
      export: button('Export…', 'Write the selected rollouts’ training records as JSONL', () => this.act('table/export')),
      rescore: button('Re-score…', 'Re-score the selected rollouts under the weights in lab.json', () => this.act('table/rescore')),
      dataset: button('Add to dataset…', 'Append the selected rollouts’ tasks to a dataset JSONL', () => this.act('table/addToDataset')),
    };
    this.message = el('span', 'rt-message');
    this.message.setAttribute('aria-live', 'polite');
    actions.append(this.status, ...Object.values(this.buttons), this.message);

    this.scroller = el('div', 'rt-scroller');
    this.grid = el('div', 'rt-grid');
    this.grid.setAttribute('role', 'grid');
    this.grid.setAttribute('aria-multiselectable', 'true');
    this.grid.setAttribute('aria-label', 'Rollouts');
    this.grid.tabIndex = 0;
    this.head = el('div', 'rt-row rt-head');
    this.head.setAttribute('role', 'row');
    this.body = el('div', 'rt-body');
    this.body.setAttribute('role', 'rowgroup');
    this.grid.append(this.head, this.body);
    this.scroller.append(this.grid);
    this.scroller.addEventListener('scroll', () => this.schedule(), { passive: true });
    this.grid.addEventListener('keydown', (e) => this.onKey(e));
    this.body.addEventListener('click', (e) => this.onClick(e));
    new ResizeObserver(() => this.schedule()).observe(this.scroller);

    this.root.append(toolbar, this.filterBar, this.moreFilters, actions, this.scroller);
  }

  listen(): void {
    this.client.on('store/changed', () => this.requery(true));
  }

  async start(): Promise<void> {
    try {
      this.facets = await this.client.request('table/facets', {});
    } catch (err) {
      this.say(`Could not read the store: ${(err as Error).message}`, true);
    }
    this.columns = columnsFor(this.facets);
    if (!this.columns.some((c) => c.sort === this.sort)) this.sort = 'startTime';
    this.buildFilters();
    this.buildHead();
    this.requery();
  }

  // ---- query -----------------------------------------------------------------

  private query(): RolloutTableQuery {
    return { ...this.filters, sort: this.sort, order: this.order };
  }

  private setFilter(patch: Partial<Filters>): void {
    const next: Filters = { ...this.filters, ...patch };
    for (const k of Object.keys(next) as Array<keyof Filters>) if (next[k] === undefined) delete next[k];
    this.filters = next;
    this.requery();
  }

  /** A new question: pages and selection start over (a refresh keeps the selection and the scroll). */
  private requery(keepSelection = false): void {
    this.generation++;
    this.pages = new Map();
    if (!keepSelection) {
      this.selected.clear();
      this.focus = 0;
      this.anchor = 0;
      this.scroller.scrollTop = 0;
    }
    this.client.setState({ filters: this.filters, sort: this.sort, order: this.order });
    void this.loadPage(0);
  }

  private async loadPage(index: number): Promise<void> {
    if (this.pages.has(index)) return;
    this.pages.set(index, 'loading');
    const generation = this.generation;
    try {
      const page = await this.client.request('table/query', { ...this.query(), offset: index * PAGE_SIZE, limit: PAGE_SIZE });
      if (generation !== this.generation) return;
      this.pages.set(index, page.rows);
      this.total = page.total;
      this.message.classList.remove('error');
      this.schedule();
    } catch (err) {
      if (generation !== this.generation) return;
      this.pages.delete(index);
      this.say(`The query failed: ${(err as Error).message}`, true);
    }
  }

  private rowAt(i: number): RolloutTableRow | null {
    const page = this.pages.get(Math.floor(i / PAGE_SIZE));
    return Array.isArray(page) ? (page[i % PAGE_SIZE] ?? null) : null;
  }

  // ---- drawing ---------------------------------------------------------------

  private schedule(): void {
    if (this.rendering) return;
    this.rendering = true;
    requestAnimationFrame(() => {
      this.rendering = false;
      this.render();
    });
  }

  private render(): void {
    const width = this.columns.reduce((w, c) => w + c.width, 0);
    this.grid.style.width = `${width}px`;
    this.body.style.height = `${this.total * ROW_HEIGHT}px`;
    this.grid.setAttribute('aria-rowcount', String(this.total + 1));
    const headHeight = this.head.offsetHeight;
    const top = Math.max(0, this.scroller.scrollTop - headHeight);
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(this.total - 1, Math.ceil((top + this.scroller.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    for (let p = Math.floor(first / PAGE_SIZE); p <= Math.floor(Math.max(first, last) / PAGE_SIZE) && this.total > 0; p++) void this.loadPage(p);
    const n = Math.max(0, last - first + 1);
    while (this.pool.length < n) this.pool.push(this.newRow());
    for (let k = 0; k < this.pool.length; k++) {
      const rowEl = this.pool[k]!;
      if (k >= n) {
        rowEl.hidden = true;
        rowEl.removeAttribute('id');
        continue;
      }
      this.fillRow(rowEl, first + k);
    }
    const selected = this.selected.size;
    this.status.textContent = `${this.total.toLocaleString('en-US')} rollout${this.total === 1 ? '' : 's'}${selected ? ` · ${selected.toLocaleString('en-US')} selected` : ''}`;
    this.buttons.open.disabled = this.rowAt(this.focus) === null;
    this.buttons.compare.disabled = selected < 2;
    for (const b of [this.buttons.export, this.buttons.rescore, this.buttons.dataset]) b.disabled = selected === 0;
    this.grid.setAttribute('aria-activedescendant', `rt-row-${this.focus}`);
    const empty = this.total === 0 && this.pages.size > 0 && [...this.pages.values()].every(Array.isArray);
    if (empty) {
      this.say(Object.keys(this.filters).length ? 'No rollout matches these filters.' : 'No rollouts in this workspace yet — run some first.');
      this.emptyShown = true;
    } else if (this.emptyShown) {
      this.say('');
      this.emptyShown = false;
    }
  }

  private newRow(): HTMLElement {
    const row = el('div', 'rt-row');
    row.setAttribute('role', 'row');
    this.body.append(row);
    return row;
  }

  private fillRow(rowEl: HTMLElement, i: number): void {
    const r = this.rowAt(i);
    rowEl.hidden = false;
    rowEl.id = `rt-row-${i}`;
    rowEl.dataset['index'] = String(i);
    rowEl.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
    rowEl.setAttribute('aria-rowindex', String(i + 2));
    const selected = r !== null && this.selected.has(r.id);
    rowEl.setAttribute('aria-selected', String(selected));
    rowEl.classList.toggle('rt-selected', selected);
    rowEl.classList.toggle('rt-focused', i === this.focus);
    rowEl.classList.toggle('rt-loading', r === null);
    rowEl.classList.toggle('rt-failed', r?.status === 'failed');
    if (rowEl.childElementCount !== this.columns.length) {
      rowEl.replaceChildren(
        ...this.columns.map((c) => {
          const cell = el('div', `rt-cell${c.numeric ? ' rt-num' : ''}`);
          cell.setAttribute('role', 'gridcell');
          cell.style.width = `${c.width}px`;
          return cell;
        }),
      );
    }
    this.columns.forEach((c, k) => {
      const cell = rowEl.children[k] as HTMLElement;
      const text = r === null ? (k === 0 ? '…' : '') : c.text(r);
      if (cell.textContent !== text) {
        cell.textContent = text;
        cell.title = text.length * 7 > c.width ? text : '';
      }
    });
  }

  private buildHead(): void {
    this.head.replaceChildren(
      ...this.columns.map((c) => {
        const cell = el('div', `rt-cell rt-th${c.numeric ? ' rt-num' : ''}`);
        cell.setAttribute('role', 'columnheader');
        cell.style.width = `${c.width}px`;
        if (c.sort === null) {
          cell.textContent = c.label;
          return cell;
        }
        const sort = c.sort;
        const active = sort === this.sort;
        cell.setAttribute('aria-sort', active ? (this.order === 'asc' ? 'ascending' : 'descending') : 'none');
        const b = el('button', 'rt-sort', `${c.label}${active ? (this.order === 'asc' ? ' ▲' : ' ▼') : ''}`);
        b.title = `Sort by ${c.label}`;
        b.addEventListener('click', () => {
          if (this.sort === sort) this.order = this.order === 'asc' ? 'desc' : 'asc';
          else {
            this.sort = sort;
            this.order = firstOrder(sort);
          }
          this.buildHead();
          this.requery();
          this.head.querySelector<HTMLButtonElement>(`[data-sort="${CSS.escape(sort)}"]`)?.focus();
        });
        b.dataset['sort'] = sort;
        cell.append(b);
        return cell;
      }),
    );
    this.schedule();
  }

  // ---- filters -----------------------------------------------------------------

  private buildFilters(): void {
    const f = this.facets;
    const selects: Select[] = [
      { label: 'Run', key: 'runIds', options: () => f.runs.map((r) => ({ value: r.id, label: r.id })) },
      { label: 'Split', key: 'splits', options: () => ['train', 'val'].map((s) => ({ value: s, label: s })) },
      { label: 'Status', key: 'statuses', options: () => ['succeeded', 'failed', 'running', 'cancelled'].map((s) => ({ value: s, label: s })) },
      { label: 'Failure', key: 'failures', options: () => f.failures.map((s) => ({ value: s, label: s })) },
      {
        label: 'Decision',
        key: 'decision',
        options: () => [
          { value: 'match', label: 'matches expected' },
          { value: 'mismatch', label: 'differs from expected' },
          { value: 'none', label: 'no decision or none expected' },
        ],
      },
      { label: 'Endpoint', key: 'simulated', options: () => [{ value: 'true', label: 'simulated' }, { value: 'false', label: 'real' }] },
    ];
    this.filterBar.replaceChildren(...selects.map((s) => this.select(s)));
    const more: HTMLElement[] = [
      this.select({ label: 'Agent', key: 'agent', options: () => f.agents.map((a) => ({ value: a, label: a })) }),
      this.select({
        label: 'Prompt version',
        key: 'promptVersion',
        options: () => [...new Map(f.promptVersions.map((p) => [p.hash, `${p.hash.slice(0, 8)} (${p.agent})`])).entries()].map(([value, label]) => ({ value, label })),
      }),
      this.select({ label: 'Model version', key: 'modelVersion', options: () => [...new Set(f.modelVersions.map((m) => m.version))].map((v) => ({ value: v, label: v })) }),
      this.range('Reward', this.filters.reward, (r) => this.setFilter({ reward: r })),
    ];
    for (const c of f.criteria) {
      more.push(
        this.range(c, this.filters.criteria?.[c], (r) => {
          const criteria = { ...(this.filters.criteria ?? {}) };
          if (r) criteria[c] = r;
          else delete criteria[c];
          this.setFilter({ criteria: Object.keys(criteria).length ? criteria : undefined });
        }),
      );
    }
    this.moreFilters.replaceChildren(...more);
  }

  /** A dropdown filter; "any" leaves it out. List filters take one value here (the query accepts several). */
  private select(s: Select): HTMLElement {
    const label = el('label', 'rt-field');
    label.append(el('span', undefined, s.label));
    const sel = el('select', 'rt-select');
    sel.dataset['filter'] = s.key;
    sel.append(new Option('any', ''));
    for (const o of s.options()) sel.append(new Option(o.label, o.value));
    const current = (this.filters as Record<string, unknown>)[s.key];
    sel.value = Array.isArray(current) ? String(current[0] ?? '') : current === undefined ? '' : String(current);
    sel.addEventListener('change', () => {
      const v = sel.value;
      const value =
        v === ''
          ? undefined
          : s.key === 'simulated'
            ? v === 'true'
            : ['runIds', 'splits', 'statuses', 'failures'].includes(s.key)
              ? [v]
              : v;
      this.setFilter({ [s.key]: value } as Partial<Filters>);
    });
    label.append(sel);
    return label;
  }

  /** A min–max pair of number inputs; an empty side is open. */
  private range(name: string, current: { min?: number; max?: number } | undefined, set: (r: { min?: number; max?: number } | undefined) => void): HTMLElement {
    const box = el('span', 'rt-field rt-range');
    box.append(el('span', undefined, name));
    const input = (side: 'min' | 'max'): HTMLInputElement => {
      const i = el('input', 'rt-number');
      i.type = 'number';
      i.step = '0.05';
      i.placeholder = side;
      i.dataset['range'] = `${name}:${side}`;
      i.setAttribute('aria-label', `${name} ${side === 'min' ? 'at least' : 'at most'}`);
      if (current?.[side] !== undefined) i.value = String(current[side]);
      return i;
    };
    const lo = input('min');
    const hi = input('max');
    const apply = (): void => {
      const r: { min?: number; max?: number } = {};
      if (lo.value !== '' && Number.isFinite(Number(lo.value))) r.min = Number(lo.value);
      if (hi.value !== '' && Number.isFinite(Number(hi.value))) r.max = Number(hi.value);
      set(Object.keys(r).length ? r : undefined);
    };
    lo.addEventListener('change', apply);
    hi.addEventListener('change', apply);
    box.append(lo, el('span', 'muted', '–'), hi);
    return box;
  }

  // ---- selection and keys --------------------------------------------------------

  private onClick(e: MouseEvent): void {
    const rowEl = (e.target as HTMLElement).closest<HTMLElement>('.rt-row');
    const i = Number(rowEl?.dataset['index']);
    const r = Number.isInteger(i) ? this.rowAt(i) : null;
    if (!r) return;
    this.grid.focus({ preventScroll: true });
    if (e.shiftKey) this.selectRange(this.anchor, i, e.ctrlKey || e.metaKey);
    else if (e.ctrlKey || e.metaKey) {
      this.toggle(r.id);
      this.anchor = i;
    } else {
      this.selected.clear();
      this.selected.add(r.id);
      this.anchor = i;
      this.client.command('trace/open', { rolloutId: r.id });
    }
    this.focus = i;
    this.schedule();
  }

  private onKey(e: KeyboardEvent): void {
    // Keys on the column headers' buttons are theirs (Enter sorts).
    if (e.target !== this.grid) return;
    const visible = Math.max(1, Math.floor(this.scroller.clientHeight / ROW_HEIGHT) - 1);
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: visible, PageUp: -visible, Home: -Infinity, End: Infinity };
    if (e.key in moves && this.total > 0) {
      e.preventDefault();
      const to = Math.max(0, Math.min(this.total - 1, this.focus + moves[e.key]!));
      if (e.shiftKey) this.selectRange(this.anchor, to, false);
      else if (!(e.ctrlKey || e.metaKey)) {
        const r = this.rowAt(to);
        this.selected.clear();
        if (r) this.selected.add(r.id);
        this.anchor = to;
      }
      this.focus = to;
      this.reveal(to);
      this.schedule();
    } else if (e.key === 'Enter') {
      e.preventDefault();
      this.openFocused();
    } else if (e.key === ' ') {
      e.preventDefault();
      const r = this.rowAt(this.focus);
      if (r) {
        this.toggle(r.id);
        this.anchor = this.focus;
        this.schedule();
      }
    } else if (e.key.toLowerCase() === 'a' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void this.selectAll();
    } else if (e.key === 'Escape') {
      this.selected.clear();
      this.schedule();
    }
  }

  private toggle(id: string): void {
    if (!this.selected.delete(id)) this.selected.add(id);
  }

  /** Rows from a to b (inclusive) become the selection (or join it); rows not loaded yet are fetched first. */
  private selectRange(a: number, b: number, add: boolean): void {
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    if (!add) this.selected.clear();
    const generation = this.generation;
    const pagesNeeded: number[] = [];
    for (let p = Math.floor(lo / PAGE_SIZE); p <= Math.floor(hi / PAGE_SIZE); p++) if (!Array.isArray(this.pages.get(p))) pagesNeeded.push(p);
    const apply = (): void => {
      for (let i = lo; i <= hi; i++) {
        const r = this.rowAt(i);
        if (r) this.selected.add(r.id);
      }
      this.schedule();
    };
    apply();
    if (pagesNeeded.length) {
      void Promise.all(pagesNeeded.map((p) => this.loadPage(p))).then(() => {
        if (generation === this.generation) apply();
      });
    }
  }

  private async selectAll(): Promise<void> {
    const generation = this.generation;
    const { ids } = await this.client.request('table/ids', this.query());
    if (generation !== this.generation) return;
    for (const id of ids) this.selected.add(id);
    this.schedule();
  }

  private reveal(i: number): void {
    const head = this.head.offsetHeight;
    const y = i * ROW_HEIGHT;
    const top = this.scroller.scrollTop;
    const room = this.scroller.clientHeight - head;
    if (y < top) this.scroller.scrollTop = y;
    else if (y + ROW_HEIGHT > top + room) this.scroller.scrollTop = y + ROW_HEIGHT - room;
  }

  // ---- actions ---------------------------------------------------------------------

  private openFocused(): void {
    const r = this.rowAt(this.focus);
    if (r) this.client.command('trace/open', { rolloutId: r.id });
  }

  private compare(): void {
    const ids = this.orderedSelection();
    if (ids.length !== 2) {
      this.say(
        ids.length < 2
          ? 'Select two rollouts to compare (Ctrl+click or Shift+arrows).'
          : `Compare shows two rollouts side by side; ${ids.length} are selected — keep two (Ctrl+click to deselect).`,
        true,
      );
      return;
    }
    this.say('');
    this.client.command('trace/diff', { left: ids[0]!, right: ids[1]! });
  }

  private act(command: 'table/export' | 'table/rescore' | 'table/addToDataset'): void {
    const rolloutIds = this.orderedSelection();
    if (!rolloutIds.length) return;
    this.say('');
    this.client.command(command, { rolloutIds });
  }

  /** The selection in table order where the rows are loaded, then the rest. */
  private orderedSelection(): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const page of [...this.pages.entries()].sort((a, b) => a[0] - b[0])) {
      if (!Array.isArray(page[1])) continue;
      for (const r of page[1]) if (this.selected.has(r.id) && !seen.has(r.id)) (out.push(r.id), seen.add(r.id));
    }
    for (const id of this.selected) if (!seen.has(id)) out.push(id);
    return out;
  }

  private say(text: string, error = false): void {
    this.message.textContent = text;
    this.message.classList.toggle('error', error);
  }
}
