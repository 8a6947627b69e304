import type { Database, SqlJsStatic } from 'sql.js';
import { CatalogDb } from './catalogDb';
import { CatalogEvents } from './catalogEvents';
import { CatalogQueries } from './catalogQueries';
import { migrate } from './catalogSchema';
import { JournalBook } from './journalBook';
import { TextIndexDb } from './textIndexDb';
import { TraceIndex } from './traceIndex';

/** How a catalog came to be: loaded as is, created empty, migrated, or empty because the stored one could not be used. */
export type CatalogOrigin = 'loaded' | 'created' | 'migrated' | 'corrupt' | 'rebuild' | 'newer';

/**
 * The queryable index of the store, in sql.js: runs, rollouts, per-agent
 * facts, prompt versions and where each trace's span frames lie. Everything in
 * it is derived from the journals and segments, so it can be thrown away and
 * rebuilt; spans themselves are never rows here, which keeps it small.
 *
 * Its parts share one database: `journals` (the files it is derived from and
 * how far each was read), `traces` (span locations and the text index),
 * `events` (applying what the journals record) and `queries` (reading it).
 * The full-text index is a database of its own, loaded only when needed
 * (see TextIndexDb).
 */
export class Catalog {
  readonly journals: JournalBook;
  readonly traces: TraceIndex;
  readonly events: CatalogEvents;
  readonly queries: CatalogQueries;

  private constructor(
    SQL: SqlJsStatic,
    readonly db: CatalogDb,
    storedText: (() => Uint8Array | null) | null,
  ) {
    this.journals = new JournalBook(db);
    this.traces = new TraceIndex(db, new TextIndexDb(SQL, db, storedText));
    this.events = new CatalogEvents(db, this.journals, this.traces);
    this.queries = new CatalogQueries(db, this.traces);
  }

  /**
   * Loads a stored catalog (or starts an empty one when there is none, or it
   * is unusable) and brings its schema up to date. `storedText` reads the
   * stored full-text index, when it is first needed.
   */
  static open(SQL: SqlJsStatic, bytes: Uint8Array | null, storedText: (() => Uint8Array | null) | null = null): { catalog: Catalog; origin: CatalogOrigin } {
    if (bytes && bytes.length > 0) {
      let db: Database | null = null;
      try {
        db = new SQL.Database(bytes);
        const outcome = migrate(db);
        if (outcome === 'current' || outcome === 'migrated') {
          const catalog = new Catalog(SQL, new CatalogDb(db), storedText);
          catalog.dirty = outcome === 'migrated';
          return { catalog, origin: outcome === 'current' ? 'loaded' : 'migrated' };
        }
        db.close();
        return { catalog: Catalog.empty(SQL), origin: outcome === 'newer' ? 'newer' : 'rebuild' };
      } catch {
        db?.close();
        return { catalog: Catalog.empty(SQL), origin: 'corrupt' };
      }
    }
    return { catalog: Catalog.empty(SQL), origin: 'created' };
  }

  static empty(SQL: SqlJsStatic): Catalog {
    const db = new SQL.Database();
    migrate(db);
    const c = new Catalog(SQL, new CatalogDb(db), null);
    c.dirty = true;
    return c;
  }

  /** Changed since loaded or last exported. */
  get dirty(): boolean {
    return this.db.dirty;
  }

  set dirty(value: boolean) {
    this.db.dirty = value;
  }

  /**
   * The whole catalog as SQLite bytes, file and writer bookkeeping included,
   * and the full-text index's when it changed (null otherwise). Save the
   * index first, then the catalog, then call textSaved().
   */
  export(): { catalog: Uint8Array; text: Uint8Array | null } {
    this.traces.flushPending();
    const text = this.traces.text.export();
    this.db.transaction(() => this.journals.save());
    return { catalog: this.db.export(), text };
  }

  /** The index bytes of the last export are on disk. */
  textSaved(): void {
    this.traces.text.saved();
  }

  close(): void {
    this.traces.text.close();
    this.db.close();
  }
}
