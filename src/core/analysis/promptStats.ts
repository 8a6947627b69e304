import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { RESEARCH_LAB_DECISIONS, alignmentApplies, decisionAlignment, expertLabel, type DecisionLabels } from '../data/decisionAlignment';
import { SCORED_STATUSES, isScored } from '../reward/scoredRollouts';
import { rewardUnder } from '../reward/rewardDefinition';
import type { RewardConfig } from '../config/schema';
import { boundedMeanInterval, mean, sparkline, welchTTest } from './statistics';

/** Reward statistics of one prompt version of one agent, over its scored rollouts (isScored: those with a reward). */
export interface PromptVersionStats {
  agent: string;
  /** Prompt content hash. */
  version: string;
  /** The version's text, when the store kept it. */
  text?: string;
  firstSeen: number;
  rollouts: number;
  meanReward: number | null;
  /** 95% interval of the mean final reward, inside 0..1 (boundedMeanInterval); null below two rewards that are not all 0 or 1. */
  ci: [number, number] | null;
  /** GO↔yes / NO-GO↔no in percent over rollouts whose task is labelled yes or no; null when none is, or when the graph emits no GO / NO-GO-like decision. */
  decisionAlignment: number | null;
  /** Mean judge score per criterion over rollouts whose judge did not fail; null where no rollout has the criterion. */
  criteria: Record<string, number | null>;
  /** End (or start) time in ms of the latest rollout; null when the version has none. */
  lastRun: number | null;
  /** Final rewards of the latest rollouts, oldest first, on a 0..1 scale. */
  sparkline: string;
  /** Final rewards, oldest first (for significance tests). */
  rewards: number[];
  /**
   * What the rewards above are: 'current' — each under the lab's current reward
   * (re-scored on the fly from the stored judge scores where they were scored
   * under other weights); 'stored' — as stored, since they cannot be re-scored
   * (a custom reward, a criterion without a score), or no current reward was given.
   */
  rewardBasis: 'current' | 'stored';
  /** How many rewards the on-the-fly re-score changed. */
  rescored: number;
  /** With basis 'stored': the reward definitions (rewardDefinitionKey) the rollouts were scored under, where recorded. */
  rewardDefinitions: string[];
}

export interface VersionComparison {
  version: string;
  /** The version before it in first-seen order; null for the first. */
  previous: string | null;
  /** meanReward − previous meanReward. */
  delta: number | null;
  /** Welch's two-sided p-value; null when either version has fewer than two rewards. */
  pValue: number | null;
  significant: boolean;
  /** Why the two were not compared (their rewards come from different reward definitions); null when they were. */
  notComparable: string | null;
}

/** What a comparison says of two versions whose rewards were scored under different reward definitions. */
export const DIFFERENT_REWARDS = 'scored under different weights — re-score to compare';

export function statsForRollouts(
  agent: string,
  version: string,
  rollouts: readonly RolloutRecord[],
  opts: { text?: string; firstSeen?: number; sparklineWidth?: number; criteria?: readonly string[]; labels?: DecisionLabels; reward?: RewardConfig } = {},
): PromptVersionStats {
  const labels = opts.labels ?? RESEARCH_LAB_DECISIONS;
  const ordered = rollouts.filter(isScored).sort((a, b) => a.startTime - b.startTime);
  // Rewards compare only under one definition: under the current one, where every rollout's stored scores allow it.
  const current = opts.reward ? ordered.map((r) => rewardUnder(r, opts.reward!)) : [];
  const underCurrent = opts.reward !== undefined && current.every((x) => x !== null);
  const rewards = underCurrent ? (current as number[]) : ordered.map((r) => r.finalReward!);
  const rescored = underCurrent ? ordered.filter((r, i) => Math.abs(r.finalReward! - rewards[i]!) > 1e-12).length : 0;
  const applies = alignmentApplies(ordered, labels);
  let aligned = 0;
  let denom = 0;
  for (const r of applies ? ordered : []) {
    const exp = expertLabel(r.expectedDecision);
    if (exp !== 'yes' && exp !== 'no') continue;
    denom++;
    if (decisionAlignment(r.decision, r.expectedDecision, labels) === 'aligned') aligned++;
  }
  const scored = ordered.filter((r) => r.criteria && !r.judgeFailed);
  const names = new Set(opts.criteria ?? []);
  if (!opts.criteria) for (const r of scored) for (const k of Object.keys(r.criteria!)) names.add(k);
  const criteria: Record<string, number | null> = {};
  for (const name of [...names].sort()) {
    criteria[name] = mean(scored.map((r) => r.criteria![name]).filter((x): x is number => typeof x === 'number'));
  }
  let lastRun: number | null = null;
  for (const r of ordered) lastRun = Math.max(lastRun ?? -Infinity, r.endTime ?? r.startTime);
  return {
    agent,
    version,
    ...(opts.text !== undefined ? { text: opts.text } : {}),
    firstSeen: opts.firstSeen ?? ordered[0]?.startTime ?? 0,
    rollouts: ordered.length,
    meanReward: mean(rewards),
    ci: boundedMeanInterval(rewards),
    decisionAlignment: denom ? (100 * aligned) / denom : null,
    criteria,
    lastRun,
    sparkline: sparkline(rewards, { width: opts.sparklineWidth ?? 20, min: 0, max: 1 }),
    rewards,
    rewardBasis: underCurrent ? 'current' : 'stored',
    rescored,
    rewardDefinitions: underCurrent ? [] : [...new Set(ordered.flatMap((r) => (r.rewardDefinition ? [r.rewardDefinition] : [])))].sort(),
  };
}

