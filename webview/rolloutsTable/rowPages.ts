import type { RolloutTableRow } from '../../src/core/store/tableQuery';

export const PAGE_SIZE = 200;

/** One page of the current query, as the host answers it. */
export interface RowPage {
  rows: RolloutTableRow[];
  total: number;
}

/**
 * The table's rows, a page at a time from the host: pages are fetched as the
 * viewport or a selection needs them, and a new query starts them over, so
 * answers to an older query are dropped.
 */
export class RowPages {
  total = 0;
  /** Pages by index; a page being fetched is 'loading'. */
  private pages = new Map<number, RolloutTableRow[] | 'loading'>();
  /** Bumped with each new query: answers to older ones are dropped. */
  private gen = 0;

  constructor(
    private readonly fetch: (offset: number, limit: number) => Promise<RowPage>,
    private readonly events: { loaded(): void; failed(err: Error): void },
  ) {}

  /** Which query the pages answer: work started for an older one checks it before it applies. */
  get generation(): number {
    return this.gen;
  }

  /** A new query: the pages start over. */
  reset(): void {
    this.gen++;
    this.pages = new Map();
  }

  async load(index: number): Promise<void> {
    if (this.pages.has(index)) return;
    this.pages.set(index, 'loading');
    const generation = this.gen;
    try {
      const page = await this.fetch(index * PAGE_SIZE, PAGE_SIZE);
      if (generation !== this.gen) return;
      this.pages.set(index, page.rows);
      this.total = page.total;
      this.events.loaded();
    } catch (err) {
      if (generation !== this.gen) return;
      this.pages.delete(index);
      this.events.failed(err as Error);
    }
  }

  /** Fetches the pages holding rows first to last (inclusive) that are not here or on their way. */
  loadRows(first: number, last: number): void {
    for (let p = Math.floor(first / PAGE_SIZE); p <= Math.floor(Math.max(first, last) / PAGE_SIZE) && this.total > 0; p++) void this.load(p);
  }

  /** The pages holding rows lo to hi (inclusive) that have not arrived yet. */
  missing(lo: number, hi: number): number[] {
    const out: number[] = [];
    for (let p = Math.floor(lo / PAGE_SIZE); p <= Math.floor(hi / PAGE_SIZE); p++) if (!Array.isArray(this.pages.get(p))) out.push(p);
    return out;
  }

  rowAt(i: number): RolloutTableRow | null {
    const page = this.pages.get(Math.floor(i / PAGE_SIZE));
    return Array.isArray(page) ? (page[i % PAGE_SIZE] ?? null) : null;
  }

  /** Every page asked for has arrived (and at least one was). */
  settled(): boolean {
    return this.pages.size > 0 && [...this.pages.values()].every(Array.isArray);
  }

  /** The rows that are here, in table order. */
  *loadedRows(): Generator<RolloutTableRow> {
    for (const page of [...this.pages.entries()].sort((a, b) => a[0] - b[0])) {
      if (!Array.isArray(page[1])) continue;
      yield* page[1];
    }
  }
}
