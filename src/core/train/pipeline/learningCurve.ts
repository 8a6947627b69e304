import type { LoadedConfig } from '../../config/loader';
import { readRegistry, type ModelRegistry, type ModelRegistryEntry } from '../../config/modelRegistry';
import type { LabConfig } from '../../config/schema';
import { UsageError } from '../../errors';
import { meanStat, REPORT_CONFIDENCE, type MeanStat } from '../../analysis/reportStats';
import { isScored, SCORED_STATUSES } from '../../reward/scoredRollouts';
import { clipInterval, mean, pairedTTest } from '../../analysis/statistics';
import type { TraceStore } from '../../store/traceStore';
import type { RolloutRecord, Split } from '../../store/types';
import { pipelinePhases } from '../phases/phases';
import { defaultTrainingAgents } from '../export/trainingDefaults';

/*
 * The learning curve: validation reward per version of a trained model. Each
 * evaluation on the validation split records, per rollout and agent, the
 * logical model and version the agent ran; grouping the rollouts by the
 * version the trained agent used gives one point per version (lab.json's own
 * settings are "base"), with its mean reward, a 95 % interval bounded to the
 * reward's 0..1 range (as the evaluation report's), and the paired change
 * against the previous point over the tasks and samples (same task ids,
 * sample numbers and run seeds) both evaluated.
 */

/** The label of lab.json's own settings of a model. */
export const BASE_LABEL = 'base';

export interface LearningCurveOptions {
  /** One agent's curve (its logical model in lab.json); default: every trained model's. */
  agent?: string;
  /** One logical model's curve, over the agents trained on it (else every agent that runs it). */
  model?: string;
  /** Default 'val'. */
  split?: Split;
  /** Leave out rollouts the simulated endpoint answered (by default they are counted and flagged per point). */
  excludeSimulated?: boolean;
}

/** The change of a point's mean reward from the previous evaluated point, over the pairs both evaluated. */
export interface PairedChange {
  /** Label of the point compared against. */
  versus: string;
  /** Task × sample × seed pairs both points evaluated. */
  pairs: number;
  /** Mean of (this − previous) over the pairs; null without pairs. */
  delta: number | null;
  /** 95 % interval of delta (paired t, within −1..1); null below two pairs. */
  ci: [number, number] | null;
  /** Two-sided paired t-test p-value; null below two pairs. */
  pValue: number | null;
}

export interface LearningCurvePoint {
  /** "base" for lab.json's own settings, else model@version. */
  label: string;
  /** The registered version; null for base. */
  version: string | null;
  /** The phase that produced the version (registry producedBy); null for base and for versions registered by hand. */
  producedBy: { phase: string; at: number; job?: string } | null;
  registeredAt: number | null;
  /** The version next rollouts use. */
  active: boolean;
  /** Scored rollouts of the split in which the trained agent ran this version. */
  rollouts: number;
  tasks: number;
  /** Of those, rollouts the simulated endpoint answered (0 when excludeSimulated). */
  simulated: number;
  runs: string[];
  /** Start of its first and last rollout; null when not evaluated yet. */
  firstAt: number | null;
  lastAt: number | null;
  /** Final reward: mean and 95 % interval within 0..1. */
  reward: MeanStat;
  /** Null for the first evaluated point and for a point not evaluated. */
  change: PairedChange | null;
}

export interface LearningCurveSeries {
  model: string;
  /** The trained agents whose model version groups the rollouts. */
  agents: string[];
  points: LearningCurvePoint[];
}

export interface LearningCurve {
  split: Split;
  confidence: number;
  series: LearningCurveSeries[];
  /** Scored rollouts of the split. */
  rollouts: number;
  /** Simulated rollouts left out (excludeSimulated). */
  simulatedLeftOut: number;
  /** What to do when a series has no evaluated point (or there is no series); null otherwise. */
  hint: string | null;
}

type CurveLab = Pick<LoadedConfig, 'config' | 'labDir' | 'baseModels'>;

/** lab.json's agents first, in its order, then the rest in the order given. */
function ordered(config: LabConfig, agents: Iterable<string>): string[] {
  const set = new Set(agents);
  return [...Object.keys(config.agents).filter((a) => set.has(a)), ...[...set].filter((a) => !(a in config.agents))];
}

/**
 * The trained agents of the lab grouped by the logical model a phase trains:
 * the sft and grpo phases of the pipeline (their agents, or the defaults the
 * pipeline uses), then any model the registry holds versions of (with the
 * agents that run it).
 */
