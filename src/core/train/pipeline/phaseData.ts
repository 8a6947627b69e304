import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { PhaseConfig } from '../../config/trainingSchema';
import type { Lab } from '../../lab/lab';
import { DEFAULT_SFT_MIN_REWARD, isResearchLabGraph } from '../export/trainingDefaults';
import { findPhase } from '../phases/phases';
import { pipelineDir, type PhaseResult } from '../phases/pipelineState';

/**
 * What the data phases (sft, grpo, bandit, apo) start from: their pre-flight,
 * the export a GPU job trains on, and whether simulated rollouts count.
 */

/** A caller's choice over the phase's own includeSimulated (a CLI flag, an editor option). */
export interface SimulatedOption {
  includeSimulated?: boolean;
}

/**
 * The phase as it runs now: a caller's includeSimulated (a CLI flag, an editor
 * option) over the phase's own; and the reference pipeline on a lab whose
 * every model is simulated uses the simulated rollouts, as there is nothing
 * else (declared phases stay as declared).
 */
export function withSimulated(lab: Lab, phase: PhaseConfig, opts: SimulatedOption): PhaseConfig {
  return !phase.includeSimulated && (opts.includeSimulated || simulatedOnlyReference(lab)) ? { ...phase, includeSimulated: true } : phase;
}

/** The research lab's reference pipeline (no training.phases) on a lab whose every model answers from the simulated endpoint. */
export function simulatedOnlyReference(lab: Pick<Lab, 'loaded' | 'router'>): boolean {
  const { config } = lab.loaded;
  const models = Object.keys(config.models);
  return config.training.phases.length === 0 && isResearchLabGraph(config) && models.length > 0 && lab.router.simulatedModels().length === models.length;
}

/** Whether a data phase takes simulated rollouts only because the lab has nothing else (said loudly in its output and note). */
export function usesSimulatedByDefault(lab: Lab, phase: PhaseConfig, opts: SimulatedOption): boolean {
  return phase.kind !== 'gather' && !opts.includeSimulated && !findPhase(lab.loaded.config, phase.name).includeSimulated && simulatedOnlyReference(lab);
}

export const SIMULATED_USE =
  'SIMULATED: every model of the lab is on the simulated endpoint, so the reference pipeline uses its simulated rollouts — a demo of the pipeline that teaches a model nothing real; once a model has a baseUrl in .rollout-lab/lab.json they are left out again';

const SIMULATED_HINT = 'set "includeSimulated": true on the phase (or pass --include-simulated) to use them';

/** The phase's pre-flight: the checks that warned or failed, with an error when one failed. */
export async function preflight(lab: Lab, phase: PhaseConfig, kind: 'sft' | 'grpo' | 'bandit' | 'apo'): Promise<PhaseResult | null> {
  const { runPreflight } = await import('../export/preflight');
  await lab.store.refresh();
  const report = runPreflight(lab.store, lab.loaded.config, {
    phase: kind,
    ...(phase.agents ? { agents: phase.agents } : {}),
    ...(phase.minReward !== undefined || kind === 'sft' ? { minReward: phase.minReward ?? DEFAULT_SFT_MIN_REWARD } : {}),
    split: phase.split,
    includeSimulated: phase.includeSimulated,
    includePenalised: phase.includePenalised,
    includeSimulatedHint: SIMULATED_HINT,
  });
  const checks = report.checks.filter((c) => c.severity !== 'info');
  if (report.ok) return { checks };
  const failing = checks.filter((c) => c.severity === 'error');
  // The report's full counts are in `rollout-lab preflight`; the phase keeps the ones that say how much data there was.
  const counts = Object.fromEntries(['rollouts', 'simulated', 'usable', 'groups', 'decisions'].filter((k) => report.counts[k] !== undefined).map((k) => [k, report.counts[k]!]));
  return {
    checks,
    counts,
    error: preflightFailure(failing),
  };
}

