import type { Lab } from '../../lab/lab';
import { shardProgress, type ShardedRun } from '../../lab/batch';
import { sleep } from '../jobs/launchers/exec';
import { ENDED_STATES, type WorkerGroup, type WorkerStatus } from './workerPlace';

/** Where a sharded run stands: its keys from the store, its workers from their place. */
export interface WorkersProgress {
  planned: number;
  finished: number;
  succeeded: number;
  failed: number;
  /** Each slice's keys as the store has them (whichever worker ran them). */
  slices: ReturnType<typeof shardProgress>;
  workers: WorkerStatus[];
}

export interface FollowHooks {
  signal?: AbortSignal;
  onProgress?: (p: WorkersProgress) => void;
}

export const hasEnded = (w: WorkerStatus): boolean => ENDED_STATES.includes(w.state);

/**
 * Follows a run's workers until every one has ended, reading the run's
 * progress from the store between asks. An abort cancels the workers through
 * their place once, and the following goes on until they have ended. A
 * worker its place starts again (a Slurm requeue, a pod retried) has not
 * ended, so it is followed to its new end.
 */
export async function followWorkers(lab: Lab, run: ShardedRun, group: WorkerGroup, hooks: FollowHooks = {}): Promise<{ workers: WorkerStatus[]; cancelled: boolean }> {
  const count = run.params.shards ?? 1;
  let cancelled = false;
  let cancelling: Promise<void> | null = null;
  const wake = new AbortController();
  const onAbort = (): void => {
    cancelled = true;
    cancelling = group.cancel();
    // Its failure (scancel refused) is reported once the workers are followed to their end.
    cancelling.catch(() => undefined);
    wake.abort();
  };
  if (hooks.signal?.aborted) onAbort();
  else hooks.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    for (;;) {
      const workers = await group.poll();
      await lab.store.refresh();
      const slices = shardProgress(lab, run, count);
      const sum = (f: (r: (typeof slices)[number]) => number): number => slices.reduce((n, r) => n + f(r), 0);
      hooks.onProgress?.({ planned: run.keys.length, finished: sum((r) => r.finished), succeeded: sum((r) => r.succeeded), failed: sum((r) => r.failed), slices, workers });
      if (workers.every(hasEnded)) {
        if (cancelling) await cancelling;
        return { workers, cancelled };
      }
      await sleep(group.pollMs, cancelled ? undefined : wake.signal);
    }
  } finally {
    hooks.signal?.removeEventListener('abort', onAbort);
  }
}
