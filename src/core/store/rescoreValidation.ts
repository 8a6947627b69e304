import type { RescoreRecord } from './types';

/** What is wrong with a re-score record's shape, or null. */
export function rescoreProblem(r: RescoreRecord): string | null {
  if (typeof r.id !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(r.id)) return 'its id must be 1-64 letters, digits, "_", "-" or "." (e.g. rs_ and 12 hex digits)';
  if (!Number.isFinite(r.at)) return '"at" must be a time in ms';
  if (typeof r.criteria !== 'object' || r.criteria === null) return '"criteria" must map each criterion to { weight }';
  for (const [name, c] of Object.entries(r.criteria)) {
    if (!c || !Number.isFinite(c.weight)) return `criterion "${name}" has no finite weight`;
  }
  if (!Array.isArray(r.rewards) || r.rewards.length === 0) return 'it gives no rollout a reward; leave it out instead';
  const seen = new Set<string>();
  for (const w of r.rewards) {
    if (seen.has(w.rolloutId)) return `rollout ${w.rolloutId} appears twice; give each rollout one reward`;
    seen.add(w.rolloutId);
    if (typeof w.after !== 'number' || !Number.isFinite(w.after)) return `the new reward of rollout ${w.rolloutId} is ${String(w.after)}, not a finite number`;
    if (w.before !== null && (typeof w.before !== 'number' || !Number.isFinite(w.before))) return `the earlier reward of rollout ${w.rolloutId} must be a number or null`;
  }
  return null;
}
