import { closeSync, fsyncSync, openSync, readFileSync, readSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { fsyncPath } from './atomicFile';
import type { Catalog } from './catalog';
import type { FileState } from './journalBook';
import { readHeader } from './journalCatchUp';
import {
  FrameType,
  JOURNAL_FORMAT_VERSION,
  encodeJsonFrame,
  encodeSpanBlockFrame,
  frameJson,
  frameTraceId,
  scanFrames,
  type RawFrame,
  type RolloutFrame,
  type RunFrame,
  type SegmentHeader,
} from './journalFrame';
import { HOST, isProcessAlive } from './processLiveness';
import { newSegmentFileName, tempFileName, type StorePaths } from './storePaths';

export interface CompactionResult {
  /** Set when nothing was done: another process is compacting, or no journal is ready to move. */
  skipped?: 'busy' | 'nothing';
  journalsRetired: number;
  segmentsWritten: number;
  /** Traces moved into segments. */
  traces: number;
  spans: number;
  bytesBefore: number;
  bytesAfter: number;
}

/** What compaction needs from the store that runs it. */
export interface CompactionContext {
  paths: StorePaths;
  /** The current catalog (a refresh may replace it). */
  catalog: () => Catalog;
  refresh: () => boolean;
  /** Writes the catalog atomically, even if it looks unchanged. */
  checkpoint: () => void;
}

/** Input bytes per segment: segments stay a manageable size, and each holds whole writers. */
const SEGMENT_INPUT_BYTES = 256 << 20;
const READ_CHUNK = 8 << 20;
const WRITE_BUFFER = 1 << 20;
/** Fastest gzip: message JSON still shrinks about fivefold, at a third of the default level's cost. */
const GZIP_LEVEL = 1;

/**
 * Moves the journals of writers that are gone (closed, or dead) into segment
 * files where each rollout's spans are one gzip block, then deletes them.
 *
 * Crash-safe at every step: (1) the segment is written under a temp name,
 * fsynced, renamed; a segment whose journals all still exist is ignored by
 * readers, so a crash here leaves the journals the truth and the next
 * compaction deletes the orphan; (2) the catalog pointing at the segment is
 * checkpointed atomically; (3) only then are the journals deleted. A reader in
 * another process that still points at a deleted journal hits ENOENT (or sees
 * the segment take effect) and reloads the checkpointed catalog.
 * One compaction at a time per workspace, by an O_EXCL lock file.
 */
export async function compactStore(ctx: CompactionContext): Promise<CompactionResult> {
  const result: CompactionResult = { journalsRetired: 0, segmentsWritten: 0, traces: 0, spans: 0, bytesBefore: 0, bytesAfter: 0 };
  const lock = ctx.paths.compactLock;
  if (compactingHere.has(lock) || !acquireLock(lock)) return { ...result, skipped: 'busy' };
  compactingHere.add(lock);
  try {
    ctx.refresh();
    cleanLeftovers(ctx);
    const batches = planBatches(ctx.catalog());
    if (!batches.length) return { ...result, skipped: 'nothing' };
    for (const batch of batches) await compactBatch(ctx, batch, result);
    return result;
  } finally {
    compactingHere.delete(lock);
    releaseLock(lock);
  }
}

/** Compactions in progress in this process (a lock file naming this pid is otherwise a dead process's leftover). */
const compactingHere = new Set<string>();

function acquireLock(path: string): boolean {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid} ${HOST}\n`, { flag: 'wx' });
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let owner = '';
      try {
        owner = readFileSync(path, 'utf8');
      } catch {
        continue; // released meanwhile
      }
      const [pid, host] = owner.trim().split(' ');
      // Not one of ours in progress (checked by the caller), so a lock naming this pid is an earlier process's leftover.
      if (Number(pid) !== process.pid && isProcessAlive(Number(pid), host ?? HOST)) return false;
      try {
        unlinkSync(path); // its compactor died holding it
      } catch {
        // someone else cleared it
      }
    }
  }
  return false;
}

function releaseLock(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

/** Undoes what a crashed compaction left: temp segments, orphan segments, journals already superseded. */
function cleanLeftovers(ctx: CompactionContext): void {
  const cat = ctx.catalog();
  const { segmentDir, journalDir } = ctx.paths;
  let names: string[] = [];
  try {
    names = readdirSync(segmentDir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name.endsWith('.tmp')) {
      unlinkQuiet(join(segmentDir, name));
      continue;
    }
    if (cat.journals.files.has(name) || !name.endsWith('.seg')) continue;
    const header = readHeader(join(segmentDir, name));
    if (header?.kind === 'segment' && header.supersedes.every((j) => cat.journals.files.has(j) && cat.journals.files.get(j)!.state !== 'superseded')) {
      unlinkQuiet(join(segmentDir, name)); // written but never committed: its journals are still the truth
    }
  }
  let removed = false;
  for (const f of [...cat.journals.files.values()]) {
    if (f.kind === 'journal' && f.state === 'superseded') {
      unlinkQuiet(join(journalDir, f.name));
      cat.journals.removeFile(f.name);
      removed = true;
    }
  }
  if (removed) fsyncPath(journalDir);
}

/** Journals of finished writers, whole writers per batch (a rollout may cross a rotation). */
function planBatches(cat: Catalog): SourceFile[][] {
  const byWriter = new Map<string, FileState[]>();
  for (const f of cat.journals.files.values()) {
    if (f.kind !== 'journal' || f.writer === null) continue;
    let list = byWriter.get(f.writer);
    if (!list) byWriter.set(f.writer, (list = []));
    list.push(f);
  }
  const batches: SourceFile[][] = [];
  let current: SourceFile[] = [];
  let bytes = 0;
  for (const [writer, files] of [...byWriter].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const w = cat.journals.writers.get(writer);
    if (!w || w.state === 'open' || files.some((f) => f.state !== 'done')) continue;
    files.sort((a, b) => (a.name < b.name ? -1 : 1));
    current.push(...files.map((f) => ({ name: f.name, writer, consumed: f.consumed })));
    bytes += files.reduce((n, f) => n + f.consumed, 0);
    if (bytes >= SEGMENT_INPUT_BYTES) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
  }
  if (current.length) batches.push(current);
  return batches;
}

/** Buffers small writes into large ones and knows the offset of everything it wrote. */
class SegmentOut {
  size = 0;
  private parts: Buffer[] = [];
  private buffered = 0;
  constructor(readonly fd: number) {}
  write(buf: Buffer): number {
    const at = this.size;
    this.parts.push(buf);
    this.buffered += buf.length;
    this.size += buf.length;
    if (this.buffered >= WRITE_BUFFER) this.flush();
    return at;
  }
  flush(): void {
    if (!this.buffered) return;
    const all = Buffer.concat(this.parts, this.buffered);
    let off = 0;
    while (off < all.length) off += writeSync(this.fd, all, off, all.length - off);
    this.parts = [];
    this.buffered = 0;
  }
}

interface SourceFile {
  name: string;
  writer: string;
  consumed: number;
}

async function compactBatch(ctx: CompactionContext, batch: SourceFile[], result: CompactionResult): Promise<void> {
  const { paths } = ctx;
  const writers = [...new Set(batch.map((f) => f.writer))];
  const name = newSegmentFileName();
  const tmp = join(paths.segmentDir, tempFileName(name));
  const header: SegmentHeader = { v: JOURNAL_FORMAT_VERSION, kind: 'segment', supersedes: batch.map((f) => f.name), createdAt: Date.now() };
  const fd = openSync(tmp, 'wx');
  const out = new SegmentOut(fd);
  /** New locations per trace, as (offset, length) pairs in the segment. */
  const moved = new Map<string, { locs: number[]; spans: number }>();
  const open = new Map<string, { frames: Buffer[]; spans: number }>();
  const ended = new Set<string>();

  const writeBlock = (traceId: string): void => {
    const acc = open.get(traceId);
    if (!acc) return;
    open.delete(traceId);
    const frame = encodeSpanBlockFrame(traceId, acc.spans, gzipSync(Buffer.concat(acc.frames), { level: GZIP_LEVEL }));
    const at = out.write(frame);
    let m = moved.get(traceId);
    if (!m) moved.set(traceId, (m = { locs: [], spans: 0 }));
    m.locs.push(at, frame.length);
    m.spans += acc.spans;
  };

  // Phase 1, asynchronous (yields between chunks): the sources are immutable, so the store stays usable meanwhile.
  try {
    out.write(encodeJsonFrame(FrameType.header, header));
    for (const f of batch) {
      const path = join(paths.journalDir, f.name);
      result.bytesBefore += statSize(path);
      await forEachFrame(path, f.consumed, (frame, bytes) => {
        switch (frame.type) {
          case FrameType.header:
          case FrameType.close:
            return; // the segment has its own header; its writers' end is recorded by explicit final records below
          case FrameType.span: {
            const id = frameTraceId(frame);
            let acc = open.get(id);
            if (!acc) open.set(id, (acc = { frames: [], spans: 0 }));
            acc.frames.push(Buffer.from(bytes));
            acc.spans++;
            return;
          }
          case FrameType.rolloutEnd: {
            const id = frameJson<RolloutFrame>(frame).rollout.id;
            writeBlock(id);
            ended.add(id);
            out.write(Buffer.from(bytes));
            return;
          }
          default:
            // run, rollout start, prompt and re-score frames move as they are
            out.write(Buffer.from(bytes));
        }
      });
    }
    for (const id of [...open.keys()]) writeBlock(id);
    // What the catalog concluded about these writers (interrupted rollouts and runs) must survive without them.
    const cat = ctx.catalog();
    for (const r of cat.queries.rolloutsByWriters(writers)) {
      if (!ended.has(r.id) && r.status !== 'running') out.write(encodeJsonFrame(FrameType.rolloutEnd, { rollout: r } satisfies RolloutFrame));
    }
    for (const { run, at } of cat.queries.runsByWriters(writers)) {
      if (run.status === 'interrupted') out.write(encodeJsonFrame(FrameType.run, { at, run } satisfies RunFrame));
    }
    out.flush();
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkQuiet(tmp);
    throw err;
  }
  closeSync(fd);

  // Phase 2, synchronous: commit against the catalog as it is now (a refresh meanwhile may have replaced it).
  const cat = ctx.catalog();
  const sources = batch.map((f) => cat.journals.files.get(f.name));
  if (sources.some((f, i) => !f || f.state !== 'done' || f.consumed !== batch[i]!.consumed)) {
    unlinkQuiet(tmp);
    return;
  }
  renameSync(tmp, join(paths.segmentDir, name));
  fsyncPath(paths.segmentDir);
  const seg = cat.journals.addFile(name, 'segment', null);
  seg.consumed = out.size;
  seg.size = out.size;
  seg.state = 'done';
  const batchIds = new Set(sources.map((f) => f!.id));
  cat.db.transaction(() => {
    for (const [traceId, m] of moved) {
      const old = cat.traces.traceLocs(traceId);
      const locs: number[] = [];
      for (let i = 0; i < old.length; i += 3) if (!batchIds.has(old[i]!)) locs.push(old[i]!, old[i + 1]!, old[i + 2]!);
      for (let i = 0; i < m.locs.length; i += 2) locs.push(seg.id, m.locs[i]!, m.locs[i + 1]!);
      cat.traces.replaceTraceLocs(traceId, locs);
    }
  });
  for (const f of sources) {
    f!.state = 'superseded';
    cat.journals.segmentSupersedes?.add(f!.name);
  }
  ctx.checkpoint();
  // The checkpoint re-reads the directory first; if that made the store reload a catalog that does not know
  // the segment, the journals stay (the segment is then an orphan the next compaction removes).
  if (ctx.catalog().journals.files.get(name)?.state !== 'done') return;
  for (const f of batch) {
    unlinkQuiet(join(paths.journalDir, f.name));
    ctx.catalog().journals.removeFile(f.name);
  }
  fsyncPath(paths.journalDir);
  result.journalsRetired += batch.length;
  result.segmentsWritten++;
  result.traces += moved.size;
  for (const m of moved.values()) result.spans += m.spans;
  result.bytesAfter += out.size;
}

/** Calls `fn` with every intact frame of a file up to `end` (and its raw bytes), in large chunks, yielding between them. */
async function forEachFrame(path: string, end: number, fn: (frame: RawFrame, bytes: Buffer) => void): Promise<void> {
  const fd = openSync(path, 'r');
  try {
    let pos = 0;
    let want = READ_CHUNK;
    while (pos < end) {
      const len = Math.min(end - pos, Math.max(READ_CHUNK, want));
      const buf = Buffer.allocUnsafe(len);
      const n = readSync(fd, buf, 0, len, pos);
      const scan = scanFrames(buf.subarray(0, n), pos);
      for (const frame of scan.frames) {
        const start = frame.offset - pos;
        fn(frame, buf.subarray(start, start + frame.length));
      }
      if (scan.stop === 'corrupt' || scan.end === end) return;
      // A frame longer than one chunk: read it whole next time round.
      if (scan.stop === 'incomplete' && scan.end === pos) {
        if (scan.needed <= len || pos + scan.needed > end) return;
        want = scan.needed;
      }
      pos = scan.end;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } finally {
    closeSync(fd);
  }
}

function statSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}
