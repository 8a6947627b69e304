import type { LoadedConfig } from '../../config/loader';
import { agentRoutes, readRegistry, type ModelRegistryEntry, type ModelVersion } from '../../config/modelRegistry';
import type { PhaseConfig } from '../../config/trainingSchema';
import { isResearchLabGraph } from '../export/trainingDefaults';
import { pipelineExample, pipelinePhases, type PhaseExample } from '../phases/phases';
import { emptyPhaseRecord, pipelineDir, pipelineStateFile, readPipelineState, type PhaseRecord } from '../phases/pipelineState';

export interface PhaseStatus {
  phase: PhaseConfig;
  record: PhaseRecord;
}

export interface ModelStatus {
  name: string;
  /** lab.json's own settings; null for a model the registry knows but lab.json no longer defines. */
  base: { model: string; baseUrl: string | null; version: string | null } | null;
  active: string | null;
  history: string[];
  versions: ModelVersion[];
  /** Each agent of lab.json on this model and the version it runs (null: lab.json's settings). */
  routes: Array<{ agent: string; version: string | null }>;
}

export interface PipelineStatus {
  /** The phases' folder, absolute. */
  outputDir: string;
  stateFile: string;
  /** Whether the phases come from lab.json (false: the research-lab graph's reference pipeline, or none for a module graph). */
  declared: boolean;
  phases: PhaseStatus[];
  /** A module graph with no training.phases: phases built from its own agents and models, ready to paste; null otherwise. */
  example: PhaseExample[] | null;
  models: ModelStatus[];
}

/** Each phase with its state, and each logical model with its registered versions (read from disk now). */
export function pipelineStatus(lab: { loaded: LoadedConfig }): PipelineStatus {
  const { loaded } = lab;
  const stateFile = pipelineStateFile(loaded);
  const state = readPipelineState(stateFile);
  const phases = pipelinePhases(loaded.config).map((phase) => ({
    phase,
    record: state.phases[phase.name]?.kind === phase.kind ? state.phases[phase.name]! : emptyPhaseRecord(phase.name, phase.kind),
  }));
  const registry = readRegistry(loaded.labDir);
  const names = [...new Set([...Object.keys(loaded.baseModels), ...Object.keys(registry.models)])];
  const models = names.map((name): ModelStatus => {
    const base = loaded.baseModels[name];
    const entry: ModelRegistryEntry | undefined = registry.models[name];
    return {
      name,
      base: base ? { model: base.model, baseUrl: base.baseUrl ?? null, version: base.version ?? null } : null,
      active: entry?.active ?? null,
      history: entry?.history ?? [],
      versions: entry?.versions ?? [],
      routes: agentRoutes(loaded.config, name, entry),
    };
  });
  const declared = loaded.config.training.phases.length > 0;
  const example = declared || isResearchLabGraph(loaded.config) ? null : pipelineExample(loaded.config);
  return { outputDir: pipelineDir(loaded), stateFile, declared, phases, models, example };
}
