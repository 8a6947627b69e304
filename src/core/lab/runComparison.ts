import type { Task } from '../data/tasks';
import { UsageError } from '../errors';
import { newTraceId } from '../trace/ids';
import type { Variant } from '../config/variantSpec';
import type { ComparisonRunParams, ComparisonSideName } from '../analysis/comparisonRunParams';
import { runRollouts, type PlannedTask, type RunProgress, type RunResult } from '../rollout/runner';
import type { RunWarning } from '../rollout/runWarnings';
import { listenForRetries, type RetryNotice } from '../llm/retryNotices';
import type { Lab } from './lab';

export interface ComparisonRequest {
  a: Variant;
  b: Variant;
  /** The same tasks run on both sides. */
  tasks: readonly PlannedTask[];
  /** Every task of the dataset, for the search tool's index (as Lab.environment takes it); default `tasks`. */
  allTasks?: readonly Task[];
  samples: number;
  concurrency: number;
  /** One seed for both sides: a task's sample gets the same model-call seed in A and in B. */
  seed: number;
  /** Recorded with both runs (dataset, split, limit...). */
  params?: Record<string, unknown>;
  signal?: AbortSignal;
  onProgress?: (side: ComparisonSideName, p: RunProgress) => void;
  onStart?: (side: ComparisonSideName, info: { runId: string; total: number }) => void;
  /** Each side's run reports each kind of warning once (see RunRequest.onWarning). */
  onWarning?: (side: ComparisonSideName, w: RunWarning) => void;
  /** Each model call about to be retried, as it happens (the sides run one after the other). */
  onRetry?: (side: ComparisonSideName, notice: RetryNotice) => void;
}

export interface ComparisonRun {
  id: string;
  runA: string;
  /** null when the comparison was cancelled before side B started. */
  runB: string | null;
  cancelled: boolean;
  a: RunResult;
  b: RunResult | null;
}

/**
 * Runs two configurations on the same tasks with the same seeds: side A to
 * the end, then side B. Both variants are checked (models, agents, prompt
 * versions) before the first rollout, so a mistake in B wastes no run of A.
 */
export async function runComparison(lab: Lab, req: ComparisonRequest): Promise<ComparisonRun> {
  if (req.tasks.length === 0) throw new UsageError('nothing to compare: the task selection is empty — pick another split or a larger --limit');
  const allTasks = req.allTasks ?? req.tasks;
  const envA = await lab.environment(allTasks, req.a);
  const envB = await lab.environment(allTasks, req.b);
  const id = `cmp-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${newTraceId().slice(0, 6)}`;
  const run = async (side: ComparisonSideName, env: typeof envA, variant: Variant): Promise<RunResult> => {
    const stopListening = req.onRetry ? listenForRetries((n) => req.onRetry!(side, n)) : () => undefined;
    return runRollouts(env, {
      tasks: req.tasks,
      samples: req.samples,
      concurrency: req.concurrency,
      seed: req.seed,
      params: {
        command: 'compare',
        ...req.params,
        samples: req.samples,
        seed: req.seed,
        comparison: { id, side, label: variant.label, variant } satisfies ComparisonRunParams,
      },
      signal: req.signal,
      onStart: ({ runId, total }) => req.onStart?.(side, { runId, total }),
      onProgress: (p) => req.onProgress?.(side, p),
      onWarning: (w) => req.onWarning?.(side, w),
    }).finally(stopListening);
  };
  const a = await run('a', envA, req.a);
  if (a.cancelled || req.signal?.aborted) return { id, runA: a.runId, runB: null, cancelled: true, a, b: null };
  const b = await run('b', envB, req.b);
  return { id, runA: a.runId, runB: b.runId, cancelled: b.cancelled, a, b };
}
