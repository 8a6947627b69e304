import type { LabConfig } from '../../config/schema';
import { UsageError } from '../../errors';
import { JUNIOR_AGENTS, SENIOR_AGENTS } from '../../graph/researchLab/outputs';

/*
 * What the training commands (export, pre-flight, the pipeline, the bandit,
 * prompt optimisation) use when they are not told: which agents, which
 * rollouts. Defaults come from the lab's own graph, never from the research
 * lab's roles unless the lab runs the research-lab graph.
 */

/** SFT learns from successes only: rollouts at or over this reward. */
export const DEFAULT_SFT_MIN_REWARD = 0.7;

/**
 * The split a phase's data comes from when none is named: train for the phases that learn from stored rollouts (as the
 * pipeline and export read them), every split for prompt optimisation, whose critic may read any low-reward rollout.
 */
export function defaultDataSplit(phase: 'sft' | 'grpo' | 'bandit' | 'apo'): 'train' | 'all' {
  return phase === 'apo' ? 'all' : 'train';
}

/** The rollouts of a split choice: 'all' filters nothing. */
export function splitScope(split: 'train' | 'val' | 'all'): { split?: 'train' | 'val' } {
  return split === 'all' ? {} : { split };
}

/** What the agents are trained with: supervised examples, RL transitions, the bandit's decisions, prompt optimisation. */
export type TrainingRole = 'sft' | 'rl' | 'bandit' | 'apo';

export function isResearchLabGraph(config: LabConfig): boolean {
  return config.graph.kind === 'research-lab';
}

/** Agents lab.json marks `"trainable": true`, in lab.json order. */
export function trainableAgents(config: LabConfig): string[] {
  return Object.entries(config.agents)
    .filter(([, a]) => a.trainable === true)
    .map(([name]) => name);
}

/** lab.json's agents first, in its order, then any others in the order given. */
function inLabOrder(config: LabConfig, agents: Iterable<string>): string[] {
  const set = new Set(agents);
  const declared = Object.keys(config.agents).filter((a) => set.has(a));
  return [...declared, ...[...set].filter((a) => !(a in config.agents))];
}

/**
 * The bandit learns a choice among candidates that only the built-in graph
 * records (its Supervisor picking one of the juniors' hypotheses); on any
 * other graph it has nothing to learn from, which is said plainly here rather
 * than left to show as an empty export.
 */
export function requireBanditGraph(config: LabConfig): void {
  if (isResearchLabGraph(config)) return;
  throw new UsageError(
    `the bandit learns the ${config.bandit.agent}'s choice among candidate hypotheses, which only the built-in research-lab graph records; this lab runs its own graph (graph.kind "${config.graph.kind}") — train its agents with sft or grpo, or optimise their prompts`,
  );
}

/**
 * The agents a training command works on when none are named. The
 * research-lab graph keeps its reference roles (SFT the juniors, RL the
 * seniors, the bandit the Supervisor, prompt optimisation every agent). Any
 * other graph: the agents lab.json marks trainable, else every agent that
 * made model calls in the rollouts in scope (`calledAgents`, read only when
 * needed).
 */
export function defaultTrainingAgents(config: LabConfig, role: TrainingRole, calledAgents: () => readonly string[]): string[] {
  if (role === 'bandit') {
    requireBanditGraph(config);
    return [config.bandit.agent];
  }
  if (isResearchLabGraph(config)) {
    const present = (names: readonly string[]): string[] => names.filter((n) => n in config.agents);
    if (role === 'sft') return present(JUNIOR_AGENTS);
    if (role === 'rl') return present(SENIOR_AGENTS);
    return Object.keys(config.agents);
  }
  const marked = trainableAgents(config);
  return marked.length ? marked : inLabOrder(config, calledAgents());
}