export function trainedModels(lab: CurveLab, calledAgents: () => readonly string[], registry = readRegistry(lab.labDir)): Array<{ model: string; agents: string[] }> {
  const { config } = lab;
  const groups = new Map<string, Set<string>>();
  const add = (model: string, agents: readonly string[]): void => {
    const set = groups.get(model) ?? new Set<string>();
    for (const a of agents) set.add(a);
    groups.set(model, set);
  };
  for (const phase of pipelinePhases(config)) {
    if (phase.kind !== 'sft' && phase.kind !== 'grpo') continue;
    const agents = phase.agents ?? defaultTrainingAgents(config, phase.kind === 'sft' ? 'sft' : 'rl', calledAgents);
    if (phase.model) add(phase.model, agents);
    else for (const a of agents) if (config.agents[a]) add(config.agents[a]!.model, [a]);
  }
  for (const [model, entry] of Object.entries(registry.models)) {
    if (entry.versions.length && !groups.has(model)) add(model, agentsOfModel(config, model));
  }
  return [...groups.entries()].filter(([, a]) => a.size > 0).map(([model, agents]) => ({ model, agents: ordered(config, agents) }));
}

function agentsOfModel(config: LabConfig, model: string): string[] {
  return Object.entries(config.agents)
    .filter(([, a]) => a.model === model)
    .map(([name]) => name);
}

/** The series the options ask for; a clear error for an agent or model lab.json does not define. */
function seriesWanted(lab: CurveLab, opts: LearningCurveOptions, calledAgents: () => readonly string[], registry: ModelRegistry): Array<{ model: string; agents: string[] }> {
  const { config } = lab;
  if (opts.agent !== undefined) {
    const a = config.agents[opts.agent];
    if (!a) throw new UsageError(`--agent: no agent "${opts.agent}" under "agents" in .rollout-lab/lab.json — one of: ${Object.keys(config.agents).join(', ') || '(none)'}`);
    if (opts.model !== undefined && opts.model !== a.model) {
      throw new UsageError(`--agent ${opts.agent} runs model "${a.model}" (agents.${opts.agent}.model in .rollout-lab/lab.json), not "${opts.model}" — leave out --model or name that model`);
    }
    return [{ model: a.model, agents: [opts.agent] }];
  }
  if (opts.model !== undefined) {
    if (!lab.baseModels[opts.model] && !config.models[opts.model]) {
      throw new UsageError(`--model: no model "${opts.model}" under "models" in .rollout-lab/lab.json — one of: ${Object.keys(config.models).join(', ') || '(none)'}`);
    }
    const trained = trainedModels(lab, calledAgents, registry).find((g) => g.model === opts.model);
    return [{ model: opts.model, agents: trained?.agents ?? agentsOfModel(config, opts.model) }];
  }
  return trainedModels(lab, calledAgents, registry);
}

interface Group {
  version: string | null;
  rollouts: RolloutRecord[];
}

/**
 * One point per model version the lab's trained agents (or the agent or
 * model asked for) were evaluated with on the validation split, in registry
 * order (lab.json's own settings first, then versions as they were
 * registered, then versions the registry does not know in the order first
 * seen). Registered versions with no evaluation yet are points with no
 * rollouts, so the curve says what is left to evaluate.
 */
export function learningCurve(store: TraceStore, lab: CurveLab, opts: LearningCurveOptions = {}): LearningCurve {
  const split = opts.split ?? 'val';
  const all = store
    .listRollouts({ split, status: [...SCORED_STATUSES], superseded: false, sort: 'startTime', order: 'asc' })
    .rollouts.filter(isScored);
  const rollouts = opts.excludeSimulated ? all.filter((r) => !r.simulated) : all;
  const called = (): string[] => ordered(lab.config, new Set(all.flatMap((r) => r.agents.filter((a) => a.llmCalls > 0).map((a) => a.agent))));
  const registry = readRegistry(lab.labDir);
  const seeds = new Map<string, unknown>();
  const pairKey = (r: RolloutRecord): string => {
    if (!seeds.has(r.runId)) seeds.set(r.runId, store.getRun(r.runId)?.params?.seed ?? null);
    return JSON.stringify([r.taskId, r.sample, seeds.get(r.runId)]);
  };
  const series = seriesWanted(lab, opts, called, registry).map(({ model, agents }) =>
    curveSeries(model, agents, rollouts, registry.models[model], lab.baseModels[model]?.version ?? null, pairKey),
  );
  const evaluated = series.some((s) => s.points.some((p) => p.rollouts > 0));
  const where = split === 'val' ? 'validation' : split;
  const hint = !series.length
    ? 'no trained model yet: declare sft or grpo phases under training.phases in .rollout-lab/lab.json (or register a version with `rollout-lab pipeline register MODEL --version V`), then evaluate each version with `rollout-lab eval`'
    : !evaluated
      ? `no ${where} rollouts of ${series.map((s) => s.agents.join(', ')).join('; ')} yet — run \`rollout-lab eval\` (or Evaluate on Validation Set) after each training phase: each evaluation adds a point for the model version it ran`
      : null;
  return { split, confidence: REPORT_CONFIDENCE, series, rollouts: rollouts.length, simulatedLeftOut: all.length - rollouts.length, hint };
}

