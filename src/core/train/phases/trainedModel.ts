import type { LoadedConfig } from '../../config/loader';
import { registerModelVersion, type ModelRegistryEntry, type ModelVersionSpec, type RegisterOptions } from '../../config/modelRegistry';
import type { PhaseConfig } from '../../config/trainingSchema';
import { UsageError } from '../../errors';
import { findPhase } from './phases';
import { emptyPhaseRecord, pipelineStateFile, readPipelineState, writePhaseRecord } from './pipelineState';

/** What registering a version reads of lab.json as loaded. */
type LoadedModels = Pick<LoadedConfig, 'config' | 'baseModels' | 'file' | 'labDir'>;

/**
 * Registers a trained version of a logical model (it becomes active: the next
 * rollouts use it) and, when a phase is named, records it as what the phase
 * produced. It serves the agents given, else the phase's agents; when those
 * are all the model's agents it serves the model as a whole, and otherwise
 * only them: the model's other agents keep the version they ran.
 */
export function registerTrainedModel(
  loaded: LoadedModels,
  logicalModel: string,
  spec: Omit<ModelVersionSpec, 'producedBy'> & { phase?: string; job?: string },
  opts: RegisterOptions = {},
): ModelRegistryEntry {
  if (!loaded.baseModels[logicalModel]) {
    throw new UsageError(`model "${logicalModel}" is not defined under "models" in ${loaded.file} — one of: ${Object.keys(loaded.baseModels).join(', ') || '(none)'}`);
  }
  const phase = spec.phase === undefined ? undefined : findPhase(loaded.config, spec.phase);
  const agents = servedAgents(loaded, logicalModel, spec.agents, phase);
  const file = pipelineStateFile(loaded);
  const prev = phase ? readPipelineState(file).phases[phase.name] : undefined;
  const job = spec.job ?? prev?.job ?? undefined;
  const entry = registerModelVersion(loaded.labDir, logicalModel, {
    version: spec.version,
    baseUrl: spec.baseUrl,
    model: spec.model,
    adapter: spec.adapter,
    ...(agents ? { agents } : {}),
    ...(phase ? { producedBy: { phase: phase.name, at: Date.now(), ...(job ? { job } : {}) } } : {}),
  }, opts);
  if (phase) {
    const base = prev?.kind === phase.kind ? prev : emptyPhaseRecord(phase.name, phase.kind);
    writePhaseRecord(file, {
      ...base,
      state: base.state === 'running' ? base.state : 'done',
      endedAt: base.state === 'running' ? base.endedAt : Date.now(),
      // A version registered over a failed phase: the old failure no longer describes it.
      ...(base.state === 'running' ? {} : { error: null, checks: [] }),
      job: job ?? null,
      produced: { kind: 'model', id: spec.version },
      note: `model "${logicalModel}" version ${spec.version} registered and active${agents ? ` for ${agents.join(', ')} (the model's other agents keep their version)` : ''}`,
    });
  }
  return entry;
}

/**
 * The agents a new version of the model serves: those named (each must be an
 * agent of the model), else those of the phase that run on it; undefined when
 * that is every agent of the model (the version serves the model).
 */
function servedAgents(loaded: LoadedModels, logicalModel: string, named: readonly string[] | undefined, phase: PhaseConfig | undefined): string[] | undefined {
  const onModel = Object.keys(loaded.config.agents).filter((a) => loaded.config.agents[a]!.model === logicalModel);
  if (named) {
    const wrong = named.filter((a) => !onModel.includes(a));
    if (wrong.length) {
      const what = (a: string): string => (loaded.config.agents[a] ? `"${a}" runs on model "${loaded.config.agents[a]!.model}"` : `"${a}" is not an agent of lab.json`);
      throw new UsageError(
        `${wrong.map(what).join('; ')} — a version of model "${logicalModel}" can serve only its agents (${onModel.join(', ') || 'none: set agents.<Agent>.model'}); name those, or set agents.<Agent>.model to "${logicalModel}" in ${loaded.file}`,
      );
    }
  }
  const chosen = named ? [...new Set(named)] : phase?.agents?.filter((a) => onModel.includes(a));
  if (!chosen?.length || onModel.every((a) => chosen.includes(a))) return undefined;
  return chosen;
}
