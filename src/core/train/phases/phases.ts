import type { LabConfig } from '../../config/schema';
import type { PhaseConfig } from '../../config/trainingSchema';
import { UsageError } from '../../errors';
import { JUNIOR_AGENTS, SENIOR_AGENTS } from '../../graph/researchLab/outputs';
import { DEFAULT_SFT_MIN_REWARD, isResearchLabGraph, trainableAgents } from '../export/trainingDefaults';

/**
 * The phases of the lab's training pipeline: the phases lab.json declares, or
 * for the research-lab graph its reference pipeline (gather rollouts with the
 * baseline models, SFT the juniors on successes, GRPO the seniors, train the
 * Supervisor's bandit). A module graph has no reference pipeline: its status
 * shows how to declare one from its own agents.
 */

/** A phase as written in lab.json's training.phases (only the keys it sets). */
export interface PhaseExample {
  name: string;
  kind: 'gather' | 'sft' | 'grpo';
  agents?: string[];
  model?: string;
  samples?: number;
  minReward?: number;
}

/**
 * The phases of the lab: the declared ones; when none is declared, the
 * reference pipeline of the research-lab graph, and none for a module graph
 * (whose agents have no reference roles; see pipelineExample).
 */
export function pipelinePhases(config: LabConfig): PhaseConfig[] {
  if (config.training.phases.length > 0) return config.training.phases;
  if (!isResearchLabGraph(config)) return [];
  const present = (agents: readonly string[]): string[] => agents.filter((a) => config.agents[a]);
  const sharedModel = (agents: string[]): string | undefined => {
    const models = new Set(agents.map((a) => config.agents[a]!.model));
    return models.size === 1 ? [...models][0] : undefined;
  };
  const juniors = present(JUNIOR_AGENTS);
  const seniors = present(SENIOR_AGENTS);
  const phase = (p: Partial<PhaseConfig> & Pick<PhaseConfig, 'name' | 'kind'>): PhaseConfig => ({
    split: 'train',
    credit: 'equal',
    gamma: 0.9,
    hyperparameters: {},
    includeSimulated: false,
    includePenalised: false,
    ...p,
  });
  const withAgents = (agents: string[]): Partial<PhaseConfig> => (agents.length ? { agents, ...optional('model', sharedModel(agents)) } : {});
  return [
    phase({ name: 'gather', kind: 'gather', samples: config.training.groupSize }),
    phase({ name: 'sft-juniors', kind: 'sft', minReward: DEFAULT_SFT_MIN_REWARD, ...withAgents(juniors) }),
    phase({ name: 'grpo-seniors', kind: 'grpo', credit: 'equal', ...withAgents(seniors) }),
    phase({ name: 'bandit-supervisor', kind: 'bandit' }),
  ];
}

/**
 * A pipeline for a module graph, from its own agents (those marked
 * trainable, else all of lab.json's) and their models: gather, then SFT and
 * GRPO of each model's agents, each registering a new version of that model.
 */
export function pipelineExample(config: LabConfig): PhaseExample[] {
  const marked = trainableAgents(config);
  const agents = marked.length ? marked : Object.keys(config.agents);
  const byModel = new Map<string, string[]>();
  for (const a of agents) {
    const model = config.agents[a]!.model;
    byModel.set(model, [...(byModel.get(model) ?? []), a]);
  }
  const many = byModel.size > 1;
  const groups = [...byModel.entries()];
  return [
    { name: 'gather', kind: 'gather', samples: config.training.groupSize },
    ...groups.map(([model, group]): PhaseExample => ({ name: many ? `sft-${model}` : 'sft', kind: 'sft', agents: group, model, minReward: DEFAULT_SFT_MIN_REWARD })),
    ...groups.map(([model, group]): PhaseExample => ({ name: many ? `grpo-${model}` : 'grpo', kind: 'grpo', agents: group, model })),
  ];
}

/** The example as lab.json text to paste: the "training" key with one phase a line. */
export function pipelineExampleText(example: readonly PhaseExample[]): string {
  const line = (p: PhaseExample): string => `{ ${Object.entries(p).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v).replace(/","/g, '", "')}`).join(', ')} }`;
  return ['"training": {', '  "phases": [', example.map((p) => `    ${line(p)}`).join(',\n'), '  ]', '}'].join('\n');
}

/** One line: no pipeline is declared, and the phases to declare (a module graph without training.phases). */
export function undeclaredPipelineText(config: LabConfig): string {
  return `this lab runs its own graph (graph.kind "${config.graph.kind}") and lab.json declares no training.phases — add them to .rollout-lab/lab.json, e.g. "training": ${JSON.stringify({ phases: pipelineExample(config) })}`;
}

/** Finds a phase by name; a clear error lists the names there are. */
export function findPhase(config: LabConfig, name: string): PhaseConfig {
  const phases = pipelinePhases(config);
  const phase = phases.find((p) => p.name === name);
  if (!phase && phases.length === 0) throw new UsageError(`no pipeline phase "${name}": ${undeclaredPipelineText(config)}`);
  if (!phase) throw new UsageError(`no pipeline phase "${name}" — the phases are ${phases.map((p) => p.name).join(', ')} (training.phases in .rollout-lab/lab.json)`);
  return phase;
}

function optional<K extends string, V>(key: K, value: V | undefined): Partial<Record<K, V>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, V>);
}
