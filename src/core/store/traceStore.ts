import type { DecisionLabels } from '../data/decisionAlignment';
/**
 * The durable trace store: everything a rollout leaves behind, in
 * `<workspace>/.rollout-lab/store/`, readable by other processes while it is
 * written and surviving a process killed at any point.
 *
 * Design (why it is not one sql.js database):
 * sql.js keeps a database in memory and saves it whole, so spans (a million
 * of them, several KB each) cannot live in it. Instead:
 *
 * - Journals are the source of truth: append-only files, one set per writing
 *   process (`journal/<startTime>-<pid>-<rand>-<seq>.log`, rotated at a size
 *   limit), of CRC-checked frames (see journalFrame.ts): run, rollout start,
 *   one span frame per span as it ends (so live viewers see it), rollout end,
 *   prompt version, re-score, close. A frame is one write() on an O_APPEND descriptor,
 *   with no fsync: written data is in the page cache and survives SIGKILL; a
 *   torn or corrupt tail is ignored. No two processes ever write one file, so
 *   concurrent writers lose nothing and need no locks.
 * - The catalog (catalog.ts, sql.js) is derived from the journals: runs,
 *   rollouts, per-agent facts, prompt versions (text stored once), where each
 *   trace's span frames lie (a few numbers per rollout, not a row per span),
 *   and how far each journal has been consumed. Opening (storedCatalog.ts)
 *   loads `catalog.sqlite` and catches up on every journal past its consumed
 *   offset; `refresh()` does the same later, which is how one process sees
 *   another's writes. A checkpoint (close, and every N finished rollouts —
 *   never per span) writes the catalog atomically (temp file, fsync, rename).
 *   A lost, corrupt or too-new catalog is rebuilt from the journals.
 * - A span tree is read from its frames by location with positioned reads;
 *   contiguous frames are one read.
 * - Rollouts still 'running' when their writer closed or died (its pid is gone)
 *   become 'failed' with error 'interrupted', so resume redoes them.
 * - Compaction (compaction.ts) moves the journals of writers that are gone into
 *   segment files with one gzip block per rollout, then retires the journals.
 */
import { mkdirSync, statSync } from 'node:fs';
import type { SqlJsStatic } from 'sql.js';
import { RuntimeFailure, UsageError } from '../errors';
import { Attr, type SpanRecord } from '../trace/span';
import { removeStaleTemps } from './atomicFile';
import type { Catalog, CatalogOrigin } from './catalog';
import type { TableFacets } from './catalogQueries';
import { spanTextPieces } from './rolloutText';
import { rescoreProblem } from './rescoreValidation';
import type { ModelPrices, RolloutTablePage, RolloutTableQuery } from './tableQuery';
import { compactStore, type CompactionContext, type CompactionResult } from './compaction';
import { filePath } from './journalCatchUp';
import {
  FrameType,
  encodeJsonFrame,
  encodeSpanFrame,
  type CloseFrame,
  type PromptFrame,
  type RescoreFrame,
  type RolloutFrame,
  type RunFrame,
} from './journalFrame';
import { JournalWriter, type AppendedFrame } from './journalWriter';
import { HOST } from './processLiveness';
import { DamagedFrameError, SpanFileReader } from './spanFileReader';
import { loadSqlJs } from './sqlJsLoader';
import { StoredCatalog } from './storedCatalog';
import { newWriterId, storePaths, type StorePaths } from './storePaths';
import type {
  AgentAggregate,
  PromptVersionRecord,
  RescoreRecord,
  RescoreSummary,
  RewardRevision,
  RolloutAttempt,
  RolloutQuery,
  RolloutRecord,
  RunRecord,
  SpanSink,
} from './types';

export interface TraceStoreOptions {
  /** Never writes anything (no journal, no catalog checkpoint); for viewers. */
  readOnly?: boolean;
  /** Path of sql-wasm.wasm, when the default search (see sqlJsLoader.ts) cannot find it. */
  wasmPath?: string;
  /** Journal files are rotated past this size. Default 64 MiB. */
  journalRotateBytes?: number;
  /** Checkpoint the catalog after this many finished rollouts (and always on close). Default 2000. */
  checkpointEvery?: number;
}

