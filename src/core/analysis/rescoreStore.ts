import { randomBytes } from 'node:crypto';
import { ConfigError } from '../errors';
import type { TraceStore } from '../store/traceStore';
import type { RescoreRecord, RolloutQuery } from '../store/types';
import { rescore, type RescoreResult } from './rescore';
import { SCORED_STATUSES, isScored } from '../reward/scoredRollouts';

/**
 * The explicit re-score: scored rollouts (isScored) matching `query` get a new final
 * reward computed from their stored criterion scores under `criteria` (no
 * model calls), written to the store as one re-score that keeps every earlier
 * reward. Rollouts that keep their reward (no criterion scores, judge failed)
 * are left out of what is written. With `dryRun`, or when no rollout can be
 * re-scored, nothing is written and `rescoreId` is null.
 */
export function rescoreStoredRollouts(
  store: TraceStore,
  criteria: Record<string, { weight: number }>,
  opts: { query?: RolloutQuery; rolloutIds?: readonly string[]; dryRun?: boolean; note?: string; top?: number } = {},
): { result: RescoreResult; rescoreId: string | null } {
  const weights = weightsOf(criteria);
  if (!opts.dryRun && !Object.values(weights).some((c) => c.weight > 0)) {
    throw new ConfigError('re-scoring needs at least one criterion with a weight above 0; set one under "reward.criteria" in .rollout-lab/lab.json');
  }
  // Only rollouts with a reward have one to replace; the caller's status filter cannot widen that. Those
  // without output have no judge scores: they keep their reward and stay in the distributions, as in every mean.
  const only = opts.rolloutIds ? new Set(opts.rolloutIds) : null;
  const rollouts = store.listRollouts({ ...opts.query, status: [...SCORED_STATUSES] }).rollouts.filter((r) => isScored(r) && (!only || only.has(r.id)));
  const result = rescore(rollouts, weights, { top: opts.top });
  if (opts.dryRun) return { result, rescoreId: null };
  const rewards = result.rows
    .filter((r) => r.kept === null && r.after !== null)
    .map((r) => ({ rolloutId: r.rolloutId, before: r.before, after: r.after! }));
  if (!rewards.length) return { result, rescoreId: null };
  const record: RescoreRecord = { id: newRescoreId(), at: Date.now(), criteria: weights, rewards };
  if (opts.note !== undefined && opts.note.trim() !== '') record.note = opts.note.trim();
  store.applyRescore(record);
  return { result, rescoreId: record.id };
}

/** 'rs_' and 12 hex digits: unique enough across processes, short enough to type. */
export function newRescoreId(): string {
  return `rs_${randomBytes(6).toString('hex')}`;
}

/** Only the weights (a config's criteria also carry descriptions), checked: what is stored must make sense later. */
function weightsOf(criteria: Record<string, { weight: number }>): Record<string, { weight: number }> {
  const out: Record<string, { weight: number }> = {};
  for (const [name, c] of Object.entries(criteria)) {
    if (typeof c?.weight !== 'number' || !Number.isFinite(c.weight) || c.weight < 0) {
      throw new ConfigError(`criterion "${name}" has weight ${String(c?.weight)}; a weight must be a number of 0 or more (fix "reward.criteria" in .rollout-lab/lab.json)`);
    }
    out[name] = { weight: c.weight };
  }
  return out;
}
