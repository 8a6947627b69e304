import { closeSync, openSync, readSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { SpanRecord } from '../trace/span';
import { FrameType, SPAN_BLOCK_HEADER_BYTES, frameTraceId, scanFrames, spanFromFrame, type RawFrame } from './journalFrame';

/** Raised when a stored range does not hold the frames the catalog says it does. */
export class DamagedFrameError extends Error {
  constructor(
    readonly path: string,
    readonly offset: number,
  ) {
    super(`trace store file ${path} is damaged at offset ${offset}`);
  }
}

const MAX_OPEN = 32;

/**
 * Reads span frames by location with positioned reads on cached descriptors.
 * A descriptor stays valid after compaction deletes its file (POSIX keeps the
 * inode alive), so a reader mid-query never sees a half-moved trace.
 */
export class SpanFileReader {
  private readonly fds = new Map<string, number>();

  read(path: string, offset: number, length: number): Buffer {
    const fd = this.fd(path);
    const buf = Buffer.allocUnsafe(length);
    let got = 0;
    while (got < length) {
      const n = readSync(fd, buf, got, length - got, offset + got);
      if (n === 0) throw new DamagedFrameError(path, offset + got);
      got += n;
    }
    return buf;
  }

  /** The spans of `traceId` in a range of whole frames (span frames or gzipped span blocks). */
  spansIn(path: string, offset: number, length: number, traceId: string): SpanRecord[] {
    const scan = scanFrames(this.read(path, offset, length), offset);
    if (scan.stop !== 'end') throw new DamagedFrameError(path, scan.end);
    const out: SpanRecord[] = [];
    for (const f of scan.frames) collectSpans(f, traceId, out, path);
    return out;
  }

  closeAll(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }

  private fd(path: string): number {
    let fd = this.fds.get(path);
    if (fd !== undefined) {
      // Re-insert so the map's order is least-recently-used first.
      this.fds.delete(path);
      this.fds.set(path, fd);
      return fd;
    }
    fd = openSync(path, 'r');
    this.fds.set(path, fd);
    if (this.fds.size > MAX_OPEN) {
      const [oldPath, oldFd] = this.fds.entries().next().value as [string, number];
      this.fds.delete(oldPath);
      closeSync(oldFd);
    }
    return fd;
  }
}

function collectSpans(f: RawFrame, traceId: string, out: SpanRecord[], path: string): void {
  if (f.type === FrameType.span) {
    if (frameTraceId(f) === traceId) out.push(spanFromFrame(f));
  } else if (f.type === FrameType.spanBlock) {
    if (frameTraceId(f) !== traceId) return;
    const inner = scanFrames(gunzipSync(f.payload.subarray(SPAN_BLOCK_HEADER_BYTES)), 0);
    if (inner.stop !== 'end') throw new DamagedFrameError(path, f.offset);
    for (const g of inner.frames) if (g.type === FrameType.span) out.push(spanFromFrame(g));
  }
}