export interface StoreStats {
  rollouts: number;
  spans: number;
  journals: number;
  bytes: number;
}

export type { CompactionResult } from './compaction';

const DEFAULT_ROTATE_BYTES = 64 << 20;
const DEFAULT_CHECKPOINT_EVERY = 2000;

export class TraceStore implements SpanSink {
  readonly dir: string;
  private origin: CatalogOrigin = 'created';
  private readonly stored: StoredCatalog;
  private writer: JournalWriter | null = null;
  private readonly writerId = newWriterId();
  private readonly reader = new SpanFileReader();
  private finishedSinceCheckpoint = 0;
  /** Whether the rollouts stored before the full-text index have been indexed (see ensureTextIndex). */
  private textIndexed = false;
  private closed = false;
  private compacting: Promise<CompactionResult> | null = null;

  private constructor(
    SQL: SqlJsStatic,
    private readonly paths: StorePaths,
    private readonly opts: TraceStoreOptions,
  ) {
    this.dir = paths.root;
    this.stored = new StoredCatalog(SQL, paths, this.writerId, opts.readOnly === true, () => {
      this.reader.closeAll();
      this.textIndexed = false;
    });
  }

  /** The catalog as loaded now (a reload replaces it). */
  private get catalog(): Catalog {
    return this.stored.current;
  }

  static async open(workspaceDir: string, opts: TraceStoreOptions = {}): Promise<TraceStore> {
    const SQL = await loadSqlJs(opts.wasmPath);
    const paths = storePaths(workspaceDir);
    if (!opts.readOnly) {
      try {
        mkdirSync(paths.journalDir, { recursive: true });
        mkdirSync(paths.segmentDir, { recursive: true });
      } catch (err) {
        throw new RuntimeFailure(`cannot create the trace store in ${paths.root}: ${(err as Error).message}; check that the workspace is writable`);
      }
      removeStaleTemps(paths.root);
    }
    const store = new TraceStore(SQL, paths, opts);
    store.origin = store.stored.load();
    return store;
  }

  /** How the catalog was found at open: 'loaded', 'created' (none yet), 'migrated', or rebuilt from the journals because it was 'corrupt', needed a 'rebuild', or is 'newer' than this code. */
  get openedFrom(): CatalogOrigin {
    return this.origin;
  }

  // ---- writing --------------------------------------------------------------

  startRun(run: RunRecord): void {
    this.writeRun(run);
  }

  updateRun(id: string, patch: Partial<RunRecord>): void {
    this.assertWritable();
    const current = this.catalog.queries.getRun(id);
    if (!current) throw new RuntimeFailure(`run ${id} is not in the trace store; start it with startRun first`);
    this.writeRun({ ...current, ...patch, id });
  }

  startRollout(r: RolloutRecord): void {
    this.append(encodeJsonFrame(FrameType.rolloutStart, { rollout: r } satisfies RolloutFrame));
    this.catalog.events.applyRolloutStart(r, this.writerId);
  }

  writeSpan(span: SpanRecord): void {
    this.writeSpans([span]);
  }

  /** Spans that arrived together (an OTLP request's spans of one trace): the same as writeSpan for each, in one write to the journal. */
  writeSpans(spans: readonly SpanRecord[]): void {
    const at = this.appendAll(spans.map(encodeSpanFrame));
    for (let i = 0; i < spans.length; i++) {
      const span = spans[i]!;
      this.catalog.traces.addSpanLoc(span.traceId, at[i]!.fileId, at[i]!.offset, at[i]!.length);
      this.catalog.traces.addSpanText(span.traceId, spanTextPieces(span));
    }
  }

  finishRollout(r: RolloutRecord): void {
    this.append(encodeJsonFrame(FrameType.rolloutEnd, { rollout: r } satisfies RolloutFrame));
    this.catalog.events.applyRolloutEnd(r, this.writerId);
    if (++this.finishedSinceCheckpoint >= (this.opts.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY)) {
      try {
        this.checkpoint();
      } catch {
        // The rollout is safe in the journal; a failed checkpoint only makes the next open catch up further. Retried later.
        this.finishedSinceCheckpoint = 0;
      }
    }
  }

