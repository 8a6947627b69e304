import { z } from 'zod';

/**
 * The Training Curves panel's part of the message catalogue
 * (src/shared/protocol.ts merges it). Unlike the lab panels there is one
 * panel per training job: it shows the job's metrics, pushed by the host as
 * the job's log grows, and asks nothing back but to show the log.
 */

export const CURVES_VIEW_TYPE = 'rolloutLab.trainingCurves';

/** What the panel shows about the job (text only; the webview renders every field as text). */
export interface CurvesJob {
  id: string;
  kind: 'sft' | 'grpo' | 'serve';
  phase: string;
  state: 'launching' | 'running' | 'fetching' | 'succeeded' | 'failed' | 'cancelled';
  targetName: string;
  targetKind: string;
  baseModel: string;
  createdAt: number;
  endedAt: number | null;
  error: string | null;
}

/** One metrics event of the job: its step and every numeric value it reported (loss, lr, reward_mean, kl, ...). */
export interface CurvesPoint {
  step: number;
  values: Record<string, number>;
  /** When the host read it from the log (ms since the epoch), for the step rate; absent for points of unknown time. */
  at?: number;
}

export interface CurvesNotifications {
  /** Everything from the start: the job and all its points so far (also after the log was replayed on a reattach). */
  'curves/reset': { job: CurvesJob; points: CurvesPoint[]; folder: string; totalSteps?: number | null };
  /** Points the log gained since the last message (and the total steps, once the trainer's start event said it). */
  'curves/append': { points: CurvesPoint[]; totalSteps?: number | null };
  /** The job's record changed (state, end, error). */
  'curves/job': { job: CurvesJob };
  /** The job cannot be shown (its record is gone, or its lab is). */
  'curves/error': { message: string };
}
/** Webview → host commands (fire and forget). */
export const CurvesCommandArgs = {
  /** Show the job's log in the Output channel. */
  'job/showLog': z.strictObject({}),
} as const satisfies Record<string, z.ZodType>;

/** Notifications that report what the job's log gained: they are not replayed; a page that loads again gets `curves/reset`. */
export const CURVES_EVENTS = ['curves/reset', 'curves/append', 'curves/job', 'curves/error'] as const satisfies ReadonlyArray<keyof CurvesNotifications>;
