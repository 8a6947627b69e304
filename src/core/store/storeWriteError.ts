import { RuntimeFailure, errorMessage } from '../errors';

/** What an errno code means to someone who has to fix it. */
const CAUSES: Record<string, string> = {
  ENOSPC: 'disk full (ENOSPC) — free space',
  EDQUOT: 'disk quota exceeded (EDQUOT) — free space or raise the quota',
  EROFS: 'the file system is read-only (EROFS) — make the workspace writable',
  EACCES: 'permission denied (EACCES) — make the workspace writable',
  EPERM: 'permission denied (EPERM) — make the workspace writable',
  EIO: 'an I/O error (EIO) — check the disk',
};

/**
 * The trace store could not write a file: the journal frame in question was cut
 * back, so nothing already stored is lost. The message names the file and the
 * cause in the user's terms; `code` is the errno code (ENOSPC...).
 */
export class StoreWriteError extends RuntimeFailure {
  readonly code: string | undefined;

  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    const code = (cause as NodeJS.ErrnoException | null)?.code;
    super(`the store could not write ${path}: ${(code && CAUSES[code]) ?? errorMessage(cause)}`);
    this.code = code;
  }
}
