import { closeSync, fstatSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { spanTextPieces } from './rolloutText';
import type { Catalog } from './catalog';
import type { FileState } from './journalBook';
import {
  FrameType,
  JOURNAL_FORMAT_VERSION,
  frameJson,
  frameTraceId,
  scanFrames,
  spanBlockCount,
  spanFromFrame,
  SPAN_BLOCK_HEADER_BYTES,
  type FileHeader,
  type PromptFrame,
  type RawFrame,
  type RescoreFrame,
  type RolloutFrame,
  type RunFrame,
} from './journalFrame';
import { isWriterAlive } from './processLiveness';
import { isSegmentFileName, parseJournalFileName, type StorePaths } from './storePaths';

export interface CatchUpResult {
  /** Anything new reached the catalog. */
  changed: boolean;
  /**
   * The catalog relies on a file that is gone (compaction retired it, or it was
   * deleted): reload the stored catalog, or rebuild, and catch up again.
   */
  needsReload: boolean;
}

const CHUNK_BYTES = 8 << 20;
const HEADER_PROBE_BYTES = 64 << 10;

/**
 * Brings a catalog up to date with every journal and segment on disk: the way
 * one process sees what others wrote. Cheap when nothing changed (a directory
 * listing and a stat per file still being written). Synchronous on purpose:
 * the store's own appends cannot interleave with it.
 *
 * Segments written by compaction take effect only once some journal they
 * replace is gone; until then the journals stay the truth (a compaction that
 * crashed before its catalog checkpoint leaves both, consistently).
 */
export function catchUp(cat: Catalog, paths: StorePaths, selfWriter: string | null, opts: { verifySizes?: boolean } = {}): CatchUpResult {
  const journals = listDir(paths.journalDir).filter((n) => parseJournalFileName(n) !== null).sort();
  const segments = listDir(paths.segmentDir).filter(isSegmentFileName).sort();
  const present = new Set([...journals, ...segments]);
  let changed = false;
  if (!cat.journals.segmentSupersedes) {
    cat.journals.segmentSupersedes = new Set();
    for (const f of cat.journals.files.values()) {
      const h = f.kind === 'segment' ? readHeader(join(paths.segmentDir, f.name)) : null;
      if (h?.kind === 'segment') for (const j of h.supersedes) cat.journals.segmentSupersedes.add(j);
    }
  }

  for (const name of segments) {
    if (cat.journals.files.has(name)) continue;
    const header = readHeader(join(paths.segmentDir, name));
    if (!header || header.kind !== 'segment' || header.v > JOURNAL_FORMAT_VERSION) continue;
    if (header.supersedes.every((j) => present.has(j))) continue;
    for (const j of header.supersedes) {
      const known = cat.journals.files.get(j);
      if (known && known.state !== 'superseded' && known.consumed > 0) return { changed, needsReload: true };
    }
    cat.journals.addFile(name, 'segment', null);
    for (const j of header.supersedes) {
      (cat.journals.files.get(j) ?? cat.journals.addFile(j, 'journal', null)).state = 'superseded';
      cat.journals.segmentSupersedes.add(j);
    }
    changed = true;
  }

  for (const f of [...cat.journals.files.values()]) {
    // On open, also check that no file the catalog indexed lost data (a power cut before fsync, a hand edit).
    if (opts.verifySizes && present.has(f.name) && f.state !== 'superseded' && sizeOf(filePath(paths, f)) < f.consumed) {
      return { changed, needsReload: true };
    }
    if (present.has(f.name)) continue;
    if (f.state === 'superseded' || f.consumed === 0) {
      cat.journals.removeFile(f.name);
      continue;
    }
    return { changed, needsReload: true };
  }

  for (const name of journals) {
    if (cat.journals.files.has(name)) continue;
    if (cat.journals.segmentSupersedes.has(name)) {
      // Its content is in a segment already (a compaction stopped before deleting it): never read it again.
      cat.journals.addFile(name, 'journal', null).state = 'superseded';
      changed = true;
      continue;
    }
    const header = readHeader(join(paths.journalDir, name));
    // No header yet: its writer is creating it right now; pick it up next time.
    if (!header || header.kind !== 'journal' || header.v > JOURNAL_FORMAT_VERSION) continue;
    cat.journals.addWriter(header.writer, header.pid, header.host);
    cat.journals.addFile(name, 'journal', header.writer);
    changed = true;
  }

  // Decide who is dead before reading, so what is read afterwards is all they ever wrote.
  const deadNow = new Set<string>();
  for (const w of cat.journals.writers.values()) {
    if (w.state === 'open' && w.id !== selfWriter && !isWriterAlive(w.id, w.pid, w.host)) deadNow.add(w.id);
  }

  const open = [...cat.journals.files.values()].filter((f) => f.state === 'open').sort(fileOrder);
  try {
    for (const f of open) if (consumeFile(cat, f, filePath(paths, f))) changed = true;
    for (const f of open) {
      const w = f.writer === null ? null : cat.journals.writers.get(f.writer);
      const final = f.kind === 'segment' || (w !== null && w !== undefined && (w.state === 'closed' || deadNow.has(w.id)));
      if (!final) continue;
      // Its writer has stopped: read to the very end once more, then never again (a torn tail stays ignored).
      if (consumeFile(cat, f, filePath(paths, f))) changed = true;
      f.state = 'done';
      changed = true;
    }
  } catch (err) {
    if (err instanceof ShrunkFile || (err as NodeJS.ErrnoException).code === 'ENOENT') return { changed, needsReload: true };
    throw err;
  }
  for (const id of deadNow) {
    cat.events.markWriterDead(id);
    changed = true;
  }
  return { changed, needsReload: false };
}

export function filePath(paths: StorePaths, f: Pick<FileState, 'kind' | 'name'>): string {
  return join(f.kind === 'segment' ? paths.segmentDir : paths.journalDir, f.name);
}

/** The header frame a journal or segment starts with, or null while it is not (yet) readable. */
export function readHeader(path: string): FileHeader | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const buf = Buffer.allocUnsafe(HEADER_PROBE_BYTES);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = scanFrames(buf.subarray(0, n), 0).frames[0];
    if (!first || first.type !== FrameType.header) return null;
    return frameJson<FileHeader>(first);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** Applies every whole, intact frame past `f.consumed`; returns whether there were any. */
function consumeFile(cat: Catalog, f: FileState, path: string): boolean {
  const fd = openSync(path, 'r');
  let applied = false;
  try {
    let pos = f.consumed;
    let want = CHUNK_BYTES;
    for (;;) {
      const size = fstatSync(fd).size;
      // Shorter than what the catalog already indexed: the file lost data (power cut before fsync); the catalog cannot be trusted.
      if (size < f.consumed) throw new ShrunkFile();
      f.size = size;
      if (pos >= size) break;
      const len = Math.min(size - pos, Math.max(want, CHUNK_BYTES));
      const buf = Buffer.allocUnsafe(len);
      const n = readSync(fd, buf, 0, len, pos);
      const scan = scanFrames(buf.subarray(0, n), pos);
      if (scan.frames.length) {
        cat.db.transaction(() => {
          for (const frame of scan.frames) applyFrame(cat, f, frame);
        });
        applied = true;
      }
      pos = scan.end;
      f.consumed = pos;
      if (scan.stop === 'corrupt') break;
      if (scan.stop === 'incomplete') {
        // A frame still being written (or torn by a crash): wait for it, unless more bytes are already there to read.
        if (pos + scan.needed > size) break;
        want = scan.needed;
      }
    }
  } finally {
    closeSync(fd);
  }
  return applied;
}

class ShrunkFile extends Error {}

function applyFrame(cat: Catalog, f: FileState, frame: RawFrame): void {
  switch (frame.type) {
    case FrameType.span: {
      const traceId = frameTraceId(frame);
      cat.traces.addSpanLoc(traceId, f.id, frame.offset, frame.length);
      cat.traces.addSpanText(traceId, spanTextPieces(spanFromFrame(frame)));
      return;
    }
    case FrameType.spanBlock: {
      const traceId = frameTraceId(frame);
      cat.traces.addSpanLoc(traceId, f.id, frame.offset, frame.length, spanBlockCount(frame));
      // The block's spans are gzipped: read them once, for the full-text index.
      const inner = scanFrames(gunzipSync(frame.payload.subarray(SPAN_BLOCK_HEADER_BYTES)), 0);
      const pieces: string[] = [];
      for (const g of inner.frames) if (g.type === FrameType.span) spanTextPieces(spanFromFrame(g), pieces);
      cat.traces.addSpanText(traceId, pieces);
      return;
    }
    case FrameType.run: {
      const { at, run } = frameJson<RunFrame>(frame);
      cat.events.applyRun(run, at, f.writer);
      return;
    }
    case FrameType.rolloutStart:
      cat.events.applyRolloutStart(frameJson<RolloutFrame>(frame).rollout, f.writer);
      return;
    case FrameType.rolloutEnd:
      cat.events.applyRolloutEnd(frameJson<RolloutFrame>(frame).rollout, f.writer);
      return;
    case FrameType.prompt:
      cat.events.applyPrompt(frameJson<PromptFrame>(frame).prompt);
      return;
    case FrameType.close:
      if (f.writer) cat.events.closeWriter(f.writer);
      return;
    case FrameType.rescore:
      cat.events.applyRescore(frameJson<RescoreFrame>(frame).rescore);
      return;
    default:
      // header, or a record type from a later minor version: nothing to index
      return;
  }
}

function fileOrder(a: FileState, b: FileState): number {
  if (a.kind !== b.kind) return a.kind === 'segment' ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