  putPromptVersion(p: PromptVersionRecord): void {
    if (this.catalog.queries.getPromptVersion(p.hash, p.agent)) return;
    this.append(encodeJsonFrame(FrameType.prompt, { prompt: p } satisfies PromptFrame));
    this.catalog.events.applyPrompt(p);
  }

  /**
   * Gives stored rollouts new final rewards (`after`), keeping every earlier
   * reward as a revision (see rewardHistory). All or nothing: a rollout that is
   * not in the store (or still running), a reused id or a reward that is not a
   * number writes nothing. Re-scores from several processes are all kept; the
   * latest by `at` (then id) is in force.
   */
  applyRescore(r: RescoreRecord): void {
    this.assertWritable();
    const problem = rescoreProblem(r);
    if (problem) throw new RuntimeFailure(`re-score ${String(r.id)} cannot be stored: ${problem}`);
    // Rollouts another process finished since the last look count as stored.
    this.stored.refresh();
    if (this.catalog.queries.hasRescore(r.id)) throw new RuntimeFailure(`re-score ${r.id} is already in the trace store; give each re-score a new id`);
    for (const w of r.rewards) {
      const status = this.catalog.queries.rolloutStatus(w.rolloutId);
      if (!status) {
        throw new RuntimeFailure(`re-score ${r.id} names rollout ${w.rolloutId}, which is not in the trace store in ${this.dir}; re-score only rollouts listed by listRollouts`);
      }
      if (status === 'running') throw new RuntimeFailure(`re-score ${r.id} names rollout ${w.rolloutId}, which is still running; re-score it once it has finished`);
    }
    this.append(encodeJsonFrame(FrameType.rescore, { rescore: r } satisfies RescoreFrame));
    this.catalog.events.applyRescore(r);
    // An explicit, rare action: make it durable now, and leave a stored catalog that already knows it.
    this.writer?.sync();
    try {
      this.checkpoint();
    } catch {
      // the journal frame is the truth; the next checkpoint (or open) indexes it again
    }
  }

  /** Every re-score, newest first, with how many rollouts each gave a new reward. */
  listRescores(): RescoreSummary[] {
    this.assertOpen();
    return this.catalog.queries.listRescores();
  }

  /** The reward the rollout ran with (rescoreId null), then each re-score in order; empty for an unknown rollout. */
  rewardHistory(rolloutId: string): RewardRevision[] {
    this.assertOpen();
    return this.catalog.queries.rewardHistory(rolloutId);
  }

  // ---- reading --------------------------------------------------------------

  /** Picks up what other processes wrote since the last look; true if anything changed. */
  async refresh(): Promise<boolean> {
    this.assertOpen();
    return this.stored.refresh();
  }

  getRun(id: string): RunRecord | null {
    this.assertOpen();
    return this.catalog.queries.getRun(id);
  }

  listRuns(): RunRecord[] {
    this.assertOpen();
    return this.catalog.queries.listRuns();
  }

  /** Defaults: newest first (sort 'startTime', order 'desc'), no limit. */
  listRollouts(q?: RolloutQuery): { rollouts: RolloutRecord[]; total: number } {
    this.assertOpen();
    return this.catalog.queries.listRollouts(q);
  }

  /** A page of the rollouts table: every rollout of the store, filtered, searched and sorted (see RolloutTableQuery). */
  queryTable(q: RolloutTableQuery = {}, prices: ModelPrices | null = null, labels?: DecisionLabels): RolloutTablePage {
    this.assertOpen();
    this.ensureTextIndex(q);
    return this.catalog.queries.queryTable(q, prices, labels);
  }

  /** Every rollout id a table query matches, in its order (selecting all rows). */
  queryTableIds(q: RolloutTableQuery = {}, prices: ModelPrices | null = null, labels?: DecisionLabels): string[] {
    this.assertOpen();
    this.ensureTextIndex(q);
    return this.catalog.queries.queryTableIds(q, prices, labels);
  }

  /**
   * A catalog migrated from before the full-text index gets its older
   * rollouts indexed on the first text search, not on open: opening stays as
   * fast as before (a read-only open, which cannot save the index, would
   * otherwise read every span each time). A writer saves the index with the
   * catalog, so it is built once.
   */
  private ensureTextIndex(q: RolloutTableQuery): void {
    if (this.textIndexed || !q.text?.trim()) return;
    this.catalog.traces.backfillText((id) => this.readSpans(id));
    this.textIndexed = true;
  }

