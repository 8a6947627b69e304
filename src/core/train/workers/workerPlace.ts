export { WORKER_PLACES, type WorkerPlaceName } from '../../config/workersSchema';

/**
 * Where the workers of a sharded run (`run --workers N --on PLACE`) run: N
 * processes of this machine, a Slurm job array, a Kubernetes Indexed Job or
 * SkyPilot nodes. Every place starts the same worker, `rollout-lab run
 * --resume RUN --shard K/N`, in the same workspace, and reports each slice's
 * worker as its own tool sees it; the coordinator (coordinator.ts) reads the
 * run's progress from the store and owns the run's status. The training phases
 * gather their rollouts through these places too.
 */

/** A worker as its place reports it. pending and running have not ended; the others have. */
export type WorkerState = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'lost';

export const ENDED_STATES: readonly WorkerState[] = ['succeeded', 'failed', 'cancelled', 'lost'];

export interface WorkerStatus {
  /** The slice (0-based). */
  shard: number;
  state: WorkerState;
  /** What the place says of it: "exit 1", "killed by SIGKILL", "CANCELLED (scancel by user 0)", "pending: Resources". */
  detail: string | null;
  /** How many times the place started it again (a Slurm requeue, a pod retried by the Job). */
  restarts: number;
}

export interface WorkerRequest {
  command: 'run' | 'eval';
  runId: string;
  count: number;
  /** The CLI as this machine runs it: node, the options it runs under, its entry script. */
  cli: string[];
  /** What follows `COMMAND --resume RUN --shard K/N` on every worker's command line (workspace, concurrency...). */
  args: string[];
  /** The workspace, absolute: every worker opens this one. */
  workspace: string;
  /** Environment a worker on this machine starts with besides this process's. */
  env?: Record<string, string>;
}

export interface WorkerGroup {
  /** "4 local processes", "Slurm job array 17 (4 tasks)". */
  label: string;
  /** How often the coordinator asks (poll, and the store for the run's progress). */
  pollMs: number;
  /** Every slice's worker, in slice order. */
  poll(): Promise<WorkerStatus[]>;
  /** The last lines a slice's worker wrote (its stderr, its log file), newest last. */
  tail(shard: number): Promise<string[]>;
  /** Stops every worker (each finishes the rollouts it has in flight when its place gives it the time). */
  cancel(): Promise<void>;
  /** What a user types to run one slice again by hand. */
  rerun(shard: number): string;
  /** The lines of a worker's output the user should see (warnings, errors), as they come; set by the coordinator. */
  onLine?: (shard: number, line: string) => void;
}

export interface WorkerPlace {
  name: string;
  start(req: WorkerRequest): Promise<WorkerGroup>;
}

/** A worker's own command line: the CLI, the command, the run, its slice (text, or a shell expression) and the rest. */
export function workerArgv(req: WorkerRequest, shard: string): string[] {
  return [...req.cli, req.command, '--resume', req.runId, '--shard', shard, ...req.args, '--json'];
}

const SAFE = /^[\w@%+=:,./-]+$/;

/** An argument as a POSIX shell reads it back: as it is when nothing in it is special, else in single quotes. */
export const shellWord = (s: string): string => (SAFE.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** How a user reruns slice K by hand: `rollout-lab run --resume RUN --shard K/N ...`. */
export function rerunCommand(req: WorkerRequest, shard: number): string {
  return ['rollout-lab', req.command, '--resume', req.runId, '--shard', `${shard}/${req.count}`, ...req.args].map(shellWord).join(' ');
}

/** Lines of a worker's output that a user must see beside the combined progress: warnings, retries, errors. */
export function worthShowing(line: string): boolean {
  return /warning|retr(y|ied)|error|rollout-lab:/i.test(line) && !line.startsWith('[') && !line.startsWith('{');
}
