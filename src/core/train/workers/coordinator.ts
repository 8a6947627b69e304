import type { Lab } from '../../lab/lab';
import { createShardedRun, finishShardedRun, reopenShardedRun, shardProgress, type ShardedRun } from '../../lab/batch';
import type { BatchPlan } from '../../rollout/batchPlan';
import { sleep } from '../jobs/launchers/exec';
import { ENDED_STATES, type WorkerGroup, type WorkerPlace, type WorkerStatus } from './workerPlace';

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

export interface WorkersRunRequest {
  command: 'run' | 'eval';
  plan: BatchPlan;
  count: number;
  place: WorkerPlace;
  /** How this machine starts the CLI: node (or the editor's own, with ELECTRON_RUN_AS_NODE), its options, the entry script. */
  cli: string[];
  /** What every worker's command line takes after its slice (workspace, concurrency, endpoint...). */
  args: string[];
  workspace: string;
  /** Environment the workers start with besides this process's (local workers only; a cluster's tools pass theirs). */
  env?: Record<string, string>;
  signal?: AbortSignal;
  /** The run is created and the workers started: what a progress view first shows. */
  onStarted?: (run: ShardedRun, group: WorkerGroup) => void;
  onProgress?: (p: WorkersProgress) => void;
  /** A worker's line a user should see (a warning, an error). */
  onLine?: (shard: number, line: string) => void;
}

export interface WorkersRunResult {
  run: ShardedRun;
  group: WorkerGroup;
  workers: WorkerStatus[];
  cancelled: boolean;
  end: Awaited<ReturnType<typeof finishShardedRun>>;
}

/**
 * A run split over `count` workers from start to end, as `run --workers N`
 * and the editor's Run Rollouts on Workers do it: creates the run (or takes up
 * a sharded one, plan.resume), starts the workers through their place,
 * follows them, and ends the run with its status and metrics. A place that
 * cannot start them (no sbatch) leaves the run failed, not running for nobody.
 */
export async function runOnWorkers(lab: Lab, req: WorkersRunRequest): Promise<WorkersRunResult> {
  const run = req.plan.resume ? await reopenShardedRun(lab, req.plan.resume, req.count) : await createShardedRun(lab, req.plan, req.count);
  let group: WorkerGroup;
  try {
    group = await req.place.start({ command: req.command, runId: run.runId, count: req.count, cli: req.cli, args: req.args, workspace: req.workspace, env: req.env });
  } catch (e) {
    await finishShardedRun(lab, run, { cancelled: false });
    throw e;
  }
  group.onLine = req.onLine;
  req.onStarted?.(run, group);
  const followed = await followWorkers(lab, run, group, { signal: req.signal, onProgress: req.onProgress });
  const end = await finishShardedRun(lab, run, { cancelled: followed.cancelled });
  return { run, group, workers: followed.workers, cancelled: followed.cancelled, end };
}
