import { z } from 'zod';
import { WORKER_PLACES } from '../core/config/workersSchema';

/**
 * The optional argument of Run Rollouts and Evaluate: given (by a test, a
 * keybinding or another extension), it replaces the pickers. It comes from
 * outside, so it is checked like any external input.
 */
export const RunArgsSchema = z.strictObject({
  /** A key of "datasets" in lab.json, or a file path (relative to the workspace). */
  dataset: z.string().min(1).optional(),
  split: z.enum(['train', 'val', 'all']).optional(),
  limit: z.number().int().positive().optional(),
  samples: z.number().int().positive().max(1000).optional(),
  concurrency: z.number().int().positive().max(256).optional(),
  /** Which workspace folder's lab, when several folders have one. */
  workspace: z.string().min(1).optional(),
});
export type RunArgs = z.infer<typeof RunArgsSchema>;

/** Run Rollouts on Workers takes the same, and how many workers where (the places of core/train/workers). */
export const WorkersArgsSchema = RunArgsSchema.extend({
  workers: z.number().int().min(1).max(10_000).optional(),
  on: z.enum(WORKER_PLACES).optional(),
});
export type WorkersArgs = z.infer<typeof WorkersArgsSchema>;

/** undefined when the command was run without an argument (from the palette or a menu). */
export function parseRunArgs(raw: unknown): RunArgs | undefined;
export function parseRunArgs(raw: unknown, schema: typeof WorkersArgsSchema): WorkersArgs | undefined;
export function parseRunArgs(raw: unknown, schema: typeof RunArgsSchema | typeof WorkersArgsSchema = RunArgsSchema): RunArgs | WorkersArgs | undefined {
  // A view/title menu passes nothing; a tree context passes its element: both mean "ask".
  if (raw === undefined || raw === null) return undefined;
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
    throw new Error(`invalid arguments for Run Rollouts: ${where}${issue?.message ?? 'expected { dataset?, split?, limit?, samples?, concurrency? }'}`);
  }
  return r.data;
}

/** What the user typed for a count: a whole number ≥ 1, or "" for "all" when `allowEmpty`. */
export function validateCount(text: string, allowEmpty: boolean): string | undefined {
  const t = text.trim();
  if (!t) return allowEmpty ? undefined : 'a whole number ≥ 1';
  return /^[1-9]\d*$/.test(t) ? undefined : 'a whole number ≥ 1';
}

/** The result of Run Rollouts, also what the command returns to a caller. */
export interface RunSummaryResult {
  runId: string;
  rollouts: number;
  succeeded: number;
  failed: number;
  simulated: boolean;
  cancelled: boolean;
}
