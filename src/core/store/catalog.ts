import type { BindParams, Database, SqlJsStatic, SqlValue, Statement } from 'sql.js';
import { TEXT_BACKFILL, migrate } from './catalogSchema';
import { spanTextPieces } from './rolloutText';
import type { SpanRecord } from '../trace/span';
import { isFailureKind } from './failureKinds';
import { appendLoc, decodeLocs, encodeLocs } from './spanLocations';
import { rolloutCost, tableQuerySql, type ModelPrices, type RolloutTableQuery, type RolloutTablePage, type RolloutTableRow } from './tableQuery';
import type {
  AgentAggregate,
  PromptVersionRecord,
  RescoreRecord,
  RescoreSummary,
  RewardRevision,
  RolloutAgentRecord,
  RolloutQuery,
  RolloutRecord,
  RolloutStatus,
  RunRecord,
} from './types';

/** A journal or segment as the catalog knows it: how far it has been consumed. */
export interface FileState {
  id: number;
  name: string;
  kind: 'journal' | 'segment';
  writer: string | null;
  consumed: number;
  size: number;
  state: 'open' | 'done' | 'superseded';
}

export interface WriterState {
  id: string;
  pid: number;
  host: string;
  state: 'open' | 'closed' | 'dead';
}

/** How a catalog came to be: loaded as is, created empty, migrated, or empty because the stored one could not be used. */
export type CatalogOrigin = 'loaded' | 'created' | 'migrated' | 'corrupt' | 'rebuild' | 'newer';

type Row = Record<string, SqlValue>;

const ROLLOUT_COLUMN_LIST = [
  'id', 'run_id', 'task_id', 'split', 'sample', 'status', 'final_reward', 'criteria', 'judge_failed', 'decision',
  'expected_decision', 'turns', 'error', 'simulated', 'start_time', 'end_time', 'span_count', 'writer', 'duration', 'original_reward',
  'failure', 'reward_breakdown', 'truncated_answers', 'truncated_prompts', 'input_tokens', 'output_tokens',
];
const ROLLOUT_COLUMNS = ROLLOUT_COLUMN_LIST.join(', ');
const ROLLOUT_UPDATES = ROLLOUT_COLUMN_LIST.filter((c) => c !== 'id').map((c) => `${c} = excluded.${c}`).join(', ');

/** The error a rollout gets when its writer died before finishing it. */
export const INTERRUPTED = 'interrupted';

/**
 * The queryable index of the store, in sql.js: runs, rollouts, per-agent
 * facts, prompt versions and where each trace's span frames lie. Everything in
 * it is derived from the journals and segments, so it can be thrown away and
 * rebuilt; spans themselves are never rows here, which keeps it small.
 * Span locations of traces still being written collect in memory (`pending`)
 * and reach the table when the rollout ends or at a checkpoint.
 */
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

export class Catalog {
  readonly files = new Map<string, FileState>();
  readonly filesById = new Map<number, FileState>();
  readonly writers = new Map<string, WriterState>();
  /** Changed since loaded or last exported. */
  dirty = false;
  /** Journal names the known segments replace (read from their headers once per catalog; not stored). */
  segmentSupersedes: Set<string> | null = null;
  private readonly pending = new Map<string, { locs: number[]; spans: number }>();
  /** Searchable text of spans not yet in the full-text index, each piece once per trace. */
  private readonly pendingText = new Map<string, Set<string>>();
  private readonly stmts = new Map<string, Statement>();
  private nextFileId = 1;
  private txDepth = 0;

  private constructor(private db: Database) {
    this.configure();
    for (const r of this.all('SELECT id, name, kind, writer, consumed, size, state FROM files')) {
      const f: FileState = {
        id: Number(r['id']),
        name: String(r['name']),
        kind: r['kind'] === 'segment' ? 'segment' : 'journal',
        writer: r['writer'] === null ? null : String(r['writer']),
        consumed: Number(r['consumed']),
        size: Number(r['size']),
        state: r['state'] as FileState['state'],
      };
      this.files.set(f.name, f);
      this.filesById.set(f.id, f);
      this.nextFileId = Math.max(this.nextFileId, f.id + 1);
    }
    for (const r of this.all('SELECT id, pid, host, state FROM writers')) {
      this.writers.set(String(r['id']), { id: String(r['id']), pid: Number(r['pid']), host: String(r['host']), state: r['state'] as WriterState['state'] });
    }
  }