/**
 * Reward statistics of each prompt version `agent` has run, oldest first (by
 * when the version was first seen), over scored rollouts in which this agent
 * ran that version. Versions the store knows with no scored rollout yet are
 * included with `rollouts: 0`.
 */
export function promptVersionStats(
  store: TraceStore,
  agent: string,
  opts: { sparklineWidth?: number; criteria?: readonly string[]; labels?: DecisionLabels; reward?: RewardConfig } = {},
): PromptVersionStats[] {
  return store.listPromptVersions(agent).map((v) => {
    const { rollouts } = store.listRollouts({ agent, promptVersion: v.hash, status: [...SCORED_STATUSES], superseded: false, sort: 'startTime', order: 'asc' });
    return statsForRollouts(agent, v.hash, rollouts, { ...opts, text: v.text, firstSeen: v.firstSeen });
  });
}

/**
 * Whether two versions' rewards come from one reward definition: both under
 * the current one, or both as stored under the same recorded one (rollouts
 * from before definitions were recorded say nothing against it).
 */
function sameReward(a: PromptVersionStats, b: PromptVersionStats): boolean {
  if (a.rewards.length === 0 || b.rewards.length === 0) return true;
  if (a.rewardBasis !== b.rewardBasis) return false;
  return a.rewardBasis === 'current' || new Set([...a.rewardDefinitions, ...b.rewardDefinitions]).size <= 1;
}

/** Each version against the one before it (in the order given): change of mean reward and Welch's test, only under one reward definition. */
export function compareToPrevious(stats: readonly PromptVersionStats[], alpha = 0.05): VersionComparison[] {
  return stats.map((s, i) => {
    const prev = i > 0 ? stats[i - 1]! : null;
    if (!prev) return { version: s.version, previous: null, delta: null, pValue: null, significant: false, notComparable: null };
    if (!sameReward(prev, s)) return { version: s.version, previous: prev.version, delta: null, pValue: null, significant: false, notComparable: DIFFERENT_REWARDS };
    const delta = s.meanReward !== null && prev.meanReward !== null ? s.meanReward - prev.meanReward : null;
    const test = welchTTest(prev.rewards, s.rewards);
    const pValue = test ? test.pValue : null;
    return { version: s.version, previous: prev.version, delta, pValue, significant: pValue !== null && pValue < alpha, notComparable: null };
  });
}

/** The version with the highest mean reward among those with at least `minRollouts` rewards (earliest wins ties); null if none qualifies. */
export function bestVersion(stats: readonly PromptVersionStats[], minRollouts = 3): PromptVersionStats | null {
  let best: PromptVersionStats | null = null;
  for (const s of stats) {
    if (s.meanReward === null || s.rewards.length < minRollouts) continue;
    if (!best || s.meanReward > best.meanReward!) best = s;
  }
  return best;
}
