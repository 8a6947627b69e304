import { z } from 'zod';

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

/** undefined when the command was run without an argument (from the palette or a menu). */
export function parseRunArgs(raw: unknown): RunArgs | undefined {
  // A view/title menu passes nothing; a tree context passes its element: both mean "ask".
  if (raw === undefined || raw === null) return undefined;
  const r = RunArgsSchema.safeParse(raw);
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
