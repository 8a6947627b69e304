import type { SpanRecord } from '../trace/span';
import { TEXT_BACKFILL } from './catalogSchema';
import type { CatalogDb } from './catalogDb';
import { spanTextPieces } from './rolloutText';
import type { TextIndexDb } from './textIndexDb';
import { appendLoc, decodeLocs, encodeLocs } from './spanLocations';

/**
 * The distinct words of a trace's text, as the index stores them: searches
 * ask for words (all of them, the last as a prefix), never phrases, so each
 * word once per document finds the same rollouts with far less to index.
 */
function indexedWords(pieces: Iterable<string>): string {
  const words = new Set<string>();
  for (const p of pieces) for (const w of p.toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []) words.add(w);
  return [...words].join(' ');
}

/** Traces whose text waits before it is indexed in one transaction (see flushPending). */
const TEXT_BATCH = 64;

/**
 * Where each trace's span frames lie (a few numbers per rollout, not a row
 * per span) and the full-text index of its text. Span locations of traces
 * still being written collect in memory (`pending`) and reach the table when
 * the rollout ends or at a checkpoint; their text waits likewise.
 */
export class TraceIndex {
  private readonly pending = new Map<string, { locs: number[]; spans: number }>();
  /** Searchable text of spans not yet in the full-text index, each piece once per trace. */
  private readonly pendingText = new Map<string, Set<string>>();

  constructor(
    private readonly db: CatalogDb,
    /** The full-text index, loaded when there is first text to index or search. */
    readonly text: TextIndexDb,
  ) {}

  addSpanLoc(traceId: string, fileId: number, offset: number, length: number, spans = 1): void {
    let p = this.pending.get(traceId);
    if (!p) {
      p = { locs: [], spans: 0 };
      this.pending.set(traceId, p);
    }
    appendLoc(p.locs, fileId, offset, length);
    p.spans += spans;
    this.db.dirty = true;
  }

  /**
   * Moves pending span locations into the table (one trace, or all). The
   * pending text goes into the full-text index only with all of it (on
   * export, before a text search, or once TEXT_BATCH traces wait): FTS4 writes
   * one index segment per transaction, so indexing rollouts in batches is
   * what keeps writing traces fast.
   */
  flushPending(traceId?: string): void {
    if (traceId === undefined || this.pendingText.size >= TEXT_BATCH) this.flushText();
    const ids = traceId === undefined ? [...this.pending.keys()] : this.pending.has(traceId) ? [traceId] : [];
    if (!ids.length) return;
    this.db.transaction(() => {
      for (const id of ids) {
        const p = this.pending.get(id)!;
        const row = this.db.get('SELECT locs, spans FROM trace_locs WHERE trace_id = ?', [id]);
        const locs = row ? decodeLocs(row['locs'] as Uint8Array) : [];
        for (let i = 0; i < p.locs.length; i += 3) appendLoc(locs, p.locs[i]!, p.locs[i + 1]!, p.locs[i + 2]!);
        const spans = (row ? Number(row['spans']) : 0) + p.spans;
        this.db.run('INSERT OR REPLACE INTO trace_locs(trace_id, locs, spans) VALUES(?, ?, ?)', [id, encodeLocs(locs), spans]);
        this.pending.delete(id);
      }
    });
  }

  /** Text of a trace's span to index for full-text search (when the trace is next flushed). */
  addSpanText(traceId: string, pieces: readonly string[]): void {
    let set = this.pendingText.get(traceId);
    if (!set) this.pendingText.set(traceId, (set = new Set()));
    for (const p of pieces) set.add(p);
    this.db.dirty = true;
  }

  /** Indexes the pending text of traces whose rollout is known; the others wait for their rollout. */
  flushText(traceId?: string): void {
    const ids = traceId === undefined ? [...this.pendingText.keys()] : this.pendingText.has(traceId) ? [traceId] : [];
    if (!ids.length) return;
    const docs: Array<{ id: string; rid: number; body: string }> = [];
    for (const id of ids) {
      const rid = this.db.get('SELECT rid FROM rollouts WHERE id = ?', [id])?.['rid'];
      if (rid !== undefined) docs.push({ id, rid: Number(rid), body: indexedWords(this.pendingText.get(id)!) });
    }
    if (!docs.length) return;
    this.text.write((insertDoc) => {
      for (const d of docs) insertDoc(d.rid, d.body);
    });
    for (const d of docs) this.pendingText.delete(d.id);
  }

  /** Makes the index ready for a search: attached, with every pending text in it. */
  searchable(): void {
    this.text.attach();
    this.flushText();
  }

  /**
   * A catalog migrated from before the full-text index has its rollouts'
   * text indexed here, once: `spansOf` reads a trace's spans from the files.
   * Returns how many rollouts were indexed (0 when nothing was waiting).
   */
  backfillText(spansOf: (traceId: string) => readonly SpanRecord[]): number {
    this.text.attach();
    if (this.db.get('SELECT value FROM meta WHERE key = ?', [TEXT_BACKFILL]) === null) return 0;
    const ids = this.db.all('SELECT r.id FROM rollouts r WHERE NOT EXISTS (SELECT 1 FROM text.rollout_text_docs d WHERE d.rid = r.rid)').map((r) => String(r['id']));
    // In batches, as rollouts are written: one index segment per batch.
    for (let i = 0; i < ids.length; i += TEXT_BATCH) {
      for (const id of ids.slice(i, i + TEXT_BATCH)) {
        const pieces: string[] = [];
        for (const span of spansOf(id)) spanTextPieces(span, pieces);
        this.addSpanText(id, pieces);
      }
      this.flushText();
    }
    this.db.run('DELETE FROM meta WHERE key = ?', [TEXT_BACKFILL]);
    this.db.dirty = true;
    return ids.length;
  }

  /** Compaction moved a trace's frames: point it at their new home (its span count does not change). */
  replaceTraceLocs(traceId: string, locs: readonly number[]): void {
    this.flushPending(traceId);
    this.db.run('UPDATE trace_locs SET locs = ? WHERE trace_id = ?', [encodeLocs(locs), traceId]);
    this.db.dirty = true;
  }

  /** Where a trace's span frames are, stored and pending together, as (file id, offset, length) triples. */
  traceLocs(traceId: string): number[] {
    const row = this.db.get('SELECT locs FROM trace_locs WHERE trace_id = ?', [traceId]);
    const locs = row ? decodeLocs(row['locs'] as Uint8Array) : [];
    const p = this.pending.get(traceId);
    if (p) for (let i = 0; i < p.locs.length; i += 3) appendLoc(locs, p.locs[i]!, p.locs[i + 1]!, p.locs[i + 2]!);
    return locs;
  }

  /** Spans stored for a trace plus those still pending in memory. */
  observedSpans(traceId: string, stored = 0): number {
    return stored + (this.pending.get(traceId)?.spans ?? 0);
  }

  /** Spans of every trace still pending in memory. */
  pendingSpans(): number {
    let spans = 0;
    for (const p of this.pending.values()) spans += p.spans;
    return spans;
  }
}
