/*
 * The example's SQLite databases on sql.js, shared by the graph (the run_sql
 * tool, the schema the agents see, the result the Checker sees) and the
 * reward. Every query runs on a fresh in-memory database built from
 * dbs/<db_id>.sql, so nothing a model writes (an UPDATE, a DROP TABLE) can
 * reach the next query or the reward.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import initSqlJs, { type Database, type SqlJsStatic, type SqlValue } from 'sql.js';

export type QueryResult = { ok: true; columns: string[]; rows: SqlValue[][] } | { ok: false; error: string };

// sql.js is installed beside this file (npm install here); its wasm is found the way Node finds the package itself.
const nodeRequire = createRequire(import.meta.url);
let engine: Promise<SqlJsStatic> | undefined;
const scripts = new Map<string, Promise<string>>();
const schemas = new Map<string, Promise<string>>();

function sqlJs(): Promise<SqlJsStatic> {
  engine ??= initSqlJs({ locateFile: () => nodeRequire.resolve('sql.js/dist/sql-wasm.wasm') });
  return engine;
}

function script(dbId: string): Promise<string> {
  let text = scripts.get(dbId);
  if (!text) {
    // db_id comes from the dataset: it names a file in dbs/, never a path.
    if (!/^[A-Za-z0-9_-]+$/.test(dbId)) return Promise.reject(new Error(`db_id "${dbId}" is not a database name (letters, digits, "_" or "-")`));
    const file = fileURLToPath(new URL(`dbs/${dbId}.sql`, import.meta.url));
    text = readFile(file, 'utf8').catch(() => {
      throw new Error(`no database "${dbId}": ${file} does not exist; add it, or fix the row's db_id`);
    });
    scripts.set(dbId, text);
  }
  return text;
}

async function withDatabase<T>(dbId: string, use: (db: Database) => T): Promise<T> {
  const [SQL, text] = await Promise.all([sqlJs(), script(dbId)]);
  const db = new SQL.Database();
  try {
    db.run(text);
    return use(db);
  } finally {
    db.close();
  }
}

function select(db: Database, sql: string): { columns: string[]; rows: SqlValue[][] } {
  // prepare() compiles the first statement only: text after it never runs.
  const statement = db.prepare(sql);
  try {
    const rows: SqlValue[][] = [];
    while (statement.step()) rows.push(statement.get());
    return { columns: statement.getColumnNames(), rows };
  } finally {
    statement.free();
  }
}

/** Runs one query on a fresh copy of the database; an SQL error is a result, not a throw. */
export function runQuery(dbId: string, sql: string): Promise<QueryResult> {
  return withDatabase(dbId, (db): QueryResult => {
    try {
      return { ok: true, ...select(db, sql) };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  });
}

/** Rows as a model reads them: a header line, then one line per row, cut after `max` rows. */
export function formatResult(result: QueryResult, max = 20): string {
  if (!result.ok) return `Error: ${result.error}`;
  const line = (values: readonly unknown[]): string => values.map((v) => (v === null ? 'NULL' : String(v))).join(' | ');
  const shown = result.rows.slice(0, max).map(line);
  const more = result.rows.length > max ? [`... ${result.rows.length - max} more rows`] : [];
  return [line(result.columns), ...shown, ...more, `(${result.rows.length} row${result.rows.length === 1 ? '' : 's'})`].join('\n');
}

/** The CREATE TABLE statements and three rows of each table: the agents learn the spelling of values ('crime', not 'Crime') from them. */
export function describeDatabase(dbId: string): Promise<string> {
  let schema = schemas.get(dbId);
  if (!schema) {
    schema = withDatabase(dbId, (db) => {
      const tables = select(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").rows;
      return tables
        .map(([name, create]) => {
          const sample = select(db, `SELECT * FROM "${String(name)}" LIMIT 3`);
          return `${String(create)};\n/* first rows of ${String(name)}:\n${formatResult({ ok: true, ...sample })}\n*/`;
        })
        .join('\n\n');
    });
    schemas.set(dbId, schema);
  }
  return schema;
}
