import { readFileSync } from 'node:fs';
import type { SqlJsStatic } from 'sql.js';
import { RuntimeFailure } from '../errors';
import { fsyncPath, writeFileAtomic } from './atomicFile';
import { Catalog, type CatalogOrigin } from './catalog';
import { catchUp, filePath } from './journalCatchUp';
import type { StorePaths } from './storePaths';

/**
 * The catalog kept in step with the files on disk: loaded from
 * `catalog.sqlite` (rebuilt from the journals when that cannot be used),
 * caught up on what other processes wrote, and written back atomically at a
 * checkpoint. Loading it again calls `onReload` first, so what was kept about
 * the old catalog (files open at its span locations) is let go.
 */
export class StoredCatalog {
  private catalog!: Catalog;
  /** The stored catalog has a newer schema than this code: never overwrite it with an older one. */
  private keepStored = false;
  /** Journal sizes last fsynced at a checkpoint. */
  private readonly synced = new Map<string, number>();

  constructor(
    private readonly SQL: SqlJsStatic,
    private readonly paths: StorePaths,
    private readonly writerId: string,
    private readonly readOnly: boolean,
    private readonly onReload: () => void,
  ) {}

  get current(): Catalog {
    return this.catalog;
  }

  /** Loads the stored catalog and catches up; falls back to a rebuild from the journals when it cannot be used. */
  load(): CatalogOrigin {
    let scratch = false;
    let origin: CatalogOrigin = 'created';
    for (let attempt = 0; attempt < 4; attempt++) {
      const opened = Catalog.open(this.SQL, scratch ? null : readIfPresent(this.paths.catalog), () => readIfPresent(this.paths.textIndex));
      if (!scratch) {
        origin = opened.origin;
        this.keepStored = opened.origin === 'newer';
      }
      if (this.catalog) this.catalog.close();
      this.catalog = opened.catalog;
      if (!catchUp(this.catalog, this.paths, this.writerId, { verifySizes: !scratch }).needsReload) return scratch ? 'rebuild' : origin;
      scratch = true;
    }
    throw new RuntimeFailure(`the trace store in ${this.paths.root} changed while it was being read (files vanished); retry when no other process is compacting it`);
  }

  /** Loads the catalog again, from what is stored now. */
  reload(): void {
    this.onReload();
    this.load();
  }

  /** Catches up on what other processes wrote since the last look (reloading when a file it relies on is gone); true if anything changed. */
  refresh(): boolean {
    const r = catchUp(this.catalog, this.paths, this.writerId);
    if (!r.needsReload) return r.changed;
    this.reload();
    return true;
  }

  /**
   * Writes the catalog atomically, after making the journal bytes it indexes
   * durable (`syncOwnJournal` for this process's own). False when nothing was
   * written: read-only, a newer stored catalog, or nothing changed (unless forced).
   */
  checkpoint(syncOwnJournal: () => void, force = false): boolean {
    if (this.readOnly || this.keepStored) return false;
    this.refresh();
    if (!this.catalog.dirty && !force) return false;
    syncOwnJournal();
    for (const f of this.catalog.journals.files.values()) {
      if (f.kind !== 'journal' || f.writer === this.writerId || f.state === 'superseded') continue;
      if (this.synced.get(f.name) === f.consumed) continue;
      fsyncPath(filePath(this.paths, f));
      this.synced.set(f.name, f.consumed);
    }
    const bytes = this.catalog.export();
    // The index first: a crash between the two leaves a catalog that names the index it was saved with, which then is not this one (see TextIndexDb).
    if (bytes.text) writeFileAtomic(this.paths.textIndex, bytes.text);
    writeFileAtomic(this.paths.catalog, bytes.catalog);
    this.catalog.textSaved();
    this.catalog.dirty = false;
    return true;
  }
}

function readIfPresent(path: string): Uint8Array | null {
  try {
    return readFileSync(path);
  } catch {
    return null;
  }
}
