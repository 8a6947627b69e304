import type { FailureKind } from '../store/failureKinds';
import type { RolloutRecord } from '../store/types';
import { RESEARCH_LAB_DECISIONS, alignmentApplies, decisionAlignment, decisionLabel, decisionSpelling, expertLabel, type DecisionLabels } from '../data/decisionAlignment';
import { classifyFailure } from '../reward/failureClassification';
import type { RewardSetup } from '../reward/rewardSetup';
import { isScored } from '../reward/scoredRollouts';
import { finiteNumbers, mean } from './statistics';

/** Which parts of the evaluation table a lab has: judge rows only with a judge, alignment only where it means something. */
export interface EvalShape {
  /** The lab's reward runs the judge, or some rollout carries judge scores (a custom reward that asked for them). */
  judge: boolean;
  /** Tasks labelled yes / no / maybe and GO / NO-GO-like decisions. */
  alignment: boolean;
  /** A custom reward scores the rollouts (its breakdown has rows of its own). */
  customReward: boolean;
}

/**
 * The evaluation table of the reference study, cut to the lab at hand. Rates
 * are percentages; rewards and judge scores are 0..1.
 */
export interface EvalMetrics {
  /** Finished rollouts: succeeded and failed (cancelled ones are left out). */
  rollouts: number;
  succeeded: number;
  failed: number;
  /** Failed rollouts whose graph finished without a final output (truncated ones included); they have a reward. */
  noOutput: number;
  /** Of those, the ones whose missing answer was cut at max_tokens. */
  truncated: number;
  /** Failed rollouts that threw (endpoint, graph error, interrupted): no reward, counted apart from the average. */
  crashed: number;
  /** Failed rollouts by category. */
  failures: Partial<Record<FailureKind, number>>;
  judgeFailures: number;
  /** Rollouts that finished with a final output and no execution error, of the finished ones, in percent. */
  executionSuccessRate: number;
  /** Mean final reward over every finished rollout that has one (no-output rollouts included); null when none has. */
  averageFinalReward: number | null;
  /** How many rollouts that mean is over. */
  rewarded: number;
  shape: EvalShape;
  /** GO↔yes / NO-GO↔no over scored rollouts whose task is labelled yes or no, in percent (a missing decision counts as not aligned); null when alignment does not apply. */
  decisionAlignment: number | null;
  alignedCount: number;
  alignmentDenominator: number;
  /** Tasks labelled "maybe" are reported apart: how often the graph said GO or NO-GO on them. */
  maybe: { rollouts: number; go: number; noGo: number; undecided: number };
  /** The decisions the graph emitted over scored rollouts, most frequent first (GO / NO-GO spellings merged when alignment applies); null: none. */
  decisions: Array<{ decision: string | null; count: number }>;
  averageTurnCount: number | null;
  /** Mean judge score per criterion over judged rollouts; empty without a judge. */
  judge: Record<string, number | null>;
  /** Mean of each part of the custom reward's breakdown over the rollouts that have it; empty without one. */
  customReward: Record<string, number | null>;
}


/** A failed rollout's category: recorded by the runner, or (rows from before it did) read from its error. */
export function failureOf(r: Pick<RolloutRecord, 'status' | 'failure' | 'error'>): FailureKind | null {
  if (r.status === 'succeeded' || r.status === 'running') return null;
  return r.failure ?? (r.status === 'cancelled' ? 'cancelled' : classifyFailure(r.error));
}

/** No final output: the graph finished (the runner scored the rollout) but gave nothing to score. */
function isNoOutput(r: Pick<RolloutRecord, 'status' | 'failure'>): boolean {
  return r.status === 'failed' && (r.failure === 'no_output' || r.failure === 'truncated');
}

/** What the lab has, from its reward setup and what the rollouts carry. */
function evalShape(rollouts: readonly RolloutRecord[], setup: RewardSetup, labels: DecisionLabels): EvalShape {
  return {
    judge: setup.judge || rollouts.some((r) => r.criteria !== null && Object.keys(r.criteria).length > 0),
    alignment: alignmentApplies(rollouts.filter(isScored), labels),
    customReward: setup.custom || rollouts.some((r) => r.rewardBreakdown && Object.keys(r.rewardBreakdown).length > 0),
  };
}

