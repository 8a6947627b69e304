import type { BindParams, Database, SqlValue, Statement } from 'sql.js';

/** A catalog row as sql.js returns it. */
export type Row = Record<string, SqlValue>;

/**
 * The catalog's sql.js database: statements prepared once and reused (every
 * frame applied runs the same few), nested transactions that commit once at
 * the outermost level, and whether anything changed since the catalog was
 * loaded or last exported.
 */
export class CatalogDb {
  /** Changed since loaded or last exported. */
  dirty = false;
  private readonly stmts = new Map<string, Statement>();
  private txDepth = 0;

  constructor(private readonly db: Database) {
    this.configure();
  }

  transaction<T>(fn: () => T): T {
    if (this.txDepth > 0) return fn();
    this.db.run('BEGIN');
    this.txDepth++;
    try {
      const out = fn();
      this.txDepth--;
      this.db.run('COMMIT');
      return out;
    } catch (err) {
      this.txDepth--;
      this.db.run('ROLLBACK');
      throw err;
    }
  }

  run(sql: string, params: BindParams): void {
    const s = this.stmt(sql);
    try {
      s.run(params);
    } finally {
      s.reset();
    }
  }

  get(sql: string, params: readonly SqlValue[] = []): Row | null {
    const s = this.stmt(sql);
    try {
      s.bind(params as SqlValue[]);
      return s.step() ? (s.getAsObject() as Row) : null;
    } finally {
      s.reset();
    }
  }

  all(sql: string, params: readonly SqlValue[] = []): Row[] {
    const s = this.stmt(sql);
    const out: Row[] = [];
    try {
      s.bind(params as SqlValue[]);
      while (s.step()) out.push(s.getAsObject() as Row);
    } finally {
      s.reset();
    }
    return out;
  }

  /** Runs SQL once, without keeping a prepared statement for it. */
  exec(sql: string): void {
    this.db.run(sql);
  }

  /** Rows changed by the last statement. */
  rowsModified(): number {
    return this.db.getRowsModified();
  }

  /** The database as SQLite bytes. */
  export(): Uint8Array {
    // sql.js frees every prepared statement and resets pragmas when it exports.
    this.stmts.clear();
    const bytes = this.db.export();
    this.configure();
    return bytes;
  }

  close(): void {
    for (const s of this.stmts.values()) s.free();
    this.stmts.clear();
    this.db.close();
  }

  private configure(): void {
    // The database lives in memory and is made durable by export; a rollback journal in memory is all a transaction needs.
    this.db.run('PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY');
  }

  private stmt(sql: string): Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }
}

/** `?, ?, …`: n bind placeholders. */
export function placeholders(n: number): string {
  return new Array<string>(n).fill('?').join(', ');
}
