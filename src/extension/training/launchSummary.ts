import type { PhaseConfig, TrainerBackend } from '../../core/config/trainingSchema';
import type { DryRun } from '../../core/train/jobs/jobDraft';
import { hyperparameterSummary, type Hyperparameters } from './hyperparameterText';

/** What the trainer's backend needs on the target. */
const NEEDS: Record<TrainerBackend, string> = {
  transformers: 'transformers, peft and TRL on the target (here: bash scripts/setupTrainerVenv.sh); a GPU for any model of real size, the CPU for one built from training.trainer.modelConfig',
};

export interface SummaryRow {
  label: string;
  value: string;
}

/** "42 examples from 14 rollouts after pre-flight (3 left out)" / "6 groups, 48 records from 48 rollouts…". */
export function rowsText(kind: string, data: Record<string, number>): string {
  const records = data.records ?? 0;
  const from = data.rollouts !== undefined ? ` from ${data.rollouts} rollout${data.rollouts === 1 ? '' : 's'}` : '';
  const groups = kind === 'grpo' && data.groups !== undefined ? `${data.groups} groups, ` : '';
  const skipped = data.skipped ? ` (${data.skipped} left out)` : '';
  return `${groups}${records} ${kind === 'sft' ? 'examples' : 'records'}${from} after pre-flight${skipped}`;
}

/**
 * What Launch Training Phase… shows to confirm before it launches: the
 * phase, its agents and model, the rows the job trains on (counted by the
 * pre-flight and export of a dry run), where it runs, the backend and the
 * hyper-parameters that matter, and what happens when it succeeds.
 */
export function launchSummary(phase: PhaseConfig, dry: DryRun, reference: Hyperparameters, serve: boolean): SummaryRow[] {
  const kind = dry.spec.phase.kind;
  const backend = dry.spec.model.backend;
  const hp = { ...reference, ...dry.spec.hyperparameters };
  return [
    { label: 'Phase', value: `${phase.name} (${kind})` },
    { label: 'Agents', value: phase.agents?.length ? phase.agents.join(', ') : "the phase's default agents" },
    { label: 'Model', value: `${phase.model ?? 'none (no version is registered)'} · base ${dry.spec.model.base}${dry.spec.model.adapter ? ' · continues from its active adapter' : ''}` },
    { label: 'Rows', value: rowsText(kind, dry.data) },
    { label: 'Target', value: `${dry.plan.target}${dry.spec.resources.gpus ? ` · ${dry.spec.resources.gpus}× ${dry.spec.resources.gpuType ?? 'GPU'}` : ' · CPU'}${dry.python ? ` · ${dry.python.summary}` : ''}` },
    { label: 'Backend', value: `${backend} — needs ${NEEDS[backend]}` },
    { label: 'Hyper-parameters', value: hyperparameterSummary(kind, hp) },
    { label: 'When it succeeds', value: serve ? (phase.model ? `serve it and make it the active version of "${phase.model}"` : 'serve it (no model version is registered)') : 'keep the adapter; serve it later' },
  ];
}

/** Why Launch cannot start the job on this machine (a local target whose python has no torch), or null when it can. */
export function launchBlocker(dry: DryRun): string | null {
  return dry.python && !dry.python.torch ? dry.python.summary : null;
}
