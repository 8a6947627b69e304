import type { RewardPoint } from '../../src/shared/protocol';

/*
 * The numbers of the reward curve, apart from drawing: rolling means, the
 * version groups a split colours by, and the CSV export.
 */

export const DEFAULT_WINDOW = 10;

/**
 * Trailing rolling mean: each value is the mean of itself and the window - 1
 * values before it. The first points average what there is so far (pandas'
 * `rolling(window, min_periods=1)`), so the line starts at the first rollout.
 * Missing values (null) are skipped; a window with none gives null.
 */
export function rollingMean(values: ReadonlyArray<number | null>, window: number): Array<number | null> {
  const w = Math.max(1, Math.floor(window));
  const out: Array<number | null> = [];
  let sum = 0;
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) {
      sum += v;
      n++;
    }
    const old = i - w >= 0 ? values[i - w] : null;
    if (old !== null && old !== undefined) {
      sum -= old;
      n--;
    }
    out.push(n ? sum / n : null);
  }
  return out;
}

/** How points are split into groups: not at all, or by one agent's prompt or model version. */
export type SplitBy = { kind: 'none' } | { kind: 'prompt' | 'model'; agent: string };

export function splitKey(s: SplitBy): string {
  return s.kind === 'none' ? 'none' : `${s.kind}:${s.agent}`;
}

export function parseSplit(key: unknown): SplitBy {
  if (typeof key !== 'string') return { kind: 'none' };
  const m = /^(prompt|model):(.+)$/.exec(key);
  return m ? { kind: m[1] as 'prompt' | 'model', agent: m[2]! } : { kind: 'none' };
}

export const NO_VERSION = '(none)';

export function versionOf(p: RewardPoint, s: SplitBy): string {
  if (s.kind === 'none') return '';
  const v = s.kind === 'prompt' ? p.promptVersions[s.agent] : p.modelVersions[s.agent];
  return v ?? NO_VERSION;
}

export interface VersionGroup {
  version: string;
  /** Points of this version. */
  count: number;
  /** Index of the first point of this version. */
  first: number;
}

/** Versions in order of first appearance. */
export function versionGroups(points: readonly RewardPoint[], s: SplitBy): VersionGroup[] {
  const groups = new Map<string, VersionGroup>();
  points.forEach((p, i) => {
    const v = versionOf(p, s);
    const g = groups.get(v);
    if (g) g.count++;
    else groups.set(v, { version: v, count: 1, first: i });
  });
  return [...groups.values()];
}

/** Indexes i where point i runs a different version than point i - 1. */
export function versionChanges(points: readonly RewardPoint[], s: SplitBy): Array<{ index: number; from: string; to: string }> {
  const out: Array<{ index: number; from: string; to: string }> = [];
  if (s.kind === 'none') return out;
  for (let i = 1; i < points.length; i++) {
    const from = versionOf(points[i - 1]!, s);
    const to = versionOf(points[i]!, s);
    if (from !== to) out.push({ index: i, from, to });
  }
  return out;
}

/** Agents that appear in any point, for the split selector. */
export function agentsOf(points: readonly RewardPoint[]): string[] {
  const set = new Set<string>();
  for (const p of points) for (const a of Object.keys(p.promptVersions)) set.add(a);
  return [...set].sort();
}

function csvCell(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
  // A text cell that a spreadsheet would run as a formula is prefixed with a quote (OWASP CSV injection).
  const text = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** RFC 4180 CSV: one row per rollout, with each criterion and each agent's prompt and model version. */
export function seriesCsv(points: readonly RewardPoint[], criteria: readonly string[]): string {
  const agents = agentsOf(points);
  const header = [
    'rollout_id',
    'run_id',
    'task_id',
    'start_time',
    'reward',
    ...criteria,
    ...agents.map((a) => `prompt_version:${a}`),
    ...agents.map((a) => `model_version:${a}`),
  ];
  const rows = points.map((p) => [
    p.rolloutId,
    p.runId,
    p.taskId,
    new Date(p.startTime).toISOString(),
    p.finalReward,
    ...criteria.map((c) => p.criteria?.[c] ?? null),
    ...agents.map((a) => p.promptVersions[a] ?? null),
    ...agents.map((a) => p.modelVersions[a] ?? null),
  ]);
  return [header, ...rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/**
 * The y domain of the curve. `full`: 0–1 (widened to take in rewards outside
 * it). Otherwise fitted to the data with a tenth of its range as padding (at
 * least 0.02), so rewards between 0.6 and 0.75 fill the chart instead of a
 * sixth of it; the padding does not cross 0 or 1 when the data stays inside.
 */
export function rewardDomain(values: readonly number[], full: boolean): [number, number] {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return [0, 1];
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (full) return [Math.min(0, lo), Math.max(1, hi)];
  const pad = Math.max((hi - lo) * 0.1, 0.02);
  lo = lo >= 0 ? Math.max(0, lo - pad) : lo - pad;
  hi = hi <= 1 ? Math.min(1, hi + pad) : hi + pad;
  return [lo, hi];
}

/** A stretch of consecutive points (in start order) from one run. */
export interface RunSpan {
  runId: string;
  /** Indexes of its first and last point. */
  first: number;
  last: number;
}

/** The runs the points come from, as consecutive stretches (runs that overlapped in time give several). */
export function runSpans(points: readonly RewardPoint[]): RunSpan[] {
  const out: RunSpan[] = [];
  points.forEach((p, i) => {
    const cur = out.at(-1);
    if (cur && cur.runId === p.runId) cur.last = i;
    else out.push({ runId: p.runId, first: i, last: i });
  });
  return out;
}

/** What a run is called on the chart: its kind ("run", "eval", "compare A"…) and the tail of its id. */
export function runMarkLabel(runId: string, params: Record<string, unknown> | undefined): string {
  const command = typeof params?.command === 'string' && params.command ? params.command : 'run';
  const side = (params?.comparison as { side?: unknown } | undefined)?.side;
  const kind = command === 'compare' && typeof side === 'string' ? `compare ${side.toUpperCase()}` : command === 'pipeline' ? 'training' : command;
  return `${kind} ${runId.slice(-6)}`;
}
