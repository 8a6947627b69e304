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

/** What a batch will do, once its tasks are chosen and before anything runs. */
export interface BatchPlanned {
  params: BatchRunParams;
  concurrency: number;
  /** Tasks chosen (each runs `params.samples` times). */
  tasks: number;
  datasetFile: string;
  resumed: boolean;
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
  const concurrency = checked.concurrency ?? config.runner.concurrency;
  const ds = await lab.loadDataset(params.dataset ?? undefined);
  const tasks = lab.selectTasks(ds, { split: params.split, limit: params.limit ?? undefined, seed: params.seed });
  hooks.onPlanned?.({ params, concurrency, tasks: tasks.length, datasetFile: ds.file, resumed: checked.resume !== undefined });
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

function storedParams(lab: Lab, runId: string): BatchRunParams {
  const run = lab.store.getRun(runId);
  if (!run) throw new UsageError(`run "${runId}" is not in this workspace's store — list runs with \`rollout-lab traces\``);
  return parseBatchRunParams(runId, run.params);
}
