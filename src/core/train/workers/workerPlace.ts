import path from 'node:path';
import { LineSplitter } from '../jobs/launchers/exec';

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
  /** What follows `COMMAND --resume RUN --shard K/N --workspace WS` on every worker's command line (concurrency, endpoint...). */
  args: string[];
  /** The workspace, absolute: every worker opens this one (a place that mounts it elsewhere passes its own path to workerArgv). */
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

/** The last lines of a worker's output kept, to show why it failed. */
export const TAIL_LINES = 12;

/** Where a run's worker scripts, manifests and logs go: `.rollout-lab/workers/RUN/`. */
export function workersDir(workspace: string, runId: string): string {
  return path.join(workspace, '.rollout-lab', 'workers', runId);
}

/** A run id as a DNS label (Kubernetes names and labels, SkyPilot clusters): lowercase, other characters as "-". */
export const dnsLabel = (runId: string): string => runId.toLowerCase().replace(/[^a-z0-9-]+/g, '-');

/**
 * A worker's own command line: the CLI, the command, the run, its slice (text,
 * or a shell expression), the workspace (`at`: where the worker's machine
 * mounts it, by default the coordinator's) and the rest.
 */
export function workerArgv(req: WorkerRequest, shard: string, at: { cli?: string[]; workspace?: string } = {}): string[] {
  return [...(at.cli ?? req.cli), req.command, '--resume', req.runId, '--shard', shard, '--workspace', at.workspace ?? req.workspace, ...req.args, '--json'];
}

/** The worker's command line for a shell script: every word quoted, the slice given as a shell expression (`"$SLURM_ARRAY_TASK_ID/4"`). */
export function workerShellLine(req: WorkerRequest, shardExpr: string, at: { cli?: string[]; workspace?: string } = {}): string {
  const SHARD = '\0shard';
  return workerArgv(req, SHARD, at)
    .map((a) => (a === SHARD ? shardExpr : shellWord(a)))
    .join(' ');
}

/**
 * A line splitter for a worker's output: keeps its last TAIL_LINES in `tail`
 * and passes the lines a user should see to `show`.
 */
export function outputTail(tail: string[], show: (line: string) => void): LineSplitter {
  return new LineSplitter((line) => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
    if (worthShowing(line)) show(line);
  });
}

const SAFE = /^[\w@%+=:,./-]+$/;

/** An argument as a POSIX shell reads it back: as it is when nothing in it is special, else in single quotes. */
export const shellWord = (s: string): string => (SAFE.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/** How a user reruns slice K by hand: `rollout-lab run --resume RUN --shard K/N --workspace WS ...`. */
export function rerunCommand(req: WorkerRequest, shard: number): string {
  return workerArgv(req, `${shard}/${req.count}`, { cli: ['rollout-lab'] }).slice(0, -1).map(shellWord).join(' ');
}

/** Lines of a worker's output that a user must see beside the combined progress: warnings, retries, errors. */
export function worthShowing(line: string): boolean {
  return /warning|retr(y|ied)|error|rollout-lab:/i.test(line) && !line.startsWith('[') && !line.startsWith('{');
}