/** The row a decision is counted under: its own text, with the decisions that stand for one answer ("no go", "NOGO", "NO-GO") merged under the first the mapping names when alignment reads them. */
export function decisionKey(decision: string | null, alignment: boolean, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): string | null {
  const d = decision?.trim();
  if (!d) return null;
  const label = alignment ? decisionLabel(d, labels) : null;
  if (label === null) return d;
  return Object.entries(labels).find(([, v]) => v === label)?.[0] ?? decisionSpelling(d);
}

/** The judge criteria a table shows: the configured ones, then any other the rollouts were scored on. */
export function judgeCriteria(rollouts: readonly RolloutRecord[], setup: RewardSetup): string[] {
  const seen = new Set<string>();
  for (const r of rollouts) for (const k of Object.keys(r.criteria ?? {})) if (!setup.criteria.includes(k)) seen.add(k);
  return [...setup.criteria, ...[...seen].sort()];
}

/** The parts of the custom reward's breakdown, in the order first seen. */
export function breakdownKeys(rollouts: readonly RolloutRecord[]): string[] {
  const keys = new Set<string>();
  for (const r of rollouts) for (const k of Object.keys(r.rewardBreakdown ?? {})) keys.add(k);
  return [...keys];
}

/** `labels`: the decision mapping the lab's graph declares (decisionLabelsOf). */
export function computeMetrics(rollouts: readonly RolloutRecord[], setup: RewardSetup, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): EvalMetrics {
  const done = rollouts.filter((r) => r.status === 'succeeded' || r.status === 'failed');
  const ok = done.filter((r) => r.status === 'succeeded');
  const failed = done.filter((r) => r.status === 'failed');
  // Reward, alignment, decisions and turns are over the rollouts the graph finished: they all have a reward.
  const scored = done.filter(isScored);
  const shape = evalShape(done, setup, labels);

  let aligned = 0;
  let denom = 0;
  const maybe = { rollouts: 0, go: 0, noGo: 0, undecided: 0 };
  if (shape.alignment) {
    for (const r of scored) {
      const a = decisionAlignment(r.decision, r.expectedDecision, labels);
      if (a === 'maybe') {
        maybe.rollouts++;
        const d = decisionLabel(r.decision, labels);
        if (d === 'yes') maybe.go++;
        else if (d === 'no') maybe.noGo++;
        else maybe.undecided++;
        continue;
      }
      const exp = expertLabel(r.expectedDecision);
      if (exp !== 'yes' && exp !== 'no') continue;
      denom++;
      if (a === 'aligned') aligned++;
    }
  }

  const decisionCounts = new Map<string | null, number>();
  for (const r of scored) {
    const k = decisionKey(r.decision, shape.alignment, labels);
    decisionCounts.set(k, (decisionCounts.get(k) ?? 0) + 1);
  }

  const failures: Partial<Record<FailureKind, number>> = {};
  for (const r of failed) {
    const k = failureOf(r) ?? 'other';
    failures[k] = (failures[k] ?? 0) + 1;
  }

  const judge: Record<string, number | null> = {};
  if (shape.judge) {
    const judged = done.filter((r) => r.criteria && !r.judgeFailed);
    for (const c of judgeCriteria(done, setup)) judge[c] = mean(finiteNumbers(judged.map((r) => r.criteria![c])));
  }
  const customReward: Record<string, number | null> = {};
  for (const k of breakdownKeys(done)) customReward[k] = mean(finiteNumbers(done.map((r) => r.rewardBreakdown?.[k])));

  const rewards = finiteNumbers(scored.map((r) => r.finalReward));
  return {
    rollouts: done.length,
    succeeded: ok.length,
    failed: failed.length,
    noOutput: failed.filter(isNoOutput).length,
    truncated: failed.filter((r) => r.failure === 'truncated').length,
    crashed: failed.filter((r) => !isScored(r)).length,
    failures,
    judgeFailures: done.filter((r) => r.judgeFailed).length,
    executionSuccessRate: done.length ? (100 * ok.length) / done.length : 0,
    averageFinalReward: mean(rewards),
    rewarded: rewards.length,
    shape,
    decisionAlignment: shape.alignment && denom ? (100 * aligned) / denom : null,
    alignedCount: aligned,
    alignmentDenominator: denom,
    maybe,
    decisions: [...decisionCounts].map(([decision, count]) => ({ decision, count })).sort((a, b) => b.count - a.count || (a.decision ?? '\uffff').localeCompare(b.decision ?? '\uffff')),
    averageTurnCount: mean(finiteNumbers(scored.map((r) => r.turns))),
    judge,
    customReward,
  };
}