  /** Loads a stored catalog (or starts an empty one when there is none, or it is unusable) and brings its schema up to date. */
  static open(SQL: SqlJsStatic, bytes: Uint8Array | null): { catalog: Catalog; origin: CatalogOrigin } {
    if (bytes && bytes.length > 0) {
      let db: Database | null = null;
      try {
        db = new SQL.Database(bytes);
        const outcome = migrate(db);
        if (outcome === 'current' || outcome === 'migrated') {
          const catalog = new Catalog(db);
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
    const c = new Catalog(db);
    c.dirty = true;
    return c;
  }

  // ---- files and writers -------------------------------------------------

  addFile(name: string, kind: FileState['kind'], writer: string | null): FileState {
    const f: FileState = { id: this.nextFileId++, name, kind, writer, consumed: 0, size: 0, state: 'open' };
    this.files.set(name, f);
    this.filesById.set(f.id, f);
    this.dirty = true;
    return f;
  }

  removeFile(name: string): void {
    const f = this.files.get(name);
    if (!f) return;
    this.files.delete(name);
    this.filesById.delete(f.id);
    this.dirty = true;
  }

  addWriter(id: string, pid: number, host: string): WriterState {
    let w = this.writers.get(id);
    if (!w) {
      w = { id, pid, host, state: 'open' };
      this.writers.set(id, w);
      this.dirty = true;
    }
    return w;
  }

  // ---- applying journal records -------------------------------------------

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

  /** Last writer wins, by the time the record was written, so every process derives the same run whichever journal it reads first. */
  applyRun(run: RunRecord, at: number, writer: string | null): void {
    this.run(
      `INSERT INTO runs(id, start_time, end_time, status, params, simulated, planned, updated_at, writer)
       VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET start_time = excluded.start_time, end_time = excluded.end_time, status = excluded.status,
         params = excluded.params, simulated = excluded.simulated, planned = excluded.planned,
         updated_at = excluded.updated_at, writer = excluded.writer
       WHERE excluded.updated_at >= runs.updated_at`,
      [run.id, run.startTime, run.endTime, run.status, JSON.stringify(run.params ?? {}), run.simulated ? 1 : 0, run.planned, at, writer],
    );
    this.dirty = true;
  }

  applyRolloutStart(r: RolloutRecord, writer: string | null): void {
    this.transaction(() => {
      this.run(`INSERT OR IGNORE INTO rollouts(${ROLLOUT_COLUMNS}) VALUES(${placeholders(ROLLOUT_COLUMN_LIST.length)})`, rolloutValues(r, writer));
      if (this.db.getRowsModified() > 0) {
        this.insertAgents(this.rid(r.id), r);
        this.applyLatestReward(r.id);
      }
    });
    this.dirty = true;
  }

  applyRolloutEnd(r: RolloutRecord, writer: string | null): void {
    this.transaction(() => {
      // An upsert, not a replace: the row keeps its rid, which its agent rows point at.
      this.run(`INSERT INTO rollouts(${ROLLOUT_COLUMNS}) VALUES(${placeholders(ROLLOUT_COLUMN_LIST.length)}) ON CONFLICT(id) DO UPDATE SET ${ROLLOUT_UPDATES}`, rolloutValues(r, writer));
      const rid = this.rid(r.id);
      this.run('DELETE FROM rollout_agents WHERE rid = ?', [rid]);
      this.insertAgents(rid, r);
      this.applyLatestReward(r.id);
      this.flushPending(r.id);
    });
    this.dirty = true;
  }

  /** Stored once per agent and hash; the earliest sighting dates it, whatever order journals are read in. */
  applyPrompt(p: PromptVersionRecord): void {
    this.run(
      `INSERT INTO prompt_versions(hash, agent, text, first_seen) VALUES(?, ?, ?, ?)
       ON CONFLICT(agent, hash) DO UPDATE SET first_seen = excluded.first_seen
       WHERE excluded.first_seen < prompt_versions.first_seen`,
      [p.hash, p.agent, p.text, p.firstSeen],
    );
    this.dirty = true;
  }

  /**
   * Records a re-score and puts each rollout's latest reward in force. Order
   * independent: a re-score read before its rollout (journals and segments are
   * read in name order, not time order) waits in reward_revisions and is
   * applied when the rollout arrives; the latest re-score (by time, then id)
   * wins whichever was read first. Applying one twice changes nothing.
   */
  applyRescore(r: RescoreRecord): void {
    this.transaction(() => {
      const criteria = JSON.stringify(r.criteria);
      this.run('INSERT OR REPLACE INTO rescores(id, at, criteria, note, rollouts) VALUES(?, ?, ?, ?, ?)', [r.id, r.at, criteria, r.note ?? null, r.rewards.length]);
      for (const w of r.rewards) {
        this.run('INSERT OR REPLACE INTO reward_revisions(rollout_id, rescore_id, at, reward_before, reward_after) VALUES(?, ?, ?, ?, ?)', [
          w.rolloutId,
          r.id,
          r.at,
          w.before,
          w.after,
        ]);
        this.applyLatestReward(w.rolloutId);
      }
    });
    this.dirty = true;
  }

  rolloutStatus(id: string): RolloutStatus | null {
    const r = this.get('SELECT status FROM rollouts WHERE id = ?', [id]);
    return r ? (String(r['status']) as RolloutStatus) : null;
  }

  hasRescore(id: string): boolean {
    return this.get('SELECT 1 AS x FROM rescores WHERE id = ?', [id]) !== null;
  }

  /** Newest first. */
  listRescores(): RescoreSummary[] {
    return this.all('SELECT id, at, criteria, note, rollouts FROM rescores ORDER BY at DESC, id DESC').map((r) => {
      const out: RescoreSummary = {
        id: String(r['id']),
        at: Number(r['at']),
        criteria: JSON.parse(String(r['criteria'])) as RescoreSummary['criteria'],
        rollouts: Number(r['rollouts']),
      };
      if (r['note'] !== null) out.note = String(r['note']);
      return out;
    });
  }

  /** The reward the rollout ran with, then each re-score in order; empty for a rollout the catalog does not know. */
  rewardHistory(rolloutId: string): RewardRevision[] {
    const row = this.get('SELECT original_reward, start_time, end_time FROM rollouts WHERE id = ?', [rolloutId]);
    if (!row) return [];
    const original: RewardRevision = {
      rolloutId,
      rescoreId: null,
      at: Number(row['end_time'] ?? row['start_time']),
      reward: row['original_reward'] === null ? null : Number(row['original_reward']),
      criteria: null,
    };
    const revisions = this.all(
      `SELECT v.rescore_id, v.at, v.reward_after, s.criteria FROM reward_revisions v LEFT JOIN rescores s ON s.id = v.rescore_id
       WHERE v.rollout_id = ? ORDER BY v.at, v.rescore_id`,
      [rolloutId],
    ).map(
      (v): RewardRevision => ({
        rolloutId,
        rescoreId: String(v['rescore_id']),
        at: Number(v['at']),
        reward: Number(v['reward_after']),
        criteria: v['criteria'] === null ? null : (JSON.parse(String(v['criteria'])) as Record<string, { weight: number }>),
      }),
    );
    return [original, ...revisions];
  }

  addSpanLoc(traceId: string, fileId: number, offset: number, length: number, spans = 1): void {
    let p = this.pending.get(traceId);
    if (!p) {
      p = { locs: [], spans: 0 };
      this.pending.set(traceId, p);
    }
    appendLoc(p.locs, fileId, offset, length);
    p.spans += spans;
    this.dirty = true;
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
    this.transaction(() => {
      for (const id of ids) {
        const p = this.pending.get(id)!;
        const row = this.get('SELECT locs, spans FROM trace_locs WHERE trace_id = ?', [id]);
        const locs = row ? decodeLocs(row['locs'] as Uint8Array) : [];
        for (let i = 0; i < p.locs.length; i += 3) appendLoc(locs, p.locs[i]!, p.locs[i + 1]!, p.locs[i + 2]!);
        const spans = (row ? Number(row['spans']) : 0) + p.spans;
        this.run('INSERT OR REPLACE INTO trace_locs(trace_id, locs, spans) VALUES(?, ?, ?)', [id, encodeLocs(locs), spans]);
        this.pending.delete(id);
      }
    });
  }

  /** Text of a trace's span to index for full-text search (when the trace is next flushed). */
  addSpanText(traceId: string, pieces: readonly string[]): void {
    let set = this.pendingText.get(traceId);
    if (!set) this.pendingText.set(traceId, (set = new Set()));
    for (const p of pieces) set.add(p);
    this.dirty = true;
  }

  /** Indexes the pending text of traces whose rollout is known; the others wait for their rollout. */
  private flushText(traceId?: string): void {
    const ids = traceId === undefined ? [...this.pendingText.keys()] : this.pendingText.has(traceId) ? [traceId] : [];
    if (!ids.length) return;
    this.transaction(() => {
      for (const id of ids) {
        const rid = this.get('SELECT rid FROM rollouts WHERE id = ?', [id])?.['rid'];
        if (rid === undefined) continue;
        const text = indexedWords(this.pendingText.get(id)!);
        this.pendingText.delete(id);
        this.run('INSERT INTO rollout_text_docs(rid) VALUES(?)', [Number(rid)]);
        this.run('INSERT INTO rollout_text(docid, body) VALUES(last_insert_rowid(), ?)', [text]);
      }
    });
  }

  /**
   * A catalog migrated from before the full-text index has its rollouts'
   * text indexed here, once: `spansOf` reads a trace's spans from the files.
   * Returns how many rollouts were indexed (0 when nothing was waiting).
   */
  backfillText(spansOf: (traceId: string) => readonly SpanRecord[]): number {
    if (this.get('SELECT value FROM meta WHERE key = ?', [TEXT_BACKFILL]) === null) return 0;
    const ids = this.all('SELECT r.id FROM rollouts r WHERE NOT EXISTS (SELECT 1 FROM rollout_text_docs d WHERE d.rid = r.rid)').map((r) => String(r['id']));
    this.transaction(() => {
      for (const id of ids) {
        const pieces: string[] = [];
        for (const span of spansOf(id)) spanTextPieces(span, pieces);
        this.addSpanText(id, pieces);
        this.flushText(id);
      }
      this.run('DELETE FROM meta WHERE key = ?', [TEXT_BACKFILL]);
    });
    this.dirty = true;
    return ids.length;
  }

  /** Compaction moved a trace's frames: point it at their new home (its span count does not change). */
  replaceTraceLocs(traceId: string, locs: readonly number[]): void {
    this.flushPending(traceId);
    this.run('UPDATE trace_locs SET locs = ? WHERE trace_id = ?', [encodeLocs(locs), traceId]);
    this.dirty = true;
  }

  closeWriter(writerId: string): void {
    const w = this.writers.get(writerId);
    if (w) w.state = 'closed';
    this.interruptWriter(writerId);
  }

  markWriterDead(writerId: string): void {
    const w = this.writers.get(writerId);
    if (w && w.state === 'open') w.state = 'dead';
    this.interruptWriter(writerId);
  }

  /** A writer that is gone leaves no running rollouts or runs: they failed, and resume must redo them. */
  private interruptWriter(writerId: string): void {
    this.transaction(() => {
      this.run(`UPDATE rollouts SET status = 'failed', error = ?, failure = 'interrupted' WHERE writer = ? AND status = 'running'`, [INTERRUPTED, writerId]);
      this.run(`UPDATE runs SET status = 'interrupted' WHERE writer = ? AND status = 'running'`, [writerId]);
    });
    this.dirty = true;
  }

  // ---- queries --------------------------------------------------------------

  getRun(id: string): RunRecord | null {
    const r = this.get('SELECT * FROM runs WHERE id = ?', [id]);
    return r ? toRun(r) : null;
  }

  listRuns(): RunRecord[] {
    return this.all('SELECT * FROM runs ORDER BY start_time DESC, id').map(toRun);
  }

  getRollout(id: string): RolloutRecord | null {
    const r = this.get(`SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id WHERE r.id = ?`, [id]);
    return r ? this.withAgents([r])[0]! : null;
  }

  listRollouts(q: RolloutQuery = {}): { rollouts: RolloutRecord[]; total: number } {
    const where: string[] = [];
    const params: SqlValue[] = [];
    if (q.runId !== undefined) {
      where.push('r.run_id = ?');
      params.push(q.runId);
    }
    if (q.status !== undefined) {
      const statuses: RolloutStatus[] = Array.isArray(q.status) ? q.status : [q.status];
      where.push(`r.status IN (${placeholders(statuses.length)})`);
      params.push(...statuses);
    }
    if (q.split !== undefined) {
      where.push('r.split = ?');
      params.push(q.split);
    }
    if (q.minReward !== undefined) {
      where.push('r.final_reward >= ?');
      params.push(q.minReward);
    }
    if (q.maxReward !== undefined) {
      where.push('r.final_reward <= ?');
      params.push(q.maxReward);
    }
    if (q.taskId !== undefined) {
      where.push('r.task_id = ?');
      params.push(q.taskId);
    }
    if (q.promptVersion !== undefined || q.agent !== undefined) {
      const cond = ['a.rid = r.rid'];
      if (q.agent !== undefined) {
        cond.push('a.agent = ?');
        params.push(q.agent);
      }
      if (q.promptVersion !== undefined) {
        cond.push('a.prompt_version = ?');
        params.push(q.promptVersion);
      }
      where.push(`EXISTS (SELECT 1 FROM rollout_agents a WHERE ${cond.join(' AND ')})`);
    }
    const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = Number(this.get(`SELECT COUNT(*) AS n FROM rollouts r ${whereSql}`, params)?.['n'] ?? 0);
    const column = q.sort === 'finalReward' ? 'r.final_reward' : q.sort === 'duration' ? 'r.duration' : 'r.start_time';
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    // Rollouts without a value (still running, no reward) go last either way; the id keeps pages stable.
    const orderSql = `ORDER BY ${column} IS NULL, ${column} ${dir}, r.id ${dir}`;
    const limit = q.limit === undefined ? -1 : Math.max(0, Math.min(q.limit, Number.MAX_SAFE_INTEGER));
    const offset = Math.max(0, q.offset ?? 0);
    const rows = this.all(
      `SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id ${whereSql} ${orderSql} LIMIT ? OFFSET ?`,
      [...params, limit, offset],
    );
    return { rollouts: this.withAgents(rows), total };
  }

  /** One page of the rollouts table: filters, full-text search and sort in SQL (see tableQuerySql), then the page's agents. */
  queryTable(q: RolloutTableQuery, prices: ModelPrices | null = null): RolloutTablePage {
    if (q.text) this.flushText();
    const sql = tableQuerySql(q, prices);
    const total = Number(this.get(sql.countSql, sql.countParams)?.['n'] ?? 0);
    const rows = this.all(sql.pageSql, sql.pageParams);
    const agents = this.agentsByRid(rows.map((r) => Number(r['rid'])));
    const spans = new Map<string, number>();
    for (let i = 0; i < rows.length; i += 500) {
      const ids = rows.slice(i, i + 500).map((r) => String(r['id']));
      for (const t of this.all(`SELECT trace_id, spans FROM trace_locs WHERE trace_id IN (${placeholders(ids.length)})`, ids)) spans.set(String(t['trace_id']), Number(t['spans']));
    }
    const out = rows.map((r): RolloutTableRow => {
      const id = String(r['id']);
      const a = agents.get(Number(r['rid'])) ?? [];
      const observed = this.observedSpans(id, spans.get(id));
      return {
        id,
        runId: String(r['run_id']),
        taskId: String(r['task_id']),
        split: r['split'] === null ? null : (String(r['split']) as RolloutTableRow['split']),
        sample: Number(r['sample']),
        status: String(r['status']) as RolloutStatus,
        failure: r['failure'] === null ? null : String(r['failure']),
        reward: r['final_reward'] === null ? null : Number(r['final_reward']),
        criteria: r['criteria'] === null ? null : (JSON.parse(String(r['criteria'])) as Record<string, number>),
        decision: r['decision'] === null ? null : String(r['decision']),
        expectedDecision: r['expected_decision'] === null ? null : String(r['expected_decision']),
        turns: r['turns'] === null ? null : Number(r['turns']),
        inputTokens: r['input_tokens'] === null ? null : Number(r['input_tokens']),
        outputTokens: r['output_tokens'] === null ? null : Number(r['output_tokens']),
        latencyMs: r['duration'] === null ? null : Number(r['duration']),
        cost: rolloutCost(a, prices),
        simulated: Number(r['simulated']) === 1,
        startTime: Number(r['start_time']),
        spans: observed > 0 ? observed : Number(r['span_count']),
        agents: a.map(({ agent, promptVersion, model, modelVersion }) => ({ agent, promptVersion, model, modelVersion })),
      };
    });
    return { rows: out, total, offset: Math.max(0, Math.floor(q.offset ?? 0)) };
  }

  /** The ids of every rollout a table query matches, in its order (no page). */
  queryTableIds(q: RolloutTableQuery, prices: ModelPrices | null = null): string[] {
    if (q.text) this.flushText();
    const sql = tableQuerySql(q, prices);
    return this.all(sql.idsSql, sql.idsParams).map((r) => String(r['id']));
  }

  /** What the table's filters can choose from: agents, failure categories, and the prompt and model versions each agent ran. */
  tableFacets(): { agents: string[]; failures: string[]; promptVersions: Array<{ agent: string; hash: string; firstSeen: number }>; modelVersions: Array<{ model: string; version: string }> } {
    return {
      agents: this.all('SELECT DISTINCT agent FROM rollout_agents ORDER BY agent').map((r) => String(r['agent'])),
      failures: this.all('SELECT DISTINCT failure FROM rollouts WHERE failure IS NOT NULL ORDER BY failure').map((r) => String(r['failure'])),
      promptVersions: this.all('SELECT agent, hash, first_seen FROM prompt_versions ORDER BY agent, first_seen').map((r) => ({
        agent: String(r['agent']),
        hash: String(r['hash']),
        firstSeen: Number(r['first_seen']),
      })),
      modelVersions: this.all('SELECT DISTINCT model, model_version FROM rollout_agents WHERE model IS NOT NULL AND model_version IS NOT NULL ORDER BY model, model_version').map((r) => ({
        model: String(r['model']),
        version: String(r['model_version']),
      })),
    };
  }

  /** Keys of rollouts that ran to an end; interrupted ones are left out so resume redoes them. */
  finishedKeys(runId: string): Set<string> {
    const rows = this.all(
      `SELECT task_id, sample FROM rollouts WHERE run_id = ? AND (status = 'succeeded' OR (status = 'failed' AND (error IS NULL OR error <> ?)))`,
      [runId, INTERRUPTED],
    );
    return new Set(rows.map((r) => `${String(r['task_id'])}#${Number(r['sample'])}`));
  }

  aggregateByAgent(q: { runId?: string; agent?: string } = {}): AgentAggregate[] {
    const where = [`r.status <> 'running'`];
    const params: SqlValue[] = [];
    if (q.runId !== undefined) {
      where.push('r.run_id = ?');
      params.push(q.runId);
    }
    if (q.agent !== undefined) {
      where.push('a.agent = ?');
      params.push(q.agent);
    }
    const rows = this.all(
      `SELECT a.agent, a.prompt_version, COUNT(DISTINCT a.rid) AS rollouts, AVG(r.final_reward) AS mean_reward,
              SUM(a.visits) AS visits, SUM(a.llm_calls) AS llm_calls, SUM(a.tool_calls) AS tool_calls, SUM(a.errors) AS errors,
              AVG(a.latency_ms) AS mean_latency, SUM(a.input_tokens) AS input_tokens, SUM(a.output_tokens) AS output_tokens
       FROM rollout_agents a JOIN rollouts r ON r.rid = a.rid
       WHERE ${where.join(' AND ')}
       GROUP BY a.agent, a.prompt_version
       ORDER BY a.agent, MIN(r.start_time), a.prompt_version`,
      params,
    );
    return rows.map((r) => ({
      agent: String(r['agent']),
      promptVersion: r['prompt_version'] === null ? null : String(r['prompt_version']),
      rollouts: Number(r['rollouts']),
      meanReward: r['mean_reward'] === null ? null : Number(r['mean_reward']),
      visits: Number(r['visits']),
      llmCalls: Number(r['llm_calls']),
      toolCalls: Number(r['tool_calls']),
      errors: Number(r['errors']),
      meanLatencyMs: Number(r['mean_latency'] ?? 0),
      inputTokens: Number(r['input_tokens']),
      outputTokens: Number(r['output_tokens']),
    }));
  }

  /** A version's text (the same for every agent that ran it); with an agent, only that agent's. */
  getPromptVersion(hash: string, agent?: string): PromptVersionRecord | null {
    const r =
      agent === undefined
        ? this.get('SELECT * FROM prompt_versions WHERE hash = ? ORDER BY first_seen, agent LIMIT 1', [hash])
        : this.get('SELECT * FROM prompt_versions WHERE agent = ? AND hash = ?', [agent, hash]);
    return r ? toPrompt(r) : null;
  }

  listPromptVersions(agent?: string): PromptVersionRecord[] {
    return agent === undefined
      ? this.all('SELECT * FROM prompt_versions ORDER BY first_seen, hash').map(toPrompt)
      : this.all('SELECT * FROM prompt_versions WHERE agent = ? ORDER BY first_seen, hash', [agent]).map(toPrompt);
  }

  /** Where a trace's span frames are, stored and pending together, as (file id, offset, length) triples. */
  traceLocs(traceId: string): number[] {
    const row = this.get('SELECT locs FROM trace_locs WHERE trace_id = ?', [traceId]);
    const locs = row ? decodeLocs(row['locs'] as Uint8Array) : [];
    const p = this.pending.get(traceId);
    if (p) for (let i = 0; i < p.locs.length; i += 3) appendLoc(locs, p.locs[i]!, p.locs[i + 1]!, p.locs[i + 2]!);
    return locs;
  }

  /** Runs last written by one of these writers (compaction carries their final state along). */
  runsByWriters(writerIds: readonly string[]): Array<{ run: RunRecord; at: number }> {
    if (!writerIds.length) return [];
    return this.all(`SELECT * FROM runs WHERE writer IN (${placeholders(writerIds.length)})`, writerIds).map((r) => ({ run: toRun(r), at: Number(r['updated_at']) }));
  }

  /** Rollouts written by one of these writers, with the reward they ran with (re-scores travel in their own frames). */
  rolloutsByWriters(writerIds: readonly string[]): RolloutRecord[] {
    if (!writerIds.length) return [];
    const rows = this.all(
      `SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id WHERE r.writer IN (${placeholders(writerIds.length)})`,
      writerIds,
    );
    return this.withAgents(rows.map((r) => ({ ...r, final_reward: r['original_reward'] ?? null })));
  }

  counts(): { rollouts: number; spans: number } {
    const rollouts = Number(this.get('SELECT COUNT(*) AS n FROM rollouts')?.['n'] ?? 0);
    let spans = Number(this.get('SELECT COALESCE(SUM(spans), 0) AS n FROM trace_locs')?.['n'] ?? 0);
    for (const p of this.pending.values()) spans += p.spans;
    return { rollouts, spans };
  }

  // ---- persistence ----------------------------------------------------------

  /** The whole catalog as SQLite bytes, file and writer bookkeeping included. */
  export(): Uint8Array {
    this.flushPending();
    this.transaction(() => {
      this.db.run('DELETE FROM files');
      for (const f of this.files.values()) {
        this.run('INSERT INTO files(id, name, kind, writer, consumed, size, state) VALUES(?, ?, ?, ?, ?, ?, ?)', [f.id, f.name, f.kind, f.writer, f.consumed, f.size, f.state]);
      }
      this.db.run('DELETE FROM writers');
      for (const w of this.writers.values()) this.run('INSERT INTO writers(id, pid, host, state) VALUES(?, ?, ?, ?)', [w.id, w.pid, w.host, w.state]);
    });
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

  // ---- internals ------------------------------------------------------------

  private configure(): void {
    // The database lives in memory and is made durable by export; a rollback journal in memory is all a transaction needs.
    this.db.run('PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA temp_store = MEMORY');
  }

  private rid(id: string): number {
    return Number(this.get('SELECT rid FROM rollouts WHERE id = ?', [id])!['rid']);
  }

  /** The latest re-score's reward, if the rollout has one, replaces the reward it ran with. */
  private applyLatestReward(rolloutId: string): void {
    const latest = this.get('SELECT reward_after FROM reward_revisions WHERE rollout_id = ? ORDER BY at DESC, rescore_id DESC LIMIT 1', [rolloutId]);
    if (latest) this.run('UPDATE rollouts SET final_reward = ? WHERE id = ?', [Number(latest['reward_after']), rolloutId]);
  }

  private insertAgents(rid: number, r: RolloutRecord): void {
    r.agents.forEach((a, ord) =>
      this.run(
        `INSERT INTO rollout_agents(rid, ord, agent, prompt_version, model, model_version, visits, llm_calls, tool_calls, errors, input_tokens, output_tokens, latency_ms)
         VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [rid, ord, a.agent, a.promptVersion, a.model, a.modelVersion, a.visits, a.llmCalls, a.toolCalls, a.errors, a.inputTokens, a.outputTokens, a.latencyMs],
      ),
    );
  }

  private withAgents(rows: Row[]): RolloutRecord[] {
    const agents = this.agentsByRid(rows.map((r) => Number(r['rid'])));
    return rows.map((r) => {
      const stored = r['observed'] === null || r['observed'] === undefined ? 0 : Number(r['observed']);
      return toRollout(r, agents.get(Number(r['rid'])) ?? [], this.observedSpans(String(r['id']), stored));
    });
  }

  /** Each rollout's agents, in their order, by rid (500 rollouts a query). */
  private agentsByRid(rids: readonly number[]): Map<number, RolloutAgentRecord[]> {
    const agents = new Map<number, RolloutAgentRecord[]>();
    for (let i = 0; i < rids.length; i += 500) {
      const chunk = rids.slice(i, i + 500);
      for (const a of this.all(`SELECT * FROM rollout_agents WHERE rid IN (${placeholders(chunk.length)}) ORDER BY rid, ord`, chunk)) {
        const rid = Number(a['rid']);
        let list = agents.get(rid);
        if (!list) agents.set(rid, (list = []));
        list.push(toAgent(a));
      }
    }
    return agents;
  }

  /** Spans stored for a trace plus those still pending in memory. */
  private observedSpans(traceId: string, stored = 0): number {
    return stored + (this.pending.get(traceId)?.spans ?? 0);
  }

  private stmt(sql: string): Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  private run(sql: string, params: BindParams): void {
    const s = this.stmt(sql);
    try {
      s.run(params);
    } finally {
      s.reset();
    }
  }

  private get(sql: string, params: readonly SqlValue[] = []): Row | null {
    const s = this.stmt(sql);
    try {
      s.bind(params as SqlValue[]);
      return s.step() ? (s.getAsObject() as Row) : null;
    } finally {
      s.reset();
    }
  }

  private all(sql: string, params: readonly SqlValue[] = []): Row[] {
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
}

function placeholders(n: number): string {
  return new Array<string>(n).fill('?').join(', ');
}

function rolloutValues(r: RolloutRecord, writer: string | null): SqlValue[] {
  return [
    r.id,
    r.runId,
    r.taskId,
    r.split,
    r.sample,
    r.status,
    r.finalReward,
    r.criteria ? JSON.stringify(r.criteria) : null,
    r.judgeFailed ? 1 : 0,
    r.decision,
    r.expectedDecision,
    r.turns,
    r.error,
    r.simulated ? 1 : 0,
    r.startTime,
    r.endTime,
    r.spanCount,
    writer,
    r.endTime === null ? null : r.endTime - r.startTime,
    r.finalReward,
    r.failure ?? null,
    r.rewardBreakdown ? JSON.stringify(r.rewardBreakdown) : null,
    r.truncatedAnswers ?? null,
    r.truncatedPrompts ?? null,
    r.agents.reduce((n, a) => n + a.inputTokens, 0),
    r.agents.reduce((n, a) => n + a.outputTokens, 0),
  ];
}

function toRollout(r: Row, agents: RolloutAgentRecord[], observedSpans: number): RolloutRecord {
  return {
    id: String(r['id']),
    runId: String(r['run_id']),
    taskId: String(r['task_id']),
    split: r['split'] === null ? null : (String(r['split']) as RolloutRecord['split']),
    sample: Number(r['sample']),
    status: String(r['status']) as RolloutStatus,
    failure: isFailureKind(r['failure']) ? r['failure'] : null,
    finalReward: r['final_reward'] === null ? null : Number(r['final_reward']),
    criteria: r['criteria'] === null ? null : (JSON.parse(String(r['criteria'])) as Record<string, number>),
    rewardBreakdown: r['reward_breakdown'] === null ? null : (JSON.parse(String(r['reward_breakdown'])) as Record<string, number>),
    judgeFailed: Number(r['judge_failed']) === 1,
    decision: r['decision'] === null ? null : String(r['decision']),
    expectedDecision: r['expected_decision'] === null ? null : String(r['expected_decision']),
    turns: r['turns'] === null ? null : Number(r['turns']),
    error: r['error'] === null ? null : String(r['error']),
    simulated: Number(r['simulated']) === 1,
    startTime: Number(r['start_time']),
    endTime: r['end_time'] === null ? null : Number(r['end_time']),
    // What the store holds is the truth; the writer's own count stands in only when no span was stored.
    spanCount: observedSpans > 0 ? observedSpans : Number(r['span_count']),
    agents,
    truncatedAnswers: r['truncated_answers'] === null ? null : Number(r['truncated_answers']),
    truncatedPrompts: r['truncated_prompts'] === null ? null : Number(r['truncated_prompts']),
  };
}

function toAgent(a: Row): RolloutAgentRecord {
  return {
    agent: String(a['agent']),
    promptVersion: a['prompt_version'] === null ? null : String(a['prompt_version']),
    model: a['model'] === null ? null : String(a['model']),
    modelVersion: a['model_version'] === null ? null : String(a['model_version']),
    visits: Number(a['visits']),
    llmCalls: Number(a['llm_calls']),
    toolCalls: Number(a['tool_calls']),
    errors: Number(a['errors']),
    inputTokens: Number(a['input_tokens']),
    outputTokens: Number(a['output_tokens']),
    latencyMs: Number(a['latency_ms']),
  };
}

function toRun(r: Row): RunRecord {
  return {
    id: String(r['id']),
    startTime: Number(r['start_time']),
    endTime: r['end_time'] === null ? null : Number(r['end_time']),
    status: String(r['status']) as RunRecord['status'],
    params: JSON.parse(String(r['params'])) as Record<string, unknown>,
    simulated: Number(r['simulated']) === 1,
    planned: Number(r['planned']),
  };
}

function toPrompt(r: Row): PromptVersionRecord {
  return { hash: String(r['hash']), agent: String(r['agent']), text: String(r['text']), firstSeen: Number(r['first_seen']) };
}
