import type { KeptReason, RescoreResult, RescoreRow } from '../../core/analysis/rescore';
import { bin, extent, thresholdFreedmanDiaconis, thresholdSturges, ticks } from 'd3';
import type { RankMover, RankedRollout, RewardBins, WhatIfAnswer } from '../../shared/weightsProtocol';

/** Rank movers the panel shows unless it asks for another number. */
export const DEFAULT_MOVERS = 15;
/** Rewards closer than this count as unchanged (floating-point noise of a re-weighted sum). */
const SAME = 1e-9;

/**
 * What the weight editor shows of a what-if re-score: the distributions, the
 * rank correlation, the top-k lists with task ids, and the rollouts whose rank
 * moved most. The full rows stay on the host: a store holds thousands.
 */
export function whatIfAnswer(result: RescoreResult, opts: { movers?: number } = {}): WhatIfAnswer {
  const byId = new Map(result.rows.map((r) => [r.rolloutId, r]));
  const ranked = (ids: readonly string[], key: 'before' | 'after'): RankedRollout[] =>
    ids.flatMap((id) => {
      const r = byId.get(id);
      const reward = r?.[key];
      const rank = key === 'before' ? r?.rankBefore : r?.rankAfter;
      return r && reward != null && rank != null ? [{ rolloutId: id, taskId: r.taskId, reward, rank }] : [];
    });
  const keptBy: Record<KeptReason, number> = { 'no-criteria': 0, 'judge-failed': 0 };
  for (const r of result.rows) if (r.kept) keptBy[r.kept] += 1;
  return {
    rollouts: result.rows.length,
    rescored: result.rescored,
    kept: result.kept,
    keptBy,
    changed: result.rows.filter((r) => rewardChanged(r)).length,
    before: result.before,
    after: result.after,
    bins: rewardBins(present(result.rows, 'before'), present(result.rows, 'after')),
    rankCorrelation: result.rankCorrelation,
    top: {
      k: result.changedTop.k,
      before: ranked(result.changedTop.before, 'before'),
      after: ranked(result.changedTop.after, 'after'),
      entered: result.changedTop.entered,
      left: result.changedTop.left,
      changed: result.changedTop.changed,
    },
    movers: rankMovers(result.rows, opts.movers ?? DEFAULT_MOVERS),
    missingCriteria: result.missingCriteria,
  };
}

function present(rows: readonly RescoreRow[], key: 'before' | 'after'): number[] {
  return rows.map((r) => r[key]).filter((v): v is number => v !== null && Number.isFinite(v));
}

/** Bins the histogram never goes below or above, however the data falls. */
export const MIN_BINS = 8;
export const MAX_BINS = 40;

/**
 * Histogram bins chosen from the rewards, both sides together: the
 * Freedman–Diaconis rule (Sturges' when the quartiles coincide), clamped to
 * 8–40 bins, on round edges over the rewards' range rather than ten fixed
 * tenths of 0–1 (which put every reward of a real lab in two or three bars).
 */
export function rewardBins(before: readonly number[], after: readonly number[]): RewardBins {
  const all = [...before, ...after];
  if (all.length === 0) return { edges: [0, 1], before: [0], after: [0] };
  let [lo, hi] = extent(all) as [number, number];
  if (hi - lo < 1e-9) {
    // One value: a bin of 0.1 around it.
    lo -= 0.05;
    hi += 0.05;
  }
  const fd = thresholdFreedmanDiaconis(all, lo, hi);
  const wanted = Math.min(MAX_BINS, Math.max(MIN_BINS, fd > 1 ? fd : thresholdSturges(all)));
  let edges = roundEdges(lo, hi, wanted);
  // d3's round steps (1, 2, 5 × 10^k) give about the count asked for: bring it back inside the bounds.
  if (edges.length - 1 > MAX_BINS) edges = roundEdges(lo, hi, Math.floor(wanted / 2));
  if (edges.length - 1 < MIN_BINS) edges = roundEdges(lo, hi, wanted * 2);
  const count = (values: readonly number[]): number[] => {
    const bins = bin()
      .domain([edges[0]!, edges.at(-1)!])
      .thresholds(edges.slice(1, -1))(values as number[]);
    return bins.map((b) => b.length);
  };
  return { edges, before: count(before), after: count(after) };
}

/** Round edges (d3's ticks) from at or below `lo` to above `hi`, about `n` bins. */
function roundEdges(lo: number, hi: number, n: number): number[] {
  let edges = ticks(lo, hi, n);
  const step = edges.length > 1 ? edges[1]! - edges[0]! : (hi - lo) / n;
  if (edges.length === 0 || edges[0]! > lo) edges = [round(edges.length ? edges[0]! - step : lo), ...edges];
  while (edges.at(-1)! <= hi) edges.push(round(edges.at(-1)! + step));
  return edges;
}

/** Edges as d3 writes its ticks: no 0.30000000000000004. */
function round(v: number): number {
  return Number(v.toPrecision(12));
}

/** Whether a re-scored rollout's reward differs from its stored one. */
export function rewardChanged(r: RescoreRow): boolean {
  return r.kept === null && r.before !== null && r.after !== null && Math.abs(r.after - r.before) > SAME;
}

/** Rollouts whose rank changed, the largest moves first (ties: the better new rank first). */
export function rankMovers(rows: readonly RescoreRow[], limit: number): RankMover[] {
  const out: RankMover[] = [];
  for (const r of rows) {
    if (r.before === null || r.after === null || r.rankBefore === null || r.rankAfter === null || r.rankBefore === r.rankAfter) continue;
    out.push({ rolloutId: r.rolloutId, taskId: r.taskId, before: r.before, after: r.after, rankBefore: r.rankBefore, rankAfter: r.rankAfter, moved: r.rankBefore - r.rankAfter });
  }
  out.sort((a, b) => Math.abs(b.moved) - Math.abs(a.moved) || a.rankAfter - b.rankAfter || a.rolloutId.localeCompare(b.rolloutId));
  return out.slice(0, Math.max(0, limit));
}
