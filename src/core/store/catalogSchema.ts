import type { Database } from 'sql.js';

/**
 * The catalog's schema as an ordered list of migrations; `meta.schema_version`
 * says how many have run. A migration that cannot be done in place may ask for
 * a rebuild instead: the catalog is derived from the journals, so dropping it
 * and replaying them is always correct, only slower.
 */
export interface Migration {
  version: number;
  description: string;
  /** Also what a new catalog runs, so a rebuild migration still carries its DDL. */
  up?: (db: Database) => void;
  /** On an existing catalog: throw the catalog away and replay the journals instead of migrating in place. */
  rebuild?: true;
}

/** meta key set while the rollouts of a migrated catalog still wait for their spans' text to be indexed. */
export const TEXT_BACKFILL = 'text_backfill';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'runs, rollouts, per-agent facts, prompt versions, span locations, consumed journal offsets',
    up: (db) =>
      db.run(`
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        -- journal_offsets: how far each journal/segment has been consumed into this catalog
        CREATE TABLE files(
          id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, writer TEXT,
          consumed INTEGER NOT NULL, size INTEGER NOT NULL,
          state TEXT NOT NULL -- 'open': may grow; 'done': fully consumed, never grows; 'superseded': replaced by a segment
        );
        CREATE TABLE writers(id TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL,
          state TEXT NOT NULL -- 'open' | 'closed' | 'dead'
        );
        CREATE TABLE runs(
          id TEXT PRIMARY KEY, start_time REAL NOT NULL, end_time REAL, status TEXT NOT NULL,
          params TEXT NOT NULL, simulated INTEGER NOT NULL, planned INTEGER NOT NULL,
          updated_at REAL NOT NULL, writer TEXT
        );
        -- rid: a small integer key, so per-agent rows do not repeat the 32-char id (keeps the catalog small)
        CREATE TABLE rollouts(
          rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, run_id TEXT NOT NULL, task_id TEXT NOT NULL, split TEXT,
          sample INTEGER NOT NULL, status TEXT NOT NULL, final_reward REAL, criteria TEXT, judge_failed INTEGER NOT NULL,
          decision TEXT, expected_decision TEXT, turns INTEGER, error TEXT, simulated INTEGER NOT NULL,
          start_time REAL NOT NULL, end_time REAL, span_count INTEGER NOT NULL, writer TEXT
        );
        CREATE INDEX rollouts_run ON rollouts(run_id, start_time);
        CREATE INDEX rollouts_start ON rollouts(start_time);
        CREATE INDEX rollouts_reward ON rollouts(final_reward);
        CREATE INDEX rollouts_writer ON rollouts(writer, status);
        -- no secondary indexes: filters probe it by rid, aggregates scan it
        CREATE TABLE rollout_agents(
          rid INTEGER NOT NULL, ord INTEGER NOT NULL, agent TEXT NOT NULL, prompt_version TEXT,
          model TEXT, model_version TEXT, visits INTEGER NOT NULL, llm_calls INTEGER NOT NULL,
          tool_calls INTEGER NOT NULL, errors INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL, latency_ms REAL NOT NULL,
          PRIMARY KEY(rid, ord)
        ) WITHOUT ROWID;
        CREATE TABLE prompt_versions(hash TEXT PRIMARY KEY, agent TEXT NOT NULL, text TEXT NOT NULL, first_seen REAL NOT NULL);
        CREATE INDEX prompt_versions_agent ON prompt_versions(agent, first_seen);
        -- span frames are never rows: only where to find each trace's frames
        CREATE TABLE trace_locs(trace_id TEXT PRIMARY KEY, locs BLOB NOT NULL, spans INTEGER NOT NULL);
      `),
  },
  {
    version: 2,
    description: 'rollout duration column, so sorting by duration uses an index',
    up: (db) =>
      db.run(`
        ALTER TABLE rollouts ADD COLUMN duration REAL;
        UPDATE rollouts SET duration = end_time - start_time WHERE end_time IS NOT NULL;
        CREATE INDEX rollouts_duration ON rollouts(duration);
      `),
  },
  {
    version: 3,
    description: 're-scores: the reward each rollout ran with, and every later reward under new weights',
    // Adds only what is missing: a catalog whose recorded version is behind its tables (restored, or edited by hand) still migrates.
    up: (db) => {
      const hasColumn = db.exec(`SELECT 1 FROM pragma_table_info('rollouts') WHERE name = 'original_reward'`).length > 0;
      if (!hasColumn) {
        // final_reward is the reward in force (the latest re-score's); original_reward the one the rollout ran with
        db.run(`ALTER TABLE rollouts ADD COLUMN original_reward REAL; UPDATE rollouts SET original_reward = final_reward;`);
      }
      db.run(`
        CREATE TABLE IF NOT EXISTS rescores(id TEXT PRIMARY KEY, at REAL NOT NULL, criteria TEXT NOT NULL, note TEXT, rollouts INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS rescores_at ON rescores(at, id);
        -- keyed by rollout id, not rid: a re-score may be read before the rollout it scores (journals are read in any order)
        CREATE TABLE IF NOT EXISTS reward_revisions(
          rollout_id TEXT NOT NULL, rescore_id TEXT NOT NULL, at REAL NOT NULL, reward_before REAL, reward_after REAL NOT NULL,
          PRIMARY KEY(rollout_id, rescore_id)
        ) WITHOUT ROWID;
      `);
    },
  },
  {
    version: 4,
    description: 'prompt versions per agent: two agents running the same text each own that version',
    up: (db) =>
      db.run(`
        CREATE TABLE prompt_versions_v4(hash TEXT NOT NULL, agent TEXT NOT NULL, text TEXT NOT NULL, first_seen REAL NOT NULL, PRIMARY KEY(agent, hash));
        INSERT INTO prompt_versions_v4(hash, agent, text, first_seen) SELECT hash, agent, text, first_seen FROM prompt_versions;
        DROP TABLE prompt_versions;
        ALTER TABLE prompt_versions_v4 RENAME TO prompt_versions;
        CREATE INDEX prompt_versions_agent ON prompt_versions(agent, first_seen);
        CREATE INDEX prompt_versions_hash ON prompt_versions(hash);
      `),
  },
  {
    version: 5,
    description: "why a rollout failed (its category), the custom reward's breakdown, and answers and prompts cut short",
    // Adds only what is missing (see version 3). Old rows keep null: the report classifies them from their error as before.
    up: (db) => {
      const have = new Set((db.exec(`SELECT name FROM pragma_table_info('rollouts')`)[0]?.values ?? []).map((v) => String(v[0])));
      const columns: Array<[string, string]> = [
        ['failure', 'TEXT'],
        ['reward_breakdown', 'TEXT'],
        ['truncated_answers', 'INTEGER'],
        ['truncated_prompts', 'INTEGER'],
      ];
      for (const [name, type] of columns) if (!have.has(name)) db.run(`ALTER TABLE rollouts ADD COLUMN ${name} ${type}`);
    },
  },
  {
    version: 6,
    description: "the rollouts table: each rollout's token totals, and a full-text index over its spans' text",
    // Adds only what is missing (see version 3).
    up: (db) => {
      const have = new Set((db.exec(`SELECT name FROM pragma_table_info('rollouts')`)[0]?.values ?? []).map((v) => String(v[0])));
      for (const name of ['input_tokens', 'output_tokens']) if (!have.has(name)) db.run(`ALTER TABLE rollouts ADD COLUMN ${name} INTEGER`);
      db.run(`
        UPDATE rollouts SET
          input_tokens = (SELECT COALESCE(SUM(a.input_tokens), 0) FROM rollout_agents a WHERE a.rid = rollouts.rid),
          output_tokens = (SELECT COALESCE(SUM(a.output_tokens), 0) FROM rollout_agents a WHERE a.rid = rollouts.rid);
        -- contentless: the text stays in the journals; the index only answers which documents match
        CREATE VIRTUAL TABLE IF NOT EXISTS rollout_text USING fts4(content="", body, tokenize=unicode61);
        -- a rollout's text is indexed in one or more documents (spans seen before a checkpoint, then the rest)
        CREATE TABLE IF NOT EXISTS rollout_text_docs(docid INTEGER PRIMARY KEY, rid INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS rollout_text_docs_rid ON rollout_text_docs(rid);
      `);
      // The text is only in the span frames: the store indexes the rollouts already here once it has opened (TEXT_BACKFILL).
      if (db.exec('SELECT 1 FROM rollouts LIMIT 1').length > 0) db.run(`INSERT OR REPLACE INTO meta(key, value) VALUES('${TEXT_BACKFILL}', 'pending')`);
    },
  },
  {
    version: 7,
    description: 'attempts a resumed run redid (which later attempt of the same task and sample replaced each one), and the reward definition each rollout was scored under',
    // Adds only what is missing (see version 3). No stored rollout supersedes another yet: nothing to fill in.
    up: (db) => {
      const have = new Set((db.exec(`SELECT name FROM pragma_table_info('rollouts')`)[0]?.values ?? []).map((v) => String(v[0])));
      if (!have.has('superseded_by')) db.run('ALTER TABLE rollouts ADD COLUMN superseded_by TEXT');
      if (!have.has('reward_definition')) db.run('ALTER TABLE rollouts ADD COLUMN reward_definition TEXT');
      // The links themselves, whichever of the two rollouts is read first (journals are read in name order, not time order).
      db.run('CREATE TABLE IF NOT EXISTS rollout_supersedes(old_id TEXT PRIMARY KEY, new_id TEXT NOT NULL)');
    },
  },
  {
    version: 8,
    description: "a run's attempts by task and sample: two attempts of one key that ran at once (workers of a sharded run) resolve to one current attempt",
    up: (db) => {
      db.run('CREATE INDEX IF NOT EXISTS rollouts_key ON rollouts(run_id, task_id, sample)');
    },
  },
  {
    version: 9,
    description: 'the full-text index moves out of the catalog into a file of its own, loaded only for searches (opening a store no longer holds it in memory)',
    // The index cannot be copied out of a contentless table: the rollouts already here are indexed again from their spans on the first search.
    up: (db) => {
      db.run('DROP TABLE IF EXISTS rollout_text; DROP TABLE IF EXISTS rollout_text_docs');
      if (db.exec('SELECT 1 FROM rollouts LIMIT 1').length > 0) db.run(`INSERT OR REPLACE INTO meta(key, value) VALUES('${TEXT_BACKFILL}', 'pending')`);
    },
  },
  {
    version: 10,
    description: "per-agent rows name their agent, prompt version, model and model version by id: each string is stored once, in agent_strings (the catalog is held in memory whole)",
    // In place: the strings are gathered, the rows copied with their ids. A catalog whose rows already have ids (its recorded version behind its tables, see version 3) keeps them.
    up: (db) => {
      db.run('CREATE TABLE IF NOT EXISTS agent_strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE)');
      const have = new Set((db.exec(`SELECT name FROM pragma_table_info('rollout_agents')`)[0]?.values ?? []).map((v) => String(v[0])));
      if (have.has('agent_id')) return;
      db.run(`
        INSERT OR IGNORE INTO agent_strings(value)
          SELECT agent FROM rollout_agents
          UNION SELECT prompt_version FROM rollout_agents WHERE prompt_version IS NOT NULL
          UNION SELECT model FROM rollout_agents WHERE model IS NOT NULL
          UNION SELECT model_version FROM rollout_agents WHERE model_version IS NOT NULL;
        CREATE TABLE rollout_agents_v10(
          rid INTEGER NOT NULL, ord INTEGER NOT NULL, agent_id INTEGER NOT NULL, prompt_version_id INTEGER,
          model_id INTEGER, model_version_id INTEGER, visits INTEGER NOT NULL, llm_calls INTEGER NOT NULL,
          tool_calls INTEGER NOT NULL, errors INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
          output_tokens INTEGER NOT NULL, latency_ms REAL NOT NULL,
          PRIMARY KEY(rid, ord)
        ) WITHOUT ROWID;
        INSERT INTO rollout_agents_v10
          SELECT a.rid, a.ord, g.id, p.id, m.id, v.id, a.visits, a.llm_calls, a.tool_calls, a.errors, a.input_tokens, a.output_tokens, a.latency_ms
          FROM rollout_agents a
          JOIN agent_strings g ON g.value = a.agent
          LEFT JOIN agent_strings p ON p.value = a.prompt_version
          LEFT JOIN agent_strings m ON m.value = a.model
          LEFT JOIN agent_strings v ON v.value = a.model_version;
        DROP TABLE rollout_agents;
        ALTER TABLE rollout_agents_v10 RENAME TO rollout_agents;
      `);
    },
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** The schema version recorded in a catalog; 0 for an empty database. */
export function schemaVersionOf(db: Database): number {
  const hasMeta = db.exec(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'`).length > 0;
  if (!hasMeta) return 0;
  const rows = db.exec(`SELECT value FROM meta WHERE key = 'schema_version'`);
  const v = Number(rows[0]?.values[0]?.[0] ?? 0);
  return Number.isInteger(v) ? v : 0;
}

export type MigrationOutcome = 'created' | 'current' | 'migrated' | 'rebuild' | 'newer';

/**
 * Brings a catalog to SCHEMA_VERSION in one transaction. 'rebuild' means a
 * migration on the way asked for one; 'newer' means the catalog was written by
 * a later version of Rollout Lab (the caller must not overwrite it with an
 * older schema, and replays the journals instead).
 */
export function migrate(db: Database, upTo: number = SCHEMA_VERSION): MigrationOutcome {
  const from = schemaVersionOf(db);
  if (from > SCHEMA_VERSION) return 'newer';
  if (from === upTo) return 'current';
  const pending = MIGRATIONS.filter((m) => m.version > from && m.version <= upTo);
  if (from > 0 && pending.some((m) => m.rebuild)) return 'rebuild';
  db.run('BEGIN');
  try {
    for (const m of pending) m.up?.(db);
    db.run(`INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)`, [String(upTo)]);
    db.run('COMMIT');
  } catch (err) {
    db.run('ROLLBACK');
    throw err;
  }
  if (from === 0) return 'created';
  // A migration that dropped or rewrote tables (versions 9 and 10) leaves their pages free: give them back, since the whole file is held in memory.
  if (Number(db.exec('PRAGMA freelist_count')[0]?.values[0]?.[0] ?? 0) > 0) db.run('VACUUM');
  return 'migrated';
}
