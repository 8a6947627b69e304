import type { RowGrid } from './rowGrid';
import type { RowPages } from './rowPages';

/** What the selection asks of the table around it. */
export interface SelectionHost {
  /** The selection or the focus changed: the rows need drawing. */
  changed(): void;
  /** Opens a rollout in the Trace Explorer. */
  open(rolloutId: string): void;
  /** Every rollout id the current query matches, loaded or not. */
  allIds(): Promise<string[]>;
}

/**
 * Which rows are selected and which one the keyboard is on, as the mouse
 * and the keys move them: a click selects and opens, Ctrl+click and Space
 * toggle, Shift extends a range from the anchor (fetching the rows not
 * loaded yet), Ctrl+A selects every row the query matches.
 */
export class RowSelection {
  private readonly selected = new Set<string>();
  /** Row index the keyboard is on, and where a Shift range starts. */
  focus = 0;
  private anchor = 0;

  constructor(
    private readonly pages: RowPages,
    private readonly grid: RowGrid,
    private readonly host: SelectionHost,
  ) {
    this.grid.element.addEventListener('keydown', (e) => this.onKey(e));
    this.grid.body.addEventListener('click', (e) => this.onClick(e));
  }

  get size(): number {
    return this.selected.size;
  }

  has(id: string): boolean {
    return this.selected.has(id);
  }

  /** A new query: nothing selected, the focus back on the first row. */
  reset(): void {
    this.selected.clear();
    this.focus = 0;
    this.anchor = 0;
  }

  openFocused(): void {
    const r = this.pages.rowAt(this.focus);
    if (r) this.host.open(r.id);
  }

  /** The selection in table order where the rows are loaded, then the rest. */
  ordered(): string[] {
    const out: string[] = [];
    const seen = new Set<string>();
    for (const r of this.pages.loadedRows()) if (this.selected.has(r.id) && !seen.has(r.id)) (out.push(r.id), seen.add(r.id));
    for (const id of this.selected) if (!seen.has(id)) out.push(id);
    return out;
  }

  private onClick(e: MouseEvent): void {
    const rowEl = (e.target as HTMLElement).closest<HTMLElement>('.rt-row');
    const i = Number(rowEl?.dataset['index']);
    const r = Number.isInteger(i) ? this.pages.rowAt(i) : null;
    if (!r) return;
    this.grid.element.focus({ preventScroll: true });
    if (e.shiftKey) this.selectRange(this.anchor, i, e.ctrlKey || e.metaKey);
    else if (e.ctrlKey || e.metaKey) {
      this.toggle(r.id);
      this.anchor = i;
    } else {
      this.selected.clear();
      this.selected.add(r.id);
      this.anchor = i;
      this.host.open(r.id);
    }
    this.focus = i;
    this.host.changed();
  }

  private onKey(e: KeyboardEvent): void {
    // Keys on the column headers' buttons are theirs (Enter sorts).
    if (e.target !== this.grid.element) return;
    const visible = this.grid.pageRows();
    const moves: Record<string, number> = { ArrowDown: 1, ArrowUp: -1, PageDown: visible, PageUp: -visible, Home: -Infinity, End: Infinity };
    const total = this.pages.total;
    if (e.key in moves && total > 0) {
      e.preventDefault();
      const to = Math.max(0, Math.min(total - 1, this.focus + moves[e.key]!));
      if (e.shiftKey) this.selectRange(this.anchor, to, false);
      else if (!(e.ctrlKey || e.metaKey)) {
        const r = this.pages.rowAt(to);
        this.selected.clear();
        if (r) this.selected.add(r.id);
        this.anchor = to;
      }
      this.focus = to;
      this.grid.reveal(to);
      this.host.changed();
    } else if (e.key === 'Enter') {
      e.preventDefault();
      this.openFocused();
    } else if (e.key === ' ') {
      e.preventDefault();
      const r = this.pages.rowAt(this.focus);
      if (r) {
        this.toggle(r.id);
        this.anchor = this.focus;
        this.host.changed();
      }
    } else if (e.key.toLowerCase() === 'a' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      void this.selectAll();
    } else if (e.key === 'Escape') {
      this.selected.clear();
      this.host.changed();
    }
  }

  private toggle(id: string): void {
    if (!this.selected.delete(id)) this.selected.add(id);
  }

  /** Rows from a to b (inclusive) become the selection (or join it); rows not loaded yet are fetched first. */
  private selectRange(a: number, b: number, add: boolean): void {
    const [lo, hi] = a <= b ? [a, b] : [b, a];
    if (!add) this.selected.clear();
    const generation = this.pages.generation;
    const pagesNeeded = this.pages.missing(lo, hi);
    const apply = (): void => {
      for (let i = lo; i <= hi; i++) {
        const r = this.pages.rowAt(i);
        if (r) this.selected.add(r.id);
      }
      this.host.changed();
    };
    apply();
    if (pagesNeeded.length) {
      void Promise.all(pagesNeeded.map((p) => this.pages.load(p))).then(() => {
        if (generation === this.pages.generation) apply();
      });
    }
  }

  private async selectAll(): Promise<void> {
    const generation = this.pages.generation;
    const ids = await this.host.allIds();
    if (generation !== this.pages.generation) return;
    for (const id of ids) this.selected.add(id);
    this.host.changed();
  }
}
