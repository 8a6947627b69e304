import type { DecisionLabels } from '../data/decisionAlignment';
import type { RolloutRecord } from '../store/types';
import type { RewardSetup } from '../reward/rewardSetup';
import { isScored } from '../reward/scoredRollouts';
import { computeMetrics, type EvalMetrics } from './metrics';
import { meanStat, rateStat, type MeanStat, type RateStat } from './reportStats';
import { UNIT_RANGE, finiteNumbers } from './statistics';

export interface EvaluationTable {
  /** What computeMetrics gives (the CLI's and Output's table), for the same rollouts; its `shape` says which rows the lab has. */
  metrics: EvalMetrics;
  /** Succeeded of finished rollouts. */
  executionSuccess: RateStat;
  /** Finished rollouts whose graph gave no final output (failed, but scored). */
  noOutput: RateStat;
  /** Over every finished rollout with a reward, no-output ones included. */
  finalReward: MeanStat;
  /** Null when alignment does not apply (no yes/no/maybe labels, or no GO / NO-GO-like decisions). */
  decisionAlignment: RateStat | null;
  maybe: EvalMetrics['maybe'];
  turns: MeanStat;
  /** Judged rollouts whose judge answer could not be used (penalty applied); null without a judge. */
  judgeFailures: RateStat | null;
  /** Empty without a judge. */
  judge: Array<{ criterion: string; stat: MeanStat }>;
  /** Each part of the custom reward's breakdown; empty without one. */
  customReward: Array<{ part: string; stat: MeanStat }>;
}

/** `done`: succeeded and failed rollouts (cancelled ones are not finished). */
export function evaluationTable(done: readonly RolloutRecord[], setup: RewardSetup, labels?: DecisionLabels): EvaluationTable {
  // computeMetrics is the definition of the table; the intervals are computed on the very sets it uses.
  const metrics = computeMetrics(done, setup, labels);
  const { shape } = metrics;
  const scored = done.filter(isScored);
  const judged = done.filter((r) => r.criteria !== null);
  const clean = judged.filter((r) => !r.judgeFailed);
  return {
    metrics,
    executionSuccess: rateStat(metrics.succeeded, metrics.rollouts),
    noOutput: rateStat(metrics.noOutput, metrics.rollouts),
    finalReward: meanStat(finiteNumbers(scored.map((r) => r.finalReward)), UNIT_RANGE),
    decisionAlignment: shape.alignment ? rateStat(metrics.alignedCount, metrics.alignmentDenominator) : null,
    maybe: metrics.maybe,
    turns: meanStat(finiteNumbers(scored.map((r) => r.turns)), [0, Infinity]),
    judgeFailures: shape.judge ? rateStat(metrics.judgeFailures, judged.length) : null,
    judge: Object.keys(metrics.judge).map((c) => ({ criterion: c, stat: meanStat(finiteNumbers(clean.map((r) => r.criteria![c])), UNIT_RANGE) })),
    customReward: Object.keys(metrics.customReward).map((part) => ({ part, stat: meanStat(finiteNumbers(done.map((r) => r.rewardBreakdown?.[part])), UNIT_RANGE) })),
  };
}
