import { z } from 'zod';
import type { LabConfig } from '../config/schema';
import { UsageError } from '../errors';

const Count = z.number().int().min(1);

/** Which tasks of a dataset a batch takes: the first part (trainFraction), the held-out rest, or every task. */
export const BatchSplitSchema = z.enum(['train', 'val', 'all']);
export type BatchSplit = z.infer<typeof BatchSplitSchema>;

/**
 * What a batch of rollouts is asked to do (Run Rollouts / `rollout-lab run`,
 * Evaluate / `rollout-lab eval`), as an adapter passes it. Left out, an option
 * takes the command's or lab.json's default (`resolveBatchParams`).
 */
export const BatchPlanSchema = z.strictObject({
  command: z.enum(['run', 'eval']),
  /** A key of "datasets" in lab.json, or a file path relative to the workspace. */
  dataset: z.string().min(1).optional(),
  split: BatchSplitSchema.optional(),
  /** Tasks to take; left out, all of the split. */
  limit: Count.optional(),
  samples: Count.optional(),
  concurrency: Count.optional(),
  seed: z.number().int().min(0).optional(),
  /** Continue this run with the options it was started with (the others here but `concurrency` are not used). */
  resume: z.string().min(1).optional(),
  /** With `resume`: redo the rollouts that failed for the agent's own reasons too (transport failures are always redone). */
  retryFailed: z.boolean().optional(),
  /**
   * Run only slice `index` (0-based) of `count` (shards.ts). With `resume`, a
   * worker joining a run split into `count` slices; without, a new run split so,
   * of which this runs the first worker's share.
   */
  shard: z.strictObject({ index: z.number().int().min(0), count: Count }).refine((s) => s.index < s.count, { message: 'the slice index is 0-based: below the slice count' }).optional(),
  /**
   * With `resume` and `shard`: a worker started by a coordinator that follows
   * the run (`--workers N`). It leaves the whole run's status to it, so at its
   * end it does not catch up with the other slices to check whether the run
   * stands.
   */
  coordinated: z.boolean().optional(),
})
  .refine((p) => !p.retryFailed || p.resume !== undefined, { message: 'retryFailed goes with resume: it redoes failed rollouts of the run being resumed', path: ['retryFailed'] })
  .refine((p) => !p.coordinated || (p.resume !== undefined && p.shard !== undefined), { message: 'coordinated goes with resume and shard: it marks a worker that its coordinator follows', path: ['coordinated'] });
export type BatchPlan = z.infer<typeof BatchPlanSchema>;

/**
 * Set to 1 in the environment of the workers a coordinator starts and follows
 * (`run --workers N`, every place): the CLI's `--resume RUN --shard K/N` then
 * runs as BatchPlan.coordinated. A slice rerun by hand (the command the
 * coordinator prints, `sbatch --array=K`, a one-pod Job, `sky launch --env
 * ROLLOUT_LAB_SHARD=K`) starts without it, so it checks the whole run at its
 * end and marks it done.
 */
export const COORDINATED_ENV = 'ROLLOUT_LAB_COORDINATED';

/**
 * The options a batch run is stored with (RunRecord.params): read back, with
 * this schema, to resume it or to propose them again.
 */
export const BatchRunParamsSchema = z.object({
  command: z.enum(['run', 'eval']),
  dataset: z.string().min(1).nullable(),
  split: BatchSplitSchema,
  limit: Count.nullable(),
  samples: Count,
  seed: z.number().int().min(0),
  /** How many slices the run is split into, for workers (`--shard K/N`, `--workers N`); null or absent for a run of one process. */
  shards: Count.nullable().optional(),
});
export type BatchRunParams = z.infer<typeof BatchRunParamsSchema>;

function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  return `${issue.path.length ? `${issue.path.join('.')}: ` : ''}${issue.message}`;
}

/** The plan an adapter built, checked before anything opens: a bad option is a UsageError. */
export function parseBatchPlan(raw: unknown): BatchPlan {
  const r = BatchPlanSchema.safeParse(raw);
  if (!r.success) throw new UsageError(`invalid batch options — ${firstIssue(r.error)}`);
  return r.data;
}

/** The stored options of run `runId`, or a UsageError saying why they cannot be resumed as a batch. */
export function parseBatchRunParams(runId: string, params: unknown): BatchRunParams {
  const r = BatchRunParamsSchema.safeParse(params);
  if (!r.success) {
    throw new UsageError(`run "${runId}" cannot be resumed as a batch: its stored options do not fit (${firstIssue(r.error)}) — it was started by another command or an older version; start a new run instead`);
  }
  return r.data;
}

/** A new batch's stored options: what the plan gives, the rest from the command and lab.json. */
export function resolveBatchParams(plan: BatchPlan, runner: LabConfig['runner']): BatchRunParams {
  return {
    command: plan.command,
    dataset: plan.dataset ?? null,
    split: plan.split ?? (plan.command === 'eval' ? 'val' : 'train'),
    limit: plan.limit ?? null,
    samples: plan.samples ?? runner.samples,
    seed: plan.seed ?? runner.seed,
    ...(plan.shard ? { shards: plan.shard.count } : {}),
  };
}
