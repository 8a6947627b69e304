import type { RolloutQuery, RolloutStatus, Split } from '../../core/store/types';

/** What the rollouts view shows; empty fields filter nothing. */
export interface RolloutFilter {
  status?: RolloutStatus[];
  minReward?: number;
  maxReward?: number;
  split?: Split;
}

export const ROLLOUT_STATUSES: readonly RolloutStatus[] = ['succeeded', 'failed', 'running', 'cancelled'];

export function isEmptyFilter(f: RolloutFilter): boolean {
  return !f.status?.length && f.minReward === undefined && f.maxReward === undefined && f.split === undefined;
}

/** The store query for one run's page of rollouts under a filter. */
export function filterToQuery(f: RolloutFilter, page: { runId: string; limit: number; offset?: number }): RolloutQuery {
  const q: RolloutQuery = { runId: page.runId, limit: page.limit, offset: page.offset ?? 0, sort: 'startTime', order: 'desc' };
  // Every status picked is the same as no status filter; the store treats an empty list as "none match".
  if (f.status?.length && f.status.length < ROLLOUT_STATUSES.length) q.status = [...f.status];
  if (f.minReward !== undefined) q.minReward = f.minReward;
  if (f.maxReward !== undefined) q.maxReward = f.maxReward;
  if (f.split) q.split = f.split;
  return q;
}

/** One line for the view's description, e.g. "failed · reward 0.2–0.8 · val"; undefined when nothing is filtered. */
export function describeFilter(f: RolloutFilter): string | undefined {
  if (isEmptyFilter(f)) return undefined;
  const parts: string[] = [];
  if (f.status?.length && f.status.length < ROLLOUT_STATUSES.length) parts.push(f.status.join(', '));
  if (f.minReward !== undefined && f.maxReward !== undefined) parts.push(`reward ${f.minReward}–${f.maxReward}`);
  else if (f.minReward !== undefined) parts.push(`reward ≥ ${f.minReward}`);
  else if (f.maxReward !== undefined) parts.push(`reward ≤ ${f.maxReward}`);
  if (f.split) parts.push(`${f.split} split`);
  return parts.length ? parts.join(' · ') : undefined;
}

export type RewardRange = { minReward?: number; maxReward?: number };

/**
 * Parses what a user types for a reward range: "0.5-1", "0.5..1", ">= 0.5",
 * "<0.3", "0.7" (exactly that) or "" (no range). Returns an error message
 * string for anything else, so an InputBox can show it while typing.
 */
export function parseRewardRange(text: string): RewardRange | string {
  const t = text.trim();
  if (!t) return {};
  const n = String.raw`(-?\d+(?:\.\d+)?|-?\.\d+)`;
  const range = new RegExp(String.raw`^${n}\s*(?:-|–|\.\.|to)\s*${n}$`).exec(t);
  if (range) {
    const min = Number(range[1]);
    const max = Number(range[2]);
    if (min > max) return `the lower bound ${min} is above the upper bound ${max}`;
    return { minReward: min, maxReward: max };
  }
  const ge = new RegExp(String.raw`^(?:>=?|≥)\s*${n}$`).exec(t);
  if (ge) return { minReward: Number(ge[1]) };
  const le = new RegExp(String.raw`^(?:<=?|≤)\s*${n}$`).exec(t);
  if (le) return { maxReward: Number(le[1]) };
  const exact = new RegExp(String.raw`^${n}$`).exec(t);
  if (exact) return { minReward: Number(exact[1]), maxReward: Number(exact[1]) };
  return 'type a range such as 0.5-1, >= 0.5 or <= 0.3 (leave empty for any reward)';
}

/** The range as the user would type it back, for the InputBox's initial value. */
export function formatRewardRange(f: RewardRange): string {
  if (f.minReward !== undefined && f.maxReward !== undefined) return `${f.minReward}-${f.maxReward}`;
  if (f.minReward !== undefined) return `>= ${f.minReward}`;
  if (f.maxReward !== undefined) return `<= ${f.maxReward}`;
  return '';
}