/** A failed pre-flight in one line: each failed check and its fix (with the lab.json key or flag to set), then what to do. */
export function preflightFailure(failing: ReadonlyArray<{ title: string; fix: string }>): string {
  const each = failing.map((c) => `${c.title} — fix: ${c.fix.replace(/\.$/, '')}`);
  return `pre-flight failed: ${each.join('; ') || 'see the checks'} — then run the phase again`;
}

/** Pre-flight and export of an sft or grpo phase's data (what a GPU job trains on). */
export async function exportPhaseData(lab: Lab, declared: PhaseConfig, opts: SimulatedOption & { signal?: AbortSignal; runId?: string }): Promise<PhaseResult> {
  const phase = withSimulated(lab, declared, opts);
  const kind = phase.kind as 'sft' | 'grpo';
  const failed = await preflight(lab, phase, kind);
  if (failed?.error) return failed;
  if (opts.signal?.aborted) return { error: 'cancelled' };
  const { exportTrainingData } = await import('../export/exportData');
  const dir = path.join(pipelineDir(lab.loaded), phase.name);
  const outFile = path.join(dir, kind === 'sft' ? 'sft.jsonl' : 'rl.jsonl');
  mkdirSync(dir, { recursive: true });
  const manifest = await exportTrainingData(
    lab.store,
    lab.loaded.config,
    {
      format: kind === 'sft' ? 'sft' : 'rl',
      ...(phase.agents ? { agents: phase.agents } : {}),
      ...(kind === 'sft' ? { minReward: phase.minReward ?? DEFAULT_SFT_MIN_REWARD } : phase.minReward !== undefined ? { minReward: phase.minReward } : {}),
      split: phase.split,
      includeSimulated: phase.includeSimulated,
      includePenalised: phase.includePenalised,
      ...(opts.runId ? { runId: opts.runId } : {}),
      ...(kind === 'grpo' ? { credit: phase.credit, gamma: phase.gamma } : {}),
    },
    outFile,
  );
  const skipped = Object.values(manifest.counts.skipped).reduce((a, b) => a + b, 0);
  const counts: Record<string, number> = { rollouts: manifest.counts.rollouts, records: manifest.counts.records, skipped };
  if (manifest.counts.groups !== undefined) counts.groups = manifest.counts.groups;
  const simulated = manifest.counts.skipped.simulated ?? 0;
  if (simulated) counts.simulated = simulated;
  const penalisedOut = manifest.counts.skipped.penalised ?? 0;
  if (penalisedOut) counts.penalisedLeftOut = penalisedOut;
  if (manifest.counts.penalised) counts.penalised = manifest.counts.penalised;
  const rel = (f: string): string => path.relative(lab.loaded.labDir, f).split(path.sep).join('/');
  const model = phase.model ? ` "${phase.model}"` : '';
  return {
    checks: failed?.checks ?? [],
    counts,
    files: [rel(outFile), rel(`${outFile}.manifest.json`)],
    produced: { kind: 'data', id: manifest.sha256.slice(0, 12) },
    note: `${usesSimulatedByDefault(lab, declared, opts) ? `${SIMULATED_USE}; ` : ''}${simulated ? `${simulated} simulated rollouts left out (${SIMULATED_HINT}); ` : ''}${penaltyNote(manifest.counts.penalised, penalisedOut)}data exported and checked; train on it with Launch Training Phase… or rollout-lab train --phase ${phase.name} --target local|ssh|skypilot|k8s|slurm (a model${model} trained elsewhere: rollout-lab pipeline register ${phase.model ?? 'MODEL'} --version V --phase ${phase.name})`,
  };
}

/** What the phase's note says of rollouts whose reward is a penalty: how many are in the data, or how many were left out. */
function penaltyNote(included: number, leftOut: number): string {
  if (included) return `${included} rollouts whose reward is a penalty (the judge or the custom reward failed) are included, their rows say reward_source "penalty"; `;
  if (leftOut) return `${leftOut} rollouts whose reward is a penalty (the judge or the custom reward failed) left out (set "includePenalised": true on the phase to use them); `;
  return '';
}
