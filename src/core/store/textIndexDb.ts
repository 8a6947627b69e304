import { randomBytes } from 'node:crypto';
import type { Database, SqlJsStatic, SqlValue, Statement } from 'sql.js';
import { TEXT_BACKFILL } from './catalogSchema';
import type { CatalogDb } from './catalogDb';

/** meta key of the catalog: the generation of the text index it was saved with. */
export const TEXT_GENERATION = 'text_generation';
/** The schema the text index is attached to the catalog's database as. */
export const TEXT_SCHEMA = 'text';

const TEXT_INDEX_SCHEMA = `
  CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
  -- contentless: the text stays in the journals; the index only answers which documents match
  CREATE VIRTUAL TABLE rollout_text USING fts4(content="", body, tokenize=unicode61);
  -- a rollout's text is indexed in one or more documents (spans seen before a checkpoint, then the rest)
  CREATE TABLE rollout_text_docs(docid INTEGER PRIMARY KEY, rid INTEGER NOT NULL);
  CREATE INDEX rollout_text_docs_rid ON rollout_text_docs(rid);`;

/**
 * The full-text index of the rollouts' text, in a database of its own
 * (`catalog-text.sqlite` beside the catalog), attached to the catalog's as
 * `text` for searches. It is loaded only when first needed: a search, or
 * text to index. Opening a store, listing and reading rollouts never load it,
 * so they do not hold it in memory.
 *
 * The two files are saved one after the other, so each names the generation
 * they were saved together at: an index whose generation is not the
 * catalog's (a crash between the two writes, a catalog rebuilt or restored)
 * is not used. An empty one replaces it, and the rollouts already in the
 * catalog are indexed from their spans on the first search (TEXT_BACKFILL).
 */
export class TextIndexDb {
  private side: Database | null = null;
  private attached = false;
  /** Changed since loaded or last saved. */
  private dirty = false;
  private readonly stmts = new Map<string, Statement>();

  constructor(
    private readonly SQL: SqlJsStatic,
    private readonly db: CatalogDb,
    /** The stored index's bytes, or null when there is none (or the catalog is new and has no stored index to use). */
    private readonly stored: (() => Uint8Array | null) | null,
  ) {}

  /**
   * Writes to the index in one transaction of its own (its database is not
   * the catalog's: this may run inside a catalog transaction). Loads the
   * index first.
   */
  write(fn: (insertDoc: (rid: number, body: string) => void) => void): void {
    const side = this.load();
    side.run('BEGIN');
    try {
      fn((rid, body) => {
        this.exec('INSERT INTO rollout_text_docs(rid) VALUES(?)', [rid]);
        this.exec('INSERT INTO rollout_text(docid, body) VALUES(last_insert_rowid(), ?)', [body]);
      });
      side.run('COMMIT');
    } catch (err) {
      side.run('ROLLBACK');
      throw err;
    }
    this.dirty = true;
    this.db.dirty = true;
  }

  /**
   * Attaches the index to the catalog's database as `text`, for queries that
   * join it with the catalog's tables (searches). Not inside a catalog
   * transaction (SQLite attaches only outside one).
   */
  attach(): void {
    const side = this.load();
    if (this.attached) return;
    this.db.exec(`ATTACH '${(side as unknown as { filename: string }).filename}' AS ${TEXT_SCHEMA}`);
    this.attached = true;
  }

  /**
   * The index's bytes when it changed since loaded or last saved (null
   * otherwise), under a new generation that the catalog records too: save
   * these first, then the catalog, then call saved().
   */
  export(): Uint8Array | null {
    if (!this.side || !this.dirty) return null;
    const generation = randomBytes(8).toString('hex');
    this.exec(`INSERT OR REPLACE INTO meta(key, value) VALUES('generation', ?)`, [generation]);
    this.db.run('INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)', [TEXT_GENERATION, generation]);
    return this.side.export();
  }

  /** The bytes of the last export are on disk. */
  saved(): void {
    this.dirty = false;
  }

  /** Detaches and frees the index (call before closing the catalog's database). */
  close(): void {
    if (!this.side) return;
    if (this.attached) this.db.exec(`DETACH ${TEXT_SCHEMA}`);
    this.attached = false;
    for (const s of this.stmts.values()) s.free();
    this.stmts.clear();
    this.side.close();
    this.side = null;
  }

  /** The index: the stored one when it goes with this catalog, else a new, empty one. */
  private load(): Database {
    if (this.side) return this.side;
    const want = this.db.get('SELECT value FROM meta WHERE key = ?', [TEXT_GENERATION])?.['value'];
    let side = typeof want === 'string' && this.stored ? this.open(this.stored(), want) : null;
    if (!side) {
      side = new this.SQL.Database();
      side.run(TEXT_INDEX_SCHEMA);
      this.dirty = true;
      // The catalog was saved with an index that is lost or not this one: its rollouts' text is indexed from their spans on the first search.
      if (typeof want === 'string' && this.db.get('SELECT 1 AS x FROM rollouts LIMIT 1') !== null) {
        this.db.run('INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)', [TEXT_BACKFILL, 'pending']);
        this.db.dirty = true;
      }
    }
    // In memory like the catalog, made durable by export.
    side.run('PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY');
    this.side = side;
    return side;
  }

  private exec(sql: string, params: SqlValue[]): void {
    let s = this.stmts.get(sql);
    if (!s) this.stmts.set(sql, (s = this.load().prepare(sql)));
    try {
      s.run(params);
    } finally {
      s.reset();
    }
  }

  /** The stored index when it is readable and of this generation; null otherwise. */
  private open(bytes: Uint8Array | null, generation: string): Database | null {
    if (!bytes || bytes.length === 0) return null;
    let side: Database | null = null;
    try {
      side = new this.SQL.Database(bytes);
      const got = side.exec(`SELECT value FROM meta WHERE key = 'generation'`)[0]?.values[0]?.[0];
      if (got === generation) return side;
    } catch {
      // unreadable: replaced by an empty index
    }
    side?.close();
    return null;
  }
}
