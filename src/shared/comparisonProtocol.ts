import { z } from 'zod';
import type { ComparisonResult } from '../core/analysis/comparison';
import type { ComparisonSummary } from '../core/analysis/comparisonList';
import type { ComparisonTaskDetail } from '../core/analysis/comparisonTask';

/**
 * The comparison panel's part of the message catalogue (src/shared/protocol.ts
 * merges it): request parameter schemas, result types, webview commands,
 * notifications. Opening a rollout of either side goes through the shared
 * `trace/open` command.
 */

const RunId = z.string().min(1).max(200).regex(/^[\w.:-]+$/, 'a run id');
const TaskId = z.string().min(1).max(1000);

export const ComparisonRequestParams = {
  /** Comparisons found in the store (runs made by Compare Configurations). */
  'comparison/list': z.strictObject({}),
  /** Two stored runs compared task by task, with the aggregate and its tests. */
  'comparison/get': z.strictObject({ runA: RunId, runB: RunId }),
  /** One task's protocols on both sides, with judge scores and rationale. */
  'comparison/task': z.strictObject({ runA: RunId, runB: RunId, taskId: TaskId }),
} as const satisfies Record<string, z.ZodType>;

export interface ComparisonRequestResults {
  'comparison/list': { comparisons: ComparisonSummary[] };
  'comparison/get': ComparisonResult;
  'comparison/task': ComparisonTaskDetail;
}

/** Webview → host commands (fire and forget). */
export const ComparisonCommandArgs = {} as const satisfies Record<string, z.ZodType>;

export interface ComparisonNotifications {
  /** Show the comparison of these two runs (the host opened the panel for it). */
  'comparison/show': { runA: string; runB: string };
}
