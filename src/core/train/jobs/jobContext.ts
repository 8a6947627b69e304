import type { LoadedConfig } from '../../config/loader';
import type { PhaseConfig, TargetConfig } from '../../config/trainingSchema';
import { TargetSchema } from '../../config/trainingSchema';
import { UsageError } from '../../errors';
import { findPhase, pipelinePhases } from '../phases/phases';
import { pipelineDir, type PhaseRecord, type PhaseResult } from '../phases/pipelineState';
import type { JobRecord } from './jobRecord';
import type { TrainerEvent } from './trainerEvents';

/**
 * What training jobs work from: lab.json as loaded (the training section, the
 * phases, the folder the registry and the jobs live in) and the two pipeline
 * steps a job hands to (exporting a phase's data, running a phase that runs
 * on this machine). No store, router or graph: a job reads and writes files,
 * and its launcher drives the target. The callers build one from their Lab
 * (see train/pipeline/labJobContext.ts).
 */
export interface JobContext {
  loaded: Pick<LoadedConfig, 'config' | 'baseModels' | 'file' | 'labDir'>;
  /** Pre-flight and export of a GPU phase's data, as the pipeline's sft or grpo phase does. */
  exportPhaseData(phase: PhaseConfig, opts: { signal?: AbortSignal; includeSimulated?: boolean; runId?: string }): Promise<PhaseResult>;
  /** Runs a phase that runs on this machine (bandit, apo) through the pipeline; resolves with its final record. */
  runLocalPhase(
    name: string,
    opts: { signal?: AbortSignal; includeSimulated?: boolean; log?: (line: string) => void; onUpdate?: (rec: PhaseRecord) => void },
  ): Promise<PhaseRecord>;
}

export interface JobHooks {
  log?: (line: string) => void;
  /** A line of the job's own output (its log). */
  onLine?: (jobId: string, line: string) => void;
  onEvent?: (jobId: string, event: TrainerEvent) => void;
  /** The job's record changed (state, handle, result). */
  onRecord?: (rec: JobRecord) => void;
  /** A phase's record changed. */
  onPhase?: (rec: PhaseRecord) => void;
  /** Stops following (a job keeps running on its target; a serve job's port forward closes). */
  signal?: AbortSignal;
}

/** Where the lab's jobs and phases keep their files (training.outputDir, absolute). */
export function trainingDir(ctx: JobContext): string {
  return pipelineDir(ctx.loaded);
}

/** The phase a `--phase` value names: a phase name first, else the first phase of that kind. */
export function resolvePhase(ctx: JobContext, name: string): PhaseConfig {
  const phases = pipelinePhases(ctx.loaded.config);
  const byName = phases.find((p) => p.name === name);
  if (byName) return byName;
  const byKind = phases.find((p) => p.kind === name);
  if (byKind) return byKind;
  return findPhase(ctx.loaded.config, name);
}

/** The target a `--target` value names: a key of training.targets, else a kind (the first target of it, or its defaults). */
export function resolveTarget(ctx: JobContext, name: string | undefined, phase?: PhaseConfig): { name: string; target: TargetConfig } {
  const { targets, trainer } = ctx.loaded.config.training;
  const wanted = name ?? phase?.target ?? trainer.target ?? 'local';
  if (targets[wanted]) return { name: wanted, target: targets[wanted]! };
  const ofKind = Object.entries(targets).find(([, t]) => t.kind === wanted);
  if (ofKind) return { name: ofKind[0], target: ofKind[1] };
  if (wanted === 'local') return { name: 'local', target: TargetSchema.parse({ kind: 'local' }) };
  const kinds = ['ssh', 'skypilot', 'k8s', 'slurm'];
  const known = Object.keys(targets);
  throw new UsageError(
    kinds.includes(wanted)
      ? `no ${wanted} target in training.targets of ${ctx.loaded.file} — add one, e.g. ${targetExample(wanted)}`
      : `no target "${wanted}" — use local, ssh, skypilot, k8s or slurm, or one of training.targets${known.length ? ` (${known.join(', ')})` : ''}`,
  );
}

function targetExample(kind: string): string {
  if (kind === 'ssh') return '"targets": {"gpu-box": {"kind": "ssh", "host": "me@gpu-box"}}';
  if (kind === 'skypilot') return '"targets": {"cloud": {"kind": "skypilot", "gpuType": "H100"}}';
  if (kind === 'slurm') return '"targets": {"hpc": {"kind": "slurm", "host": "me@login.cluster", "partition": "gpu", "timeLimit": "4:00:00"}}';
  return '"targets": {"cluster": {"kind": "k8s", "namespace": "ml"}}';
}
