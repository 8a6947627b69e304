import { z } from 'zod';
import type { EvaluationReport } from '../core/analysis/evaluationReport';
import type { RunRecord } from '../core/store/types';

/**
 * The evaluation report panel's part of the message catalogue
 * (src/shared/protocol.ts merges it): request parameter schemas, result
 * types, webview commands, notifications.
 */

const RunId = z.string().min(1).max(200);

export const ReportRequestParams = {
  /** The report of a run; without runId, of the newest evaluation run (else the newest run). */
  'report/get': z.strictObject({ runId: RunId.optional() }),
  /** The runs a report can be made for, newest first. */
  'report/runs': z.strictObject({}),
  /** Asks where to save the report (a save dialog on the host) and writes it. */
  'report/export': z.strictObject({ runId: RunId, format: z.enum(['md', 'html']) }),
} as const satisfies Record<string, z.ZodType>;

/** A run as the report's run picker lists it. */
export interface ReportRunSummary {
  id: string;
  startTime: number;
  status: RunRecord['status'];
  /** `params.command`: 'eval' for Evaluate on Validation Set, 'run' for Run Rollouts. */
  command: string | null;
  split: string | null;
  simulated: boolean;
  rollouts: number;
}

export interface ReportRequestResults {
  /** null when the store has no runs yet. */
  'report/get': EvaluationReport | null;
  'report/runs': { runs: ReportRunSummary[]; defaultRunId: string | null };
  'report/export': { saved: boolean; path: string | null };
}

/** Webview → host commands (fire and forget). The report opens rollouts with the shared `trace/open`. */
export const ReportCommandArgs = {} as const satisfies Record<string, z.ZodType>;

export interface ReportNotifications {
  /** Show the report of this run (the host opened the panel for it, e.g. after Evaluate). */
  'report/show': { runId: string };
}
