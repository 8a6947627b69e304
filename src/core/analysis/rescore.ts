import type { RolloutRecord } from '../store/types';
import { mean, median, spearman } from './statistics';
import { weightedReward } from '../reward/weighted';

/** Summary of final rewards (0..1). Empty input gives nulls and an all-zero histogram. */
export interface Distribution {
  count: number;
  mean: number | null;
  median: number | null;
  min: number | null;
  max: number | null;
  /** Counts in 10 equal bins over 0..1; 1.0 falls in the last bin, values outside 0..1 are clamped into the end bins. */
  histogram: number[];
}

/** Why a rollout kept its stored reward instead of being re-scored. */
export type KeptReason = 'no-criteria' | 'judge-failed';

export interface RescoreRow {
  rolloutId: string;
  taskId: string;
  /** Stored final reward (null when the rollout has none). */
  before: number | null;
  /** Reward under the new weights; equals `before` when `kept` is set. */
  after: number | null;
  /** 1 = best; rollouts with equal rewards share a rank; null without a reward. */
  rankBefore: number | null;
  rankAfter: number | null;
  /** Set when the stored reward was kept: no criterion scores (no output) or the judge failed (penalty scores). */
  kept: KeptReason | null;
}

export interface RescoreResult {
  /** In the order of the input rollouts. */
  rows: RescoreRow[];
  before: Distribution;
  after: Distribution;
  /** Spearman correlation of before vs after over rollouts with a reward; null with fewer than two or a constant side. */
  rankCorrelation: number | null;
  /** How the top `k` rollouts (by reward, best first) change. */
  changedTop: { k: number; before: string[]; after: string[]; entered: string[]; left: string[]; changed: boolean };
  rescored: number;
  kept: number;
  /** New criteria that some re-scored rollout has no stored score for: they count as 0 there. */
  missingCriteria: string[];
}

export function distribution(values: readonly number[]): Distribution {
  const histogram = new Array<number>(10).fill(0);
  for (const v of values) histogram[Math.min(9, Math.max(0, Math.floor(v * 10)))]! += 1;
  return {
    count: values.length,
    mean: mean(values),
    median: median(values),
    min: values.length ? Math.min(...values) : null,
    max: values.length ? Math.max(...values) : null,
    histogram,
  };
}

/** Competition ranks (1 = highest; ties share the best rank); null entries stay null. */
function ranks(values: readonly (number | null)[]): (number | null)[] {
  const present = values.filter((v): v is number => v !== null).sort((a, b) => b - a);
  return values.map((v) => {
    if (v === null) return null;
    let lo = 0;
    let hi = present.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (present[mid]! > v) lo = mid + 1;
      else hi = mid;
    }
    return lo + 1;
  });
}

function topIds(rows: readonly RescoreRow[], key: 'before' | 'after', k: number): string[] {
  return rows
    .map((r, i) => ({ r, i }))
    .filter(({ r }) => r[key] !== null)
    .sort((x, y) => y.r[key]! - x.r[key]! || x.i - y.i)
    .slice(0, k)
    .map(({ r }) => r.rolloutId);
}

/**
 * What-if re-scoring: each rollout's final reward recomputed from its STORED
 * per-criterion judge scores under `newCriteria` weights — no model calls, and
 * nothing is written. Rollouts without criterion scores (no final output) or
 * whose judge failed (every criterion holds the penalty score) keep their
 * stored reward and say so in `kept`.
 */
export function rescore(
  rollouts: readonly RolloutRecord[],
  newCriteria: Record<string, { weight: number }>,
  opts: { top?: number } = {},
): RescoreResult {
  const missing = new Set<string>();
  const partial = rollouts.map((r) => {
    const kept: KeptReason | null = r.judgeFailed ? 'judge-failed' : r.criteria ? null : 'no-criteria';
    if (kept === null) for (const name of Object.keys(newCriteria)) if (!(name in r.criteria!)) missing.add(name);
    const after = kept === null ? weightedReward(r.criteria!, newCriteria) : r.finalReward;
    return { rolloutId: r.id, taskId: r.taskId, before: r.finalReward, after, kept };
  });
  const rb = ranks(partial.map((r) => r.before));
  const ra = ranks(partial.map((r) => r.after));
  const rows: RescoreRow[] = partial.map((r, i) => ({
    rolloutId: r.rolloutId,
    taskId: r.taskId,
    before: r.before,
    after: r.after,
    rankBefore: rb[i]!,
    rankAfter: ra[i]!,
    kept: r.kept,
  }));
  const both = rows.filter((r) => r.before !== null && r.after !== null);
  const k = Math.max(0, opts.top ?? 10);
  const topBefore = topIds(rows, 'before', k);
  const topAfter = topIds(rows, 'after', k);
  const entered = topAfter.filter((id) => !topBefore.includes(id));
  const left = topBefore.filter((id) => !topAfter.includes(id));
  return {
    rows,
    before: distribution(rows.map((r) => r.before).filter((v): v is number => v !== null)),
    after: distribution(rows.map((r) => r.after).filter((v): v is number => v !== null)),
    rankCorrelation: spearman(both.map((r) => r.before!), both.map((r) => r.after!)),
    changedTop: {
      k,
      before: topBefore,
      after: topAfter,
      entered,
      left,
      changed: topBefore.length !== topAfter.length || topBefore.some((id, i) => topAfter[i] !== id),
    },
    rescored: rows.filter((r) => r.kept === null).length,
    kept: rows.filter((r) => r.kept !== null).length,
    missingCriteria: [...missing].sort(),
  };
}
