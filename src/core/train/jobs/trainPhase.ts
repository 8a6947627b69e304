import path from 'node:path';
import { errorMessage, UsageError } from '../../errors';
import { emptyPhaseRecord, pipelineStateFile, readPipelineState, type PhaseRecord } from '../phases/pipelineState';
import { resolvePhase, trainingDir, type JobContext, type JobHooks } from './jobContext';
import { draftTraining, GPU_KINDS, type JobDraft, type TrainOptions } from './jobDraft';
import { followJob, launchDraft } from './jobLifecycle';
import { readJob } from './jobQueries';
import { jobDir, type JobRecord } from './jobRecord';
import { notifyPhase, setPhaseJob } from './phaseJob';

/**
 * Training jobs from the lab: pre-flight and export of a phase's data, the
 * job bundle and spec, launching on a target, following its log and events,
 * fetching what it produced and registering the trained model version so the
 * next rollouts use it. The CLI (`rollout-lab train`, `rollout-lab jobs`) and
 * the editor (Launch Training Phase…, the Training view) both call these.
 */

export interface TrainResult {
  /** The training job (sft, grpo); null for a phase that runs here (bandit, apo). */
  job: JobRecord | null;
  /** The serve job started for the result, when one was. */
  serve: JobRecord | null;
  phase: PhaseRecord;
}

/**
 * Runs a phase the way the Training view and `rollout-lab train` do: a GPU
 * phase (sft, grpo) becomes a job on the target, followed to its end; on
 * success the result is served and registered (unless serve is false); a
 * local phase (bandit, apo) runs here.
 */
export async function trainPhase(ctx: JobContext, opts: TrainOptions, hooks: JobHooks = {}): Promise<TrainResult> {
  const phase = resolvePhase(ctx, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) {
    const runOpts = {
      signal: opts.signal,
      ...(opts.includeSimulated ? { includeSimulated: true } : {}),
      ...(hooks.log ? { log: hooks.log } : {}),
      ...(hooks.onPhase ? { onUpdate: hooks.onPhase } : {}),
    };
    return { job: null, serve: null, phase: await ctx.runLocalPhase(phase.name, runOpts) };
  }
  const launched = await launchTraining(ctx, opts, hooks);
  const job = launched.state === 'failed' ? launched : await followJob(ctx, launched.id, { ...hooks, signal: opts.signal }, { ...(opts.secrets ? { secrets: opts.secrets } : {}) });
  return { job, serve: job.serveJob ? readJob(ctx, job.serveJob) : null, phase: readPipelineState(pipelineStateFile(ctx.loaded)).phases[phase.name]! };
}

/** Pre-flight, export, bundle and launch of a GPU phase, without following it (`train --detach`; the editor follows it itself). */
export async function launchTraining(ctx: JobContext, opts: TrainOptions, hooks: JobHooks = {}): Promise<JobRecord> {
  const phase = resolvePhase(ctx, opts.phase);
  if (!GPU_KINDS.has(phase.kind)) throw new UsageError(`phase "${phase.name}" is a ${phase.kind} phase, which runs on this machine — run it with \`rollout-lab train --phase ${phase.name}\``);
  const kind = phase.kind as 'sft' | 'grpo';
  let d: JobDraft;
  try {
    d = await draftTraining(ctx, opts, hooks.log ?? ((): void => undefined));
  } catch (err) {
    const cancelled = opts.signal?.aborted === true;
    notifyPhase(hooks, setPhaseJob(ctx, phase.name, kind, (r) => ({ ...r, state: cancelled ? 'cancelled' : 'failed', endedAt: Date.now(), error: cancelled ? 'cancelled' : errorMessage(err), pid: null, host: null })));
    throw err;
  }
  notifyPhase(
    hooks,
    setPhaseJob(ctx, phase.name, kind, (r) => ({
      ...emptyPhaseRecord(r.name, r.kind),
      state: 'running',
      startedAt: Date.now(),
      job: d.id,
      counts: d.data,
      files: [`${path.relative(ctx.loaded.labDir, jobDir(trainingDir(ctx), d.id)).split(path.sep).join('/')}/bundle/${d.train}`],
      note: `job ${d.id} on ${d.target.name}`,
    })),
  );
  const rec = await launchDraft(ctx, d, hooks, null, opts.serve ?? true);
  if (rec.state === 'failed') notifyPhase(hooks, setPhaseJob(ctx, phase.name, kind, (r) => ({ ...r, state: 'failed', endedAt: Date.now(), error: rec.error })));
  return rec;
}
