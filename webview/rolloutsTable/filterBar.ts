import type { RolloutTableQuery } from '../../src/core/store/tableQuery';
import type { TableFacets } from '../../src/shared/tableProtocol';
import { el } from '../shared/dom';

/** The table's filters: a table query without its sort and page. */
export type Filters = Omit<RolloutTableQuery, 'sort' | 'order' | 'offset' | 'limit'>;

/** The facets before the store has answered: no runs, agents or criteria to offer. */
export const NO_FACETS: TableFacets = { runs: [], agents: [], failures: [], criteria: [], promptVersions: [], modelVersions: [], prices: false };

interface Select {
  label: string;
  key: string;
  options: () => Array<{ value: string; label: string }>;
}

/**
 * The filters above the table and what they hold: a text search over the
 * rollouts' spans, a row of dropdowns, more behind a toggle (agent, versions,
 * reward and criteria ranges), and a button that clears them all. Each change
 * calls `changed`, which asks the store again.
 */
export class FilterBar {
  /** The search row, the dropdowns, and the filters behind "More filters", in page order. */
  readonly elements: HTMLElement[];
  private readonly search = el('input', 'rt-search');
  private readonly bar = el('div', 'rt-filters');
  private readonly more = el('div', 'rt-filters rt-more');
  private facets = NO_FACETS;

  constructor(
    private filters: Filters,
    private readonly changed: () => void,
  ) {
    const toolbar = el('div', 'toolbar rt-toolbar');
    toolbar.setAttribute('role', 'search');
    this.search.type = 'search';
    this.search.placeholder = 'Search span names, messages, tool calls, outputs…';
    this.search.setAttribute('aria-label', 'Search the rollouts’ spans');
    this.search.value = this.filters.text ?? '';
    let searchTimer: ReturnType<typeof setTimeout> | undefined;
    const applySearch = (): void => this.set({ text: this.search.value.trim() || undefined });
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
    const toggle = el('button', 'rt-button rt-secondary', 'More filters');
    toggle.setAttribute('aria-expanded', 'false');
    toggle.addEventListener('click', () => {
      const open = this.more.hidden;
      this.more.hidden = !open;
      toggle.setAttribute('aria-expanded', String(open));
    });
    this.more.hidden = true;
    const clear = el('button', 'rt-button rt-secondary', 'Clear filters');
    clear.addEventListener('click', () => {
      this.filters = {};
      this.search.value = '';
      this.build(this.facets);
      this.changed();
    });
    toolbar.append(this.search, toggle, clear);
    this.bar.classList.add('toolbar');
    this.elements = [toolbar, this.bar, this.more];
  }

  get value(): Filters {
    return this.filters;
  }

  /** The dropdowns and ranges for what the store holds (its runs, agents, versions, criteria). */
  build(facets: TableFacets): void {
    this.facets = facets;
    const f = facets;
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
    this.bar.replaceChildren(...selects.map((s) => this.select(s)));
    const more: HTMLElement[] = [
      this.select({ label: 'Agent', key: 'agent', options: () => f.agents.map((a) => ({ value: a, label: a })) }),
      this.select({
        label: 'Prompt version',
        key: 'promptVersion',
        options: () => [...new Map(f.promptVersions.map((p) => [p.hash, `${p.hash.slice(0, 8)} (${p.agent})`])).entries()].map(([value, label]) => ({ value, label })),
      }),
      this.select({ label: 'Model version', key: 'modelVersion', options: () => [...new Set(f.modelVersions.map((m) => m.version))].map((v) => ({ value: v, label: v })) }),
      this.range('Reward', this.filters.reward, (r) => this.set({ reward: r })),
    ];
    for (const c of f.criteria) {
      more.push(
        this.range(c, this.filters.criteria?.[c], (r) => {
          const criteria = { ...(this.filters.criteria ?? {}) };
          if (r) criteria[c] = r;
          else delete criteria[c];
          this.set({ criteria: Object.keys(criteria).length ? criteria : undefined });
        }),
      );
    }
    this.more.replaceChildren(...more);
  }

  private set(patch: Partial<Filters>): void {
    const next: Filters = { ...this.filters, ...patch };
    for (const k of Object.keys(next) as Array<keyof Filters>) if (next[k] === undefined) delete next[k];
    this.filters = next;
    this.changed();
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
      this.set({ [s.key]: value } as Partial<Filters>);
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
}