  /** What the rollouts table's filters offer: agents, failure categories, prompt and model versions. */
  tableFacets(): TableFacets {
    this.assertOpen();
    return this.catalog.queries.tableFacets();
  }

  getRollout(id: string): RolloutRecord | null {
    this.assertOpen();
    return this.catalog.queries.getRollout(id);
  }

  /**
   * The rollout an id names: the whole id, or a prefix of it (4 hex digits or
   * more, as progress lines show) that only one rollout starts with. An
   * ambiguous prefix is a UsageError naming some of the rollouts it matches.
   */
  resolveRolloutId(idOrPrefix: string): RolloutRecord | null {
    const exact = this.getRollout(idOrPrefix);
    if (exact || !/^[0-9a-f]{4,31}$/i.test(idOrPrefix)) return exact;
    const ids = this.catalog.queries.rolloutIdsStartingWith(idOrPrefix.toLowerCase(), 4);
    if (ids.length > 1) throw new UsageError(`"${idOrPrefix}" is the start of more than one rollout (${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ', …' : ''}); give more of the id`);
    return ids.length ? this.getRollout(ids[0]!) : null;
  }

  /** The rollout's whole span tree (running rollouts included), sorted by start time. */
  getSpans(rolloutId: string): SpanRecord[] {
    this.assertOpen();
    for (let attempt = 0; ; attempt++) {
      try {
        return this.readSpans(rolloutId);
      } catch (err) {
        const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
        if (!missing && !(err instanceof DamagedFrameError)) throw err;
        // Compaction in another process may have moved the frames: its checkpoint says where.
        if (attempt === 0) {
          this.stored.reload();
          continue;
        }
        if (missing) throw new RuntimeFailure(`spans of rollout ${rolloutId} are in a trace store file that no longer exists under ${this.dir}; the store was changed by hand`);
        throw new RuntimeFailure(`${(err as Error).message}; the spans of rollout ${rolloutId} cannot be read (the file was changed outside Rollout Lab)`);
      }
    }
  }

  currentAttempts(runId: string): RolloutAttempt[] {
    this.assertOpen();
    return this.catalog.queries.currentAttempts(runId);
  }

  finishedKeys(runId: string): Set<string> {
    this.assertOpen();
    return this.catalog.queries.finishedKeys(runId);
  }

  /** One row per agent × prompt version over rollouts that are no longer running; meanLatencyMs is per rollout. */
  aggregateByAgent(q?: { runId?: string; agent?: string }): AgentAggregate[] {
    this.assertOpen();
    return this.catalog.queries.aggregateByAgent(q);
  }

  getPromptVersion(hash: string, agent?: string): PromptVersionRecord | null {
    this.assertOpen();
    return this.catalog.queries.getPromptVersion(hash, agent);
  }

  listPromptVersions(agent?: string): PromptVersionRecord[] {
    this.assertOpen();
    return this.catalog.queries.listPromptVersions(agent);
  }

  stats(): StoreStats {
    this.assertOpen();
    const { rollouts, spans } = this.catalog.queries.counts();
    const files = this.catalog.journals.liveFiles();
    let bytes = files.bytes;
    for (const file of [this.paths.catalog, this.paths.textIndex]) {
      try {
        bytes += statSync(file).size;
      } catch {
        // no checkpoint yet
      }
    }
    return { rollouts, spans, journals: files.journals, bytes };
  }

  // ---- maintenance ----------------------------------------------------------

  /** Moves finished writers' journals into compressed segments; safe while other processes use the store. */
  async compact(): Promise<CompactionResult> {
    this.assertWritable();
    const ctx: CompactionContext = {
      paths: this.paths,
      catalog: () => this.catalog,
      refresh: () => this.stored.refresh(),
      checkpoint: () => this.checkpoint(true),
    };
    if (this.compacting) return this.compacting;
    this.compacting = compactStore(ctx).finally(() => {
      this.compacting = null;
      this.reader.closeAll();
    });
    return this.compacting;
  }