function curveSeries(
  model: string,
  agents: string[],
  rollouts: readonly RolloutRecord[],
  entry: ModelRegistryEntry | undefined,
  baseVersion: string | null,
  pairKey: (r: RolloutRecord) => string,
): LearningCurveSeries {
  const registered = new Map((entry?.versions ?? []).map((v) => [v.version, v]));
  // lab.json's own settings: no version, or lab.json's own version label when the registry does not define it.
  const versionKey = (v: string | null): string | null => (v === null || (v === baseVersion && !registered.has(v)) ? null : v);
  const groups = new Map<string | null, Group>();
  for (const r of rollouts) {
    // Several agents may run the model; the first trained agent in the rollout decides the version.
    const rec = agents.map((a) => r.agents.find((x) => x.agent === a)).find((x) => x !== undefined && x.model === model);
    if (!rec) continue;
    const key = versionKey(rec.modelVersion);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { version: key, rollouts: [] }));
    g.rollouts.push(r);
  }
  const order: Array<string | null> = [null, ...(entry?.versions ?? []).map((v) => v.version)];
  for (const key of groups.keys()) if (!order.includes(key)) order.push(key);
  const points: LearningCurvePoint[] = [];
  let previous: { label: string; byPair: Map<string, number> } | null = null;
  for (const key of order) {
    const g = groups.get(key);
    if (key === null && !g) continue;
    const rs = g?.rollouts ?? [];
    const v = key === null ? undefined : registered.get(key);
    const label = key === null ? BASE_LABEL : `${model}@${key}`;
    const rewards = rs.map((r) => r.finalReward!);
    const byPair = pairMeans(rs, pairKey);
    points.push({
      label,
      version: key,
      producedBy: v?.producedBy ?? null,
      registeredAt: v?.registeredAt ?? null,
      active: (entry?.active ?? null) === key,
      rollouts: rs.length,
      tasks: new Set(rs.map((r) => r.taskId)).size,
      simulated: rs.filter((r) => r.simulated).length,
      runs: [...new Set(rs.map((r) => r.runId))],
      firstAt: rs.length ? rs[0]!.startTime : null,
      lastAt: rs.length ? rs[rs.length - 1]!.startTime : null,
      reward: meanStat(rewards, [0, 1]),
      change: rs.length && previous ? pairedChange(previous.label, previous.byPair, byPair) : null,
    });
    if (rs.length) previous = { label, byPair };
  }
  return { model, agents, points };
}

/** Mean reward per task × sample × seed (a pair evaluated twice counts once, at its mean). */
function pairMeans(rs: readonly RolloutRecord[], pairKey: (r: RolloutRecord) => string): Map<string, number> {
  const acc = new Map<string, number[]>();
  for (const r of rs) {
    const k = pairKey(r);
    acc.set(k, [...(acc.get(k) ?? []), r.finalReward!]);
  }
  return new Map([...acc.entries()].map(([k, xs]) => [k, mean(xs)!]));
}

function pairedChange(versus: string, before: Map<string, number>, after: Map<string, number>): PairedChange {
  const a: number[] = [];
  const b: number[] = [];
  for (const [k, x] of before) {
    const y = after.get(k);
    if (y === undefined) continue;
    a.push(x);
    b.push(y);
  }
  const t = pairedTTest(a, b, REPORT_CONFIDENCE);
  const delta = a.length ? mean(b.map((y, i) => y - a[i]!))! : null;
  return { versus, pairs: a.length, delta, ci: t ? clipInterval(t.ci, [-1, 1]) : null, pValue: t ? t.pValue : null };
}

