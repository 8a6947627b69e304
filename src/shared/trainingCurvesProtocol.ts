import { z } from 'zod';

/**
 * Messages between the extension host and the Training Curves panel (one
 * panel per training job). The panel is not one of the lab panels of
 * protocol.ts: it shows one job's metrics, pushed by the host as the job's
 * log grows, and asks nothing back but a command or two. The envelope is the
 * same as protocol.ts's (`ready`, `command`, `notification`), so the webview
 * test harness drives it the same way. The webview imports types only (zod
 * stays out of its bundle); the host checks what the webview sends.
 */

export const CURVES_PANEL = 'trainingCurves';
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
export type CurvesNotificationType = keyof CurvesNotifications;

export type CurvesHostMessage = { [N in CurvesNotificationType]: { kind: 'notification'; type: N; params: CurvesNotifications[N] } }[CurvesNotificationType];

/** Webview → host; checked on the host, as all webview input is. */
export const CurvesWebviewMessage = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('ready'), panel: z.literal(CURVES_PANEL) }),
  z.strictObject({ kind: z.literal('command'), command: z.enum(['job/showLog']), args: z.strictObject({}) }),
]);
export type CurvesWebviewMessage = z.infer<typeof CurvesWebviewMessage>;

/** What the panel keeps with setState, and the serializer reads back after a window reload. */
export interface CurvesState {
  jobId: string;
  folder: string;
}

export function isCurvesState(s: unknown): s is CurvesState {
  const o = s as Partial<CurvesState> | null;
  return typeof o === 'object' && o !== null && typeof o.jobId === 'string' && typeof o.folder === 'string';
}

