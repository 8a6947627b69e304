// In lab/, not rollout/: a batch reads its dataset and environment through the Lab and ends with analysis/'s metrics, both above rollout/.
import { UsageError } from '../errors';
import { computeMetrics, type EvalMetrics } from '../analysis/metrics';
import { runOutcome, type RunOutcome } from '../analysis/runOutcome';
import { rewardSetupOf } from '../reward/rewardSetup';
import { parseBatchPlan, parseBatchRunParams, resolveBatchParams, type BatchPlan, type BatchRunParams } from '../rollout/batchPlan';
import { runRollouts, type RunRequest, type RunResult } from '../rollout/runner';
import type { RunWarning } from '../rollout/runWarnings';
import { liveOtlpExport } from '../otlp/liveExport';
import { listenForRetries, type RetryNotice } from '../llm/retryNotices';
import type { Lab } from './lab';
import { decisionLabelsOf } from '../data/decisionAlignment';
import { everyKeyStands, newRunId, rolloutKey, simulatedOf } from '../rollout/runner';
import { shardsOfKeys, shardText, type Shard } from '../rollout/shards';

/** What a batch will do, once its tasks are chosen and before anything runs. */
export interface BatchPlanned {
  params: BatchRunParams;
  concurrency: number;
  /** Tasks chosen (each runs `params.samples` times). */
  tasks: number;
  datasetFile: string;
  resumed: boolean;
  /** The slice this invocation runs, when the run is split over workers. */
  shard?: Shard;
}

export interface BatchHooks extends Pick<RunRequest, 'signal' | 'onStart' | 'onProgress' | 'onWarning'> {
  /** Called before the environment is built; what it throws stops the batch with nothing run. */
  onPlanned?: (planned: BatchPlanned) => void;
  /** Each model call about to be retried while the batch runs (a timeout, a 429, a broken body), as it happens. */
  onRetry?: (notice: RetryNotice) => void;
}

export interface BatchResult extends RunResult {
  params: BatchRunParams;
  concurrency: number;
  datasetFile: string;
  /** Over each task's current finished attempt, those of the invocations it resumed included (superseded attempts left out). */
  metrics: EvalMetrics;
  /** Every planned rollout by where it stands in the store: what the finish and cancel notifications say. */
  outcome: RunOutcome;
  /** The first error when every rollout failed (a runtime failure, not data); null otherwise. */
  allFailedError: string | null;
}

/**
 * One batch of rollouts (Run Rollouts, Evaluate, `rollout-lab run|eval`): the
 * plan checked, the tasks chosen, the rollouts run and stored, the metrics
 * computed. A resumed run takes the options it was stored with.
 */
export async function runBatch(lab: Lab, plan: BatchPlan, hooks: BatchHooks = {}): Promise<BatchResult> {
  const checked = parseBatchPlan(plan);
  const { config } = lab.loaded;
  const params = checked.resume ? storedParams(lab, checked.resume) : resolveBatchParams(checked, config.runner);
  const shard = checked.resume ? workerShard(checked.resume, params, checked.shard) : checked.shard;
  const concurrency = checked.concurrency ?? config.runner.concurrency;
  const ds = await lab.loadDataset(params.dataset ?? undefined);
  const tasks = lab.selectTasks(ds, { split: params.split, limit: params.limit ?? undefined, seed: params.seed });
  hooks.onPlanned?.({ params, concurrency, tasks: tasks.length, datasetFile: ds.file, resumed: checked.resume !== undefined, ...(shard ? { shard } : {}) });
  const env = await lab.environment(ds.tasks);
  // lab.json's otlp.export: each rollout goes to the collector as it ends, off the run's path.
  const otlp = config.otlp?.export ? liveOtlpExport(config.otlp.export) : null;
  const stopListening = hooks.onRetry ? listenForRetries(hooks.onRetry) : () => undefined;
  const result = await runRollouts(env, {
    tasks,
    samples: params.samples,
    concurrency,
    params,
    seed: params.seed,
    resumeRunId: checked.resume,
    retryFailed: checked.retryFailed,
    ...(shard ? { shard } : {}),
    ...(checked.coordinated ? { coordinated: true } : {}),
    signal: hooks.signal,
    onStart: hooks.onStart,
    onProgress: hooks.onProgress,
    onWarning: hooks.onWarning,
    ...(otlp ? { onRolloutEnded: (rollout, spans) => otlp.rolloutEnded(rollout, spans) } : {}),
  }).finally(() => {
    stopListening();
    return env.close?.();
  });
  const exportProblem = otlp ? await otlp.drain() : null;
  if (exportProblem) {
    const { message, rollouts, firstRolloutId } = exportProblem;
    const w: RunWarning = { kind: 'otlp_export_failed', message, rollouts, occurrences: rollouts, subjects: [config.otlp!.export!.endpoint], firstRolloutId };
    result.warnings.push(w);
    hooks.onWarning?.(w);
  }
  const metrics = computeMetrics(result.rollouts, rewardSetupOf(config), decisionLabelsOf(config));
  const allFailed = metrics.rollouts > 0 && metrics.succeeded === 0;
  return {
    ...result,
    params,
    concurrency,
    datasetFile: ds.file,
    metrics,
    outcome: runOutcome(lab.store, result.runId),
    allFailedError: allFailed ? (result.rollouts.find((r) => r.error)?.error ?? 'unknown error') : null,
  };
}

/**
 * The slice a resumed invocation runs: the one asked for, which must be of the
 * count the run was split into; a run split over workers resumed without
 * --shard runs as its one worker (every slice), so it too marks the run done
 * only once every key stands (runner.ts shardedRunStatus).
 */
