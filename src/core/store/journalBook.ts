import type { CatalogDb } from './catalogDb';

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

/**
 * The catalog's bookkeeping of the files it is derived from: every journal
 * and segment with how far it has been consumed, and the writing processes.
 * Kept in memory (every append and catch-up moves an offset) and written to the
 * catalog's `files` and `writers` tables only when the catalog is exported.
 */
export class JournalBook {
  readonly files = new Map<string, FileState>();
  readonly filesById = new Map<number, FileState>();
  readonly writers = new Map<string, WriterState>();
  /** Journal names the known segments replace (read from their headers once per catalog; not stored). */
  segmentSupersedes: Set<string> | null = null;
  private nextFileId = 1;

  constructor(private readonly db: CatalogDb) {
    for (const r of db.all('SELECT id, name, kind, writer, consumed, size, state FROM files')) {
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
    for (const r of db.all('SELECT id, pid, host, state FROM writers')) {
      this.writers.set(String(r['id']), { id: String(r['id']), pid: Number(r['pid']), host: String(r['host']), state: r['state'] as WriterState['state'] });
    }
  }

  addFile(name: string, kind: FileState['kind'], writer: string | null): FileState {
    const f: FileState = { id: this.nextFileId++, name, kind, writer, consumed: 0, size: 0, state: 'open' };
    this.files.set(name, f);
    this.filesById.set(f.id, f);
    this.db.dirty = true;
    return f;
  }

  removeFile(name: string): void {
    const f = this.files.get(name);
    if (!f) return;
    this.files.delete(name);
    this.filesById.delete(f.id);
    this.db.dirty = true;
  }

  addWriter(id: string, pid: number, host: string): WriterState {
    let w = this.writers.get(id);
    if (!w) {
      w = { id, pid, host, state: 'open' };
      this.writers.set(id, w);
      this.db.dirty = true;
    }
    return w;
  }

  /** Journals in use (not replaced by a segment), and the bytes of every file in use. */
  liveFiles(): { journals: number; bytes: number } {
    let journals = 0;
    let bytes = 0;
    for (const f of this.files.values()) {
      if (f.state === 'superseded') continue;
      if (f.kind === 'journal') journals++;
      bytes += f.size;
    }
    return { journals, bytes };
  }

  /** Replaces the stored `files` and `writers` rows with the bookkeeping in memory (inside the caller's transaction). */
  save(): void {
    this.db.exec('DELETE FROM files');
    for (const f of this.files.values()) {
      this.db.run('INSERT INTO files(id, name, kind, writer, consumed, size, state) VALUES(?, ?, ?, ?, ?, ?, ?)', [f.id, f.name, f.kind, f.writer, f.consumed, f.size, f.state]);
    }
    this.db.exec('DELETE FROM writers');
    for (const w of this.writers.values()) this.db.run('INSERT INTO writers(id, pid, host, state) VALUES(?, ?, ?, ?)', [w.id, w.pid, w.host, w.state]);
  }
}
