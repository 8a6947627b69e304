import { emptyPhaseRecord, pipelineStateFile, readPipelineState, writePhaseRecord, type PhaseRecord } from '../phases/pipelineState';
import type { JobContext, JobHooks } from './jobContext';

/** A training job keeps its phase's record (pipeline.json) up to date: launched, failed, done, cancelled. */
export function setPhaseJob(ctx: JobContext, phaseName: string, kind: PhaseRecord['kind'], change: (r: PhaseRecord) => PhaseRecord): PhaseRecord {
  const file = pipelineStateFile(ctx.loaded);
  const prev = readPipelineState(file).phases[phaseName];
  const next = change(prev?.kind === kind ? prev : emptyPhaseRecord(phaseName, kind));
  writePhaseRecord(file, next);
  return next;
}

/** Writes first, then tells: `hooks.onPhase?.(write())` would skip the write when nobody listens. */
export function notifyPhase(hooks: JobHooks, rec: PhaseRecord): void {
  hooks.onPhase?.(rec);
}
