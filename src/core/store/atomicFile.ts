import { closeSync, fsyncSync, openSync, readdirSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { HOST, isProcessAlive } from './processLiveness';
import { tempFileName, tempFilePid } from './storePaths';

const STALE_TEMP_MS = 10 * 60_000;

/**
 * Replaces a file so that a crash at any moment leaves either the old content
 * or the new, never a mix: write a temp file beside it, fsync, rename over,
 * fsync the directory so the rename itself survives a power cut.
 */
export function writeFileAtomic(path: string, bytes: Uint8Array): void {
  const tmp = join(dirname(path), tempFileName(basename(path)));
  const fd = openSync(tmp, 'w');
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  fsyncPath(dirname(path));
}

/**
 * Flushes a file or a folder to disk, whoever wrote it. Quiet on failure: some
 * platforms cannot fsync a folder (the rename is still atomic there), and a
 * file that is gone has nothing of ours to protect.
 */
export function fsyncPath(path: string): void {
  try {
    const fd = openSync(path, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    // see above
  }
}

/** Temp files of checkpoints that a killed process left behind (old, and their pid is gone: not another host's, mid-write). */
export function removeStaleTemps(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = tempFilePid(name);
    if (pid === null || isProcessAlive(pid, HOST)) continue;
    try {
      const path = join(dir, name);
      if (Date.now() - statSync(path).mtimeMs > STALE_TEMP_MS) unlinkSync(path);
    } catch {
      // another process removed it first
    }
  }
}
