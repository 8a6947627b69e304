import type { TargetConfig, TargetKind } from '../../config/trainingSchema';
import type { JobSpec } from './jobSpec';

/**
 * A launcher runs a job bundle on a target and follows it: local (a
 * subprocess), SSH (scp + a detached remote process), SkyPilot (`sky`),
 * Kubernetes (`kubectl`) and Slurm (`sbatch`, here or on a login node over SSH). Each drives the target's own tool with argument
 * arrays, never a shell string built from user data; secrets travel as
 * environment variables or on standard input, never in arguments, specs or
 * logs. `plan` is the dry run: exactly the commands `launch` would execute.
 */

export interface PreparedJob {
  spec: JobSpec;
  /** The job bundle on this machine (absolute): job.yaml, data/, python-trainer/. */
  bundleDir: string;
  /** The job's record folder on this machine (absolute): job.json, job.log, events.jsonl, fetched out/. */
  jobDir: string;
  /** The target's name in training.targets (or its kind for a default target). */
  targetName: string;
  target: TargetConfig;
  /** Environment variable values the job gets (spec.env names them). Never written anywhere. */
  secrets: Record<string, string>;
}

/** One command a launch runs, as the dry run shows it. */
export interface PlannedStep {
  title: string;
  argv: string[];
  cwd?: string;
  /** What goes to the command's standard input, with secret values shown as "***". */
  stdin?: string;
  /** Environment variables set for the command (names only; values may be secret). */
  env?: string[];
}

export interface LaunchPlan {
  target: TargetKind;
  /** Files the launch writes before running anything (the task YAML, manifests), with their content. */
  files: Array<{ path: string; content: string }>;
  steps: PlannedStep[];
}

/** How to find a launched job again, after a window reload or from another process. JSON-serialisable. */
export type JobHandle =
  | { target: 'local'; pid: number; host: string; logFile: string; exitFile: string; outDir: string }
  | { target: 'ssh'; host: string; remoteDir: string; pid: number }
  | { target: 'skypilot'; cluster: string; jobId: number | null }
  | { target: 'k8s'; namespace: string; context: string | null; job: string; service: string | null }
  /** host: the login node (null: this machine); dir: the job folder on the cluster's shared filesystem; jobId: Slurm's. */
  | { target: 'slurm'; host: string | null; dir: string; jobId: string };

export interface FollowHooks {
  /** A line of the job's output (stdout and stderr together), without its newline. */
  onLine: (line: string) => void;
  signal?: AbortSignal;
}

export interface JobExit {
  state: 'succeeded' | 'failed' | 'cancelled';
  exitCode: number | null;
  /** Why it failed, in words, when the exit code alone does not say. */
  detail?: string;
}

export interface PortForward {
  /** The forwarded endpoint on this machine, e.g. http://127.0.0.1:41234/v1. */
  url: string;
  close(): void;
}

export interface Launcher {
  readonly kind: TargetKind;
  /** The dry run: files it would write and commands it would run, in order. Runs nothing. */
  plan(job: PreparedJob): LaunchPlan;
  /** Starts the job detached (it outlives this process) and returns as soon as it runs. */
  launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle>;
  /**
   * Streams the job's output from its start until it ends (or the signal
   * aborts: then it returns { state: 'cancelled' } without stopping the job).
   * Works on a handle from an earlier process: this is how a window reload reattaches.
   */
  follow(handle: JobHandle, hooks: FollowHooks, job: Pick<PreparedJob, 'spec' | 'target'>): Promise<JobExit>;
  /** Copies the job's output folder (spec.output.dir) into destDir. */
  fetchOutputs(handle: JobHandle, job: Pick<PreparedJob, 'spec' | 'target'>, destDir: string): Promise<void>;
  /** Stops the job and releases what it holds (a SkyPilot cluster is taken down when the target says so). */
  cancel(handle: JobHandle, job: Pick<PreparedJob, 'spec' | 'target'>): Promise<void>;
  /**
   * Makes the job's serve port reachable from this machine, on localPort when
   * given (a reattach keeps the endpoint it registered), else a free port.
   */
  forwardPort(handle: JobHandle, job: Pick<PreparedJob, 'spec' | 'target'>, remotePort: number, localPort?: number): Promise<PortForward>;
}
