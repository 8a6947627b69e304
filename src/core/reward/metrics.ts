import type { RolloutRecord } from '../store/types';
import { decisionAlignment } from './alignment';

/** The evaluation table of the reference study. Rates are percentages; rewards and judge scores are 0..1. */
export interface EvalMetrics {
  rollouts: number;
  succeeded: number;
  failed: number;
  judgeFailures: number;
  /** Rollouts that ran to the end of the graph without an execution error, in percent. */
  executionSuccessRate: number;
  /** Mean final reward over rollouts that finished with a reward (null when none did). */
  averageFinalReward: number | null;
  /** GO↔yes / NO-GO↔no over rollouts whose task is labelled yes or no, in percent (a missing decision counts as not aligned). */
  decisionAlignment: number | null;
  alignedCount: number;
  alignmentDenominator: number;
  /** Tasks labelled "maybe" are reported apart: how often the graph said GO or NO-GO on them. */
  maybe: { rollouts: number; go: number; noGo: number; undecided: number };
  averageTurnCount: number | null;
  judge: Record<string, number | null>;
}

function mean(xs: number[]): number | null {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

export function computeMetrics(rollouts: readonly RolloutRecord[], criteria: readonly string[]): EvalMetrics {
  const done = rollouts.filter((r) => r.status === 'succeeded' || r.status === 'failed');
  const ok = done.filter((r) => r.status === 'succeeded');
  let aligned = 0;
  let denom = 0;
  const maybe = { rollouts: 0, go: 0, noGo: 0, undecided: 0 };
  for (const r of ok) {
    const a = decisionAlignment(r.decision, r.expectedDecision);
    if (a === 'maybe') {
      maybe.rollouts++;
      const d = (r.decision ?? '').toUpperCase();
      if (d === 'GO') maybe.go++;
      else if (d === 'NO-GO') maybe.noGo++;
      else maybe.undecided++;
      continue;
    }
    const exp = r.expectedDecision?.toLowerCase();
    if (exp !== 'yes' && exp !== 'no') continue;
    denom++;
    if (a === 'aligned') aligned++;
  }
  const judge: Record<string, number | null> = {};
  const scored = ok.filter((r) => r.criteria && !r.judgeFailed);
  for (const c of criteria) judge[c] = mean(scored.map((r) => r.criteria![c]).filter((x): x is number => typeof x === 'number'));
  return {
    rollouts: done.length,
    succeeded: ok.length,
    failed: done.length - ok.length,
    judgeFailures: ok.filter((r) => r.judgeFailed).length,
    executionSuccessRate: done.length ? (100 * ok.length) / done.length : 0,
    averageFinalReward: mean(ok.map((r) => r.finalReward).filter((x): x is number => typeof x === 'number')),
    decisionAlignment: denom ? (100 * aligned) / denom : null,
    alignedCount: aligned,
    alignmentDenominator: denom,
    maybe,
    averageTurnCount: mean(ok.map((r) => r.turns).filter((x): x is number => typeof x === 'number')),
    judge,
  };
}