function workerShard(runId: string, params: BatchRunParams, asked: Shard | undefined): Shard | undefined {
  const count = params.shards ?? null;
  if (!asked) return count ? { index: 0, count: 1 } : undefined;
  if (count === null) throw new UsageError(`run "${runId}" is not split into slices: resume it without --shard or --workers (or start a new run with --workers N or --shard K/N)`);
  if (asked.count !== count) throw new UsageError(`run "${runId}" is split into ${count} slices, not ${asked.count}: join it with --shard K/${count} (K from 0 to ${count - 1})`);
  return asked;
}

/** A run split into `count` slices, created for workers to join (`--resume RUN --shard K/N`) and for its coordinator to follow. */
export interface ShardedRun {
  runId: string;
  params: BatchRunParams;
  datasetFile: string;
  /** Tasks chosen (each runs `params.samples` times). */
  tasks: number;
  /** Every planned key (`task#sample`) of the whole run, and its slice. */
  keys: Array<{ key: string; shard: number }>;
}

/**
 * Creates the record of a run split over `count` workers, with the batch's
 * options and the slice count, and nothing run yet: the coordinator (`run
 * --workers N`, a cluster launcher) writes it, owns its status while it
 * follows the workers (finishShardedRun), and each worker joins it.
 */
export async function createShardedRun(lab: Lab, plan: BatchPlan, count: number): Promise<ShardedRun> {
  const checked = parseBatchPlan({ ...plan, shard: { index: 0, count } });
  if (checked.resume) throw new UsageError('a run split over workers is created new: to finish one, join it with --resume RUN_ID --shard K/N');
  const run = await shardedPlan(lab, newRunId(), resolveBatchParams(checked, lab.loaded.config.runner), count);
  lab.store.startRun({ id: run.runId, startTime: Date.now(), endTime: null, status: 'running', params: run.params, simulated: lab.simulated, planned: run.keys.length });
  return run;
}

/** A run split over workers, taken up again by a coordinator (`run --resume RUN --workers N`): its stored options, its keys, status running. */
export async function reopenShardedRun(lab: Lab, runId: string, count: number): Promise<ShardedRun> {
  const params = storedParams(lab, runId);
  workerShard(runId, params, { index: 0, count });
  const run = await shardedPlan(lab, runId, params, count);
  lab.store.updateRun(runId, { status: 'running', endTime: null });
  return run;
}

/** The tasks a run's options choose, and every key of them with its slice. */
async function shardedPlan(lab: Lab, runId: string, params: BatchRunParams, count: number): Promise<ShardedRun> {
  const ds = await lab.loadDataset(params.dataset ?? undefined);
  const tasks = lab.selectTasks(ds, { split: params.split, limit: params.limit ?? undefined, seed: params.seed });
  return { runId, params, datasetFile: ds.file, tasks: tasks.length, keys: shardedKeys(tasks.map((t) => t.id), params.samples, count) };
}

/** A run's planned keys with the slice of each. */
export function shardedKeys(taskIds: readonly string[], samples: number, count: number): Array<{ key: string; shard: number }> {
  const keys = taskIds.flatMap((id) => Array.from({ length: samples }, (_, s) => rolloutKey(id, s)));
  const of = shardsOfKeys(keys, count);
  return keys.map((key) => ({ key, shard: of.get(key)! }));
}

/** Where a sharded run's slices stand, from the store: finished keys per slice (whatever worker ran them). */
export function shardProgress(lab: Lab, run: ShardedRun, count: number): Array<{ shard: string; planned: number; finished: number; succeeded: number; failed: number; running: number }> {
  const current = new Map<string, string>();
  for (const a of lab.store.currentAttempts(run.runId)) {
    const k = rolloutKey(a.taskId, a.sample);
    // A key with a finished attempt counts as finished even beside a copy still running.
    if (current.get(k) === undefined || current.get(k) === 'running') current.set(k, a.status);
  }
  const rows = Array.from({ length: count }, (_, i) => ({ shard: shardText({ index: i, count }), planned: 0, finished: 0, succeeded: 0, failed: 0, running: 0 }));
  for (const { key, shard } of run.keys) {
    const row = rows[shard]!;
    row.planned++;
    const status = current.get(key);
    if (status === 'running') row.running++;
    else if (status !== undefined) {
      row.finished++;
      if (status === 'succeeded') row.succeeded++;
      else if (status === 'failed') row.failed++;
    }
  }
  return rows;
}

/** The coordinator's end of a sharded run: the metrics over every slice, and the run's status (done only when every key stands). */
export async function finishShardedRun(lab: Lab, run: ShardedRun, end: { cancelled: boolean }): Promise<{ metrics: EvalMetrics; outcome: RunOutcome; rollouts: number; simulated: boolean; done: boolean }> {
  await lab.store.refresh();
  const { config } = lab.loaded;
  const rollouts = lab.store
    .listRollouts({ runId: run.runId, superseded: false, limit: Number.MAX_SAFE_INTEGER })
    .rollouts.filter((r) => r.status === 'succeeded' || r.status === 'failed');
  const simulated = simulatedOf(rollouts, lab.simulated);
  const done = everyKeyStands(run.keys.map((k) => k.key), lab.store, run.runId);
  const status = done ? 'done' : end.cancelled ? 'cancelled' : 'failed';
  lab.store.updateRun(run.runId, { status, endTime: Date.now(), simulated });
  return { metrics: computeMetrics(rollouts, rewardSetupOf(config), decisionLabelsOf(config)), outcome: runOutcome(lab.store, run.runId), rollouts: rollouts.length, simulated, done };
}

function storedParams(lab: Lab, runId: string): BatchRunParams {
  const run = lab.store.getRun(runId);
  if (!run) throw new UsageError(`run "${runId}" is not in this workspace's store — list runs with \`rollout-lab traces\``);
  return parseBatchRunParams(runId, run.params);
}
