import type { KeptReason, RescoreResult, RescoreRow } from '../../core/reward/rescore';
import type { RankMover, RankedRollout, WhatIfAnswer } from '../../shared/weightsProtocol';

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
