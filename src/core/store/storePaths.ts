import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** Where the store keeps its files inside a workspace. */
export interface StorePaths {
  /** `<workspace>/.rollout-lab/store` */
  root: string;
  journalDir: string;
  segmentDir: string;
  catalog: string;
  /** The full-text index, saved beside the catalog (see TextIndexDb). */
  textIndex: string;
  compactLock: string;
}

export function storePaths(workspaceDir: string): StorePaths {
  const root = join(workspaceDir, '.rollout-lab', 'store');
  return {
    root,
    journalDir: join(root, 'journal'),
    segmentDir: join(root, 'segments'),
    catalog: join(root, 'catalog.sqlite'),
    textIndex: join(root, 'catalog-text.sqlite'),
    compactLock: join(root, 'compact.lock'),
  };
}

/** `<startTime>-<pid>-<rand>`: unique per writing process, sorts by start time, names its pid for liveness checks. */
export function newWriterId(): string {
  return `${Date.now()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** A writer's journals are numbered, so rotated files keep their order. */
export function journalFileName(writerId: string, seq: number): string {
  return `${writerId}-${String(seq).padStart(4, '0')}.log`;
}

const JOURNAL_NAME = /^(\d+-(\d+)-[0-9a-f]+)-(\d+)\.log$/;

export function parseJournalFileName(name: string): { writerId: string; pid: number; seq: number } | null {
  const m = JOURNAL_NAME.exec(name);
  if (!m) return null;
  return { writerId: m[1]!, pid: Number(m[2]), seq: Number(m[3]) };
}

export function newSegmentFileName(): string {
  return `${Date.now()}-${randomBytes(4).toString('hex')}.seg`;
}

export function isSegmentFileName(name: string): boolean {
  return /^\d+-[0-9a-f]+\.seg$/.test(name);
}

/** Temp files name their pid so a later process can tell a crashed writer's leftovers from a live one's. */
export function tempFileName(base: string): string {
  return `${base}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
}

export function tempFilePid(name: string): number | null {
  const m = /\.(\d+)-[0-9a-f]+\.tmp$/.exec(name);
  return m ? Number(m[1]) : null;
}
