import { closeSync, fdatasyncSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { StoreWriteError } from './storeWriteError';
import { FrameType, JOURNAL_FORMAT_VERSION, encodeJsonFrame, type JournalHeader } from './journalFrame';
import { HOST, registerLiveWriter, unregisterLiveWriter } from './processLiveness';
import { journalFileName } from './storePaths';

/** Where an appended frame landed. */
export interface AppendedFrame {
  file: string;
  offset: number;
  length: number;
}

/**
 * One process's append-only journal. Only this process ever writes these
 * files, so it knows their length without asking the file system. Files are
 * created lazily (a reader that never writes leaves none) and rotated at a size
 * limit so compaction can retire old ones. No fsync per frame: a written frame
 * is in the page cache, which survives the process being killed.
 */
export class JournalWriter {
  private fd: number | null = null;
  private seq = 0;
  private file = '';
  private size = 0;
  private headerBytes = 0;

  constructor(
    private readonly dir: string,
    readonly writerId: string,
    private readonly rotateBytes: number,
  ) {
    registerLiveWriter(writerId);
  }

  append(frame: Buffer): AppendedFrame {
    // Rotate before a frame that would overflow the file, unless the file holds nothing but its header yet.
    if (this.fd === null || (this.size + frame.length > this.rotateBytes && this.size > this.headerBytes)) this.openNext();
    const offset = this.size;
    this.writeAll(frame);
    return { file: this.file, offset, length: frame.length };
  }

  /**
   * Several frames in one write, in order, where they fit in the current file
   * together (else frame by frame, rotating as append does). Each frame stays
   * whole: a torn write is cut off as in append.
   */
  appendAll(frames: readonly Buffer[]): AppendedFrame[] {
    let total = 0;
    for (const f of frames) total += f.length;
    if (frames.length < 2 || this.fd === null || (this.size + total > this.rotateBytes && this.size > this.headerBytes)) return frames.map((f) => this.append(f));
    const out: AppendedFrame[] = [];
    let offset = this.size;
    for (const f of frames) {
      out.push({ file: this.file, offset, length: f.length });
      offset += f.length;
    }
    this.writeAll(Buffer.concat(frames as Buffer[], total));
    return out;
  }

  /** The header frame that starts each file: who wrote it, so readers can tell whether that writer is still alive. */
  private header(): JournalHeader {
    return { v: JOURNAL_FORMAT_VERSION, kind: 'journal', writer: this.writerId, pid: process.pid, host: HOST, seq: this.seq, startTime: Date.now() };
  }

  sync(): void {
    if (this.fd !== null) fdatasyncSync(this.fd);
  }

  close(): void {
    unregisterLiveWriter(this.writerId);
    if (this.fd === null) return;
    fdatasyncSync(this.fd);
    closeSync(this.fd);
    this.fd = null;
  }

  private openNext(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    this.seq += 1;
    this.file = journalFileName(this.writerId, this.seq);
    try {
      mkdirSync(this.dir, { recursive: true });
      // 'ax': O_APPEND | O_CREAT | O_EXCL — never share or reuse another writer's file.
      this.fd = openSync(join(this.dir, this.file), 'ax');
    } catch (err) {
      throw new StoreWriteError(join(this.dir, this.file), err);
    }
    this.size = 0;
    this.writeAll(encodeJsonFrame(FrameType.header, this.header()));
    this.headerBytes = this.size;
  }

  /** A short write (disk full) would leave a torn frame that hides every later one, so cut it off before reporting. */
  private writeAll(buf: Buffer): void {
    const fd = this.fd!;
    let written = 0;
    try {
      while (written < buf.length) written += writeSync(fd, buf, written, buf.length - written);
    } catch (err) {
      try {
        ftruncateSync(fd, this.size);
      } catch {
        // the frame stays torn; readers stop before it, which loses nothing already acknowledged
      }
      throw new StoreWriteError(join(this.dir, this.file), err);
    }
    this.size += buf.length;
  }
}
