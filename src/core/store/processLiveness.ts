import { hostname } from 'node:os';

export const HOST = hostname();

/** Writers of this process that are open: its own pid says nothing about them, so they register here. */
const liveHere = new Set<string>();

export function registerLiveWriter(writerId: string): void {
  liveHere.add(writerId);
}

export function unregisterLiveWriter(writerId: string): void {
  liveHere.delete(writerId);
}

/**
 * Whether a process on this host is running. Signal 0 checks existence
 * without touching it; EPERM means it exists under another user. A process on
 * another host (a shared volume) cannot be checked and counts as alive.
 */
export function isProcessAlive(pid: number, host: string): boolean {
  if (host !== HOST || pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether a journal's writer may still append to it. A writer on another host
 * counts as alive until its journal says it closed; one with this process's pid
 * is alive only if this process has it open (else it is an earlier process
 * that had the same pid).
 */
export function isWriterAlive(writerId: string, pid: number, host: string): boolean {
  if (host === HOST && pid === process.pid) return liveHere.has(writerId);
  return isProcessAlive(pid, host);
}
