/**
 * Pre-flight checks: before a training phase spends GPU time, look at the
 * stored rollouts it would learn from and say, with counts and the offending
 * rollout ids, what would make the phase useless or wrong — simulated
 * rollouts, failed rollouts, missing rewards, GRPO groups too small or with no reward spread, missing
 * behaviour logprobs, prompts longer than the trainer takes, Supervisor
 * decisions that cannot be replayed, too little data to optimise a prompt.
 *
 * It only reads: the rollout rows from the catalog, and the spans one rollout
 * at a time (never all of them at once), so it stays bounded on large stores.
 */
import { resolve } from 'node:path';
import type { LabConfig } from '../../config/schema';
import { loadDataset, splitTasks } from '../../data/dataset';
import type { TraceStore } from '../../store/traceStore';
import { agentsWithModelCalls, type RolloutScope } from './adapters/rolloutSelection';
import { commonChecks, simulatedCheck } from './commonChecks';
import { apoChecks, banditChecks, grpoChecks, sftChecks } from './phaseChecks';
import { PreflightContext, type CheckedOptions } from './preflightContext';
import type { PreflightOptions, PreflightPhase, PreflightReport } from './preflightTypes';
import { defaultDataSplit, defaultTrainingAgents, requireBanditGraph, splitScope, type TrainingRole } from './trainingDefaults';

// What callers of the checks name: the report's types and its text.

const ROLE: Record<PreflightPhase, TrainingRole> = { sft: 'sft', grpo: 'rl', bandit: 'bandit', apo: 'apo' };

/**
 * The agents a phase trains when none are given: on the research-lab graph
 * the juniors (sft), the seniors (grpo), the bandit's decision agent, every
 * agent (apo); on a module graph the agents lab.json marks trainable, else
 * every agent that made model calls in the rollouts in scope.
 */
export function defaultPreflightAgents(store: TraceStore, config: LabConfig, phase: PreflightPhase, scope: RolloutScope = {}): string[] {
  return defaultTrainingAgents(config, ROLE[phase], () => agentsWithModelCalls(store, scope));
}

/** Runs the checks of one phase over the stored rollouts. */
export function runPreflight(store: TraceStore, config: LabConfig, options: PreflightOptions): PreflightReport {
  if (options.phase === 'bandit') requireBanditGraph(config);
  const { split, ...rest } = options;
  const opts: CheckedOptions = { ...rest, ...splitScope(split ?? defaultDataSplit(options.phase)) };
  const scope: RolloutScope = { ...(opts.split ? { split: opts.split } : {}), includeSimulated: opts.includeSimulated === true };
  const agents = opts.agents?.length ? [...new Set(opts.agents)] : defaultPreflightAgents(store, config, opts.phase, scope);
  const ctx = new PreflightContext(store, config, opts, agents);
  simulatedCheck(ctx);
  commonChecks(ctx);
  switch (opts.phase) {
    case 'sft':
      sftChecks(ctx);
      break;
    case 'grpo':
      grpoChecks(ctx);
      break;
    case 'bandit':
      banditChecks(ctx);
      break;
    case 'apo':
      apoChecks(ctx);
      break;
  }
  return { phase: opts.phase, ok: !ctx.checks.some((c) => c.severity === 'error'), checks: ctx.checks, counts: ctx.counts };
}

/**
 * The validation tasks of the dataset the lab runs by default (runner.dataset,
 * or the only one); undefined when lab.json names none or it cannot be read —
 * the checks then count the val tasks seen in the store.
 */
export async function configuredValTasks(workspaceDir: string, config: LabConfig): Promise<number | undefined> {
  const key = config.runner.dataset ?? Object.keys(config.datasets)[0];
  const ds = key === undefined ? undefined : config.datasets[key];
  if (!ds) return undefined;
  try {
    const tasks = await loadDataset(resolve(workspaceDir, ds.path), ds.format, { fields: ds.fields, maxRowBytes: ds.maxRowBytes });
    return splitTasks(tasks, ds.trainFraction).val.length;
  } catch {
    return undefined;
  }
}