  /** Makes everything written so far durable on disk (it is already visible to other processes). */
  flush(): void {
    this.assertOpen();
    this.writer?.sync();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // A compaction commits against the catalog when it finishes: let it.
    if (this.compacting) await this.compacting.catch(() => undefined);
    if (this.closed) return;
    try {
      if (this.writer) {
        this.append(encodeJsonFrame(FrameType.close, { at: Date.now() } satisfies CloseFrame));
        this.catalog.events.closeWriter(this.writerId);
        this.writer.close();
      }
      this.checkpoint();
    } finally {
      this.writer?.close();
      this.reader.closeAll();
      this.catalog.close();
      this.closed = true;
    }
  }

  // ---- internals ------------------------------------------------------------

  private writeRun(run: RunRecord): void {
    const at = Date.now();
    this.append(encodeJsonFrame(FrameType.run, { at, run } satisfies RunFrame));
    this.catalog.events.applyRun(run, at, this.writerId);
  }

  private append(frame: Buffer): { fileId: number; offset: number; length: number } {
    return this.appended(this.journal().append(frame));
  }

  private appendAll(frames: readonly Buffer[]): Array<{ fileId: number; offset: number; length: number }> {
    return this.journal().appendAll(frames).map((a) => this.appended(a));
  }

  /** This process's journal, opened on the first write. */
  private journal(): JournalWriter {
    this.assertWritable();
    return (this.writer ??= new JournalWriter(this.paths.journalDir, this.writerId, this.opts.journalRotateBytes ?? DEFAULT_ROTATE_BYTES));
  }

  /** Records a frame this process wrote in the catalog's file bookkeeping. */
  private appended(a: AppendedFrame): { fileId: number; offset: number; length: number } {
    let f = this.catalog.journals.files.get(a.file);
    if (!f) {
      this.catalog.journals.addWriter(this.writerId, process.pid, HOST);
      f = this.catalog.journals.addFile(a.file, 'journal', this.writerId);
    }
    // Only this process writes this file, so it is consumed as far as it is written.
    f.consumed = a.offset + a.length;
    f.size = f.consumed;
    return { fileId: f.id, offset: a.offset, length: a.length };
  }

  private readSpans(rolloutId: string): SpanRecord[] {
    const locs = this.catalog.traces.traceLocs(rolloutId);
    const out: SpanRecord[] = [];
    for (let i = 0; i < locs.length; i += 3) {
      const f = this.catalog.journals.filesById.get(locs[i]!);
      if (!f) throw Object.assign(new Error(`file #${locs[i]} unknown`), { code: 'ENOENT' });
      const spans = this.reader.spansIn(filePath(this.paths, f), locs[i + 1]!, locs[i + 2]!, rolloutId);
      for (const s of spans) out.push(s);
    }
    return latestCopies(out).sort((a, b) => a.startTime - b.startTime);
  }

  /** Writes the catalog (see StoredCatalog.checkpoint). */
  private checkpoint(force = false): void {
    if (this.stored.checkpoint(() => this.writer?.sync(), force)) this.finishedSinceCheckpoint = 0;
  }

  private assertOpen(): void {
    if (this.closed) throw new RuntimeFailure(`the trace store in ${this.dir} is closed; open it again with TraceStore.open`);
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.opts.readOnly) throw new RuntimeFailure(`the trace store in ${this.dir} was opened read-only; open it without readOnly to write`);
  }
}

/**
 * One copy per span id: a span written again (two records of one model call
 * merged) supersedes its earlier copy by its higher revision, wherever
 * compaction put the frames.
 */
function latestCopies(spans: SpanRecord[]): SpanRecord[] {
  // Most traces hold no rewritten span: they are returned as they are.
  if (!spans.some((s) => s.attributes[Attr.spanRevision] !== undefined)) return spans;
  const revision = (s: SpanRecord): number => Number(s.attributes[Attr.spanRevision] ?? 0) || 0;
  const byId = new Map<string, SpanRecord>();
  for (const s of spans) {
    const seen = byId.get(s.spanId);
    if (!seen || revision(s) >= revision(seen)) byId.set(s.spanId, s);
  }
  return [...byId.values()];
}
