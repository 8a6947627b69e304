import { isScored } from '../../core/reward/scoredRollouts';
import { FAILURE_SHORT_LABELS, statusText } from '../../core/store/failureKinds';
import type { RolloutRecord, RolloutStatus, RunRecord } from '../../core/store/types';

/** A codicon id and the theme colour it is drawn in (ids of VS Code's own colour registry). */
export interface StatusIcon {
  icon: string;
  color: string | undefined;
}

const STATUS_ICONS: Record<RolloutStatus, StatusIcon> = {
  succeeded: { icon: 'pass', color: 'testing.iconPassed' },
  failed: { icon: 'error', color: 'testing.iconFailed' },
  running: { icon: 'loading~spin', color: undefined },
  cancelled: { icon: 'circle-slash', color: 'testing.iconSkipped' },
};

export function statusIcon(status: RolloutStatus): StatusIcon {
  return STATUS_ICONS[status];
}

/** A failed rollout that still has a reward (its graph gave no final output) is a warning, not an error: it was scored. */
const SCORED_FAILURE_ICON: StatusIcon = { icon: 'warning', color: 'testing.iconFailed' };

/** The icon of one rollout: its status's, or the scored-failure one. */
export function rolloutIcon(r: Pick<RolloutRecord, 'status' | 'finalReward'>): StatusIcon {
  return r.status === 'failed' && isScored(r) ? SCORED_FAILURE_ICON : statusIcon(r.status);
}

/** "850 ms", "2.3 s", "4 m 05 s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m} m ${String(s).padStart(2, '0')} s`;
}

export function formatReward(r: number | null): string {
  return r === null ? 'n/a' : r.toFixed(2);
}

function rolloutDurationMs(r: RolloutRecord, now: number): number {
  return (r.endTime ?? now) - r.startTime;
}

/**
 * The tree item's description: "reward 0.71 · 2.3 s"; a failed rollout leads
 * with why ("no output · reward 0.00 · 2.3 s", "timeout · 2.3 s": one that
 * threw has no reward to show); a running one shows its time so far.
 */
export function rolloutDescription(r: RolloutRecord, now = Date.now()): string {
  const time = formatDuration(Math.max(0, rolloutDurationMs(r, now)));
  if (r.status === 'running') return `running · ${time}`;
  const sample = r.sample > 0 ? `#${r.sample} · ` : '';
  if (r.status === 'succeeded') return `${sample}reward ${formatReward(r.finalReward)} · ${time}`;
  const why = r.failure ? FAILURE_SHORT_LABELS[r.failure] : r.status;
  return `${sample}${why}${r.finalReward === null ? '' : ` · reward ${formatReward(r.finalReward)}`} · ${time}`;
}

export interface RunSummary {
  rollouts: number;
  meanReward: number | null;
}

export function summariseRollouts(rollouts: readonly RolloutRecord[]): RunSummary {
  let sum = 0;
  let n = 0;
  for (const r of rollouts) {
    if (r.finalReward === null) continue;
    sum += r.finalReward;
    n++;
  }
  return { rollouts: rollouts.length, meanReward: n ? sum / n : null };
}

/** The run item's description: "12 rollouts · mean 0.64 · SIMULATED". */
export function runDescription(run: RunRecord, s: RunSummary): string {
  const parts = [`${s.rollouts} rollout${s.rollouts === 1 ? '' : 's'}`];
  if (s.meanReward !== null) parts.push(`mean ${s.meanReward.toFixed(2)}`);
  if (run.status !== 'done') parts.push(run.status);
  if (run.simulated) parts.push('SIMULATED');
  return parts.join(' · ');
}

/**
 * Escapes text for a Markdown tooltip so model output, task ids and errors
 * show literally: Markdown syntax and HTML both.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>~&"']/g, (c) => `\\${c}`).replace(/\r?\n/g, '  \n');
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Markdown for a rollout's tooltip; every value from the store is escaped. */
export function rolloutTooltipMarkdown(r: RolloutRecord, now = Date.now()): string {
  const e = escapeMarkdown;
  const lines = [
    `**Task ${e(r.taskId)}**${r.sample > 0 ? ` · sample ${r.sample}` : ''}${r.simulated ? ' · SIMULATED' : ''}`,
    '',
    `Status: ${e(statusText(r))}${r.split ? ` · split ${e(r.split)}` : ''}`,
    `Reward: ${formatReward(r.finalReward)}${r.judgeFailed ? ' (judge failed)' : ''}`,
    `Duration: ${formatDuration(Math.max(0, rolloutDurationMs(r, now)))} · ${r.spanCount} spans${r.turns !== null ? ` · ${r.turns} turns` : ''}`,
  ];
  if (r.decision || r.expectedDecision) lines.push(`Decision: ${e(r.decision ?? '—')}${r.expectedDecision ? ` (expected ${e(r.expectedDecision)})` : ''}`);
  if (r.criteria) {
    const parts = Object.entries(r.criteria).map(([k, v]) => `${e(k)} ${v.toFixed(2)}`);
    if (parts.length) lines.push(`Criteria: ${parts.join(', ')}`);
  }
  if (r.error) lines.push(`Error: ${e(cut(r.error, 500))}`);
  lines.push('', `Rollout ${e(r.id)}`, `Run ${e(r.runId)}`);
  // Two trailing spaces make each line a hard break in Markdown.
  return lines.join('  \n');
}

/** "3/10 · mean reward 0.712 · ETA 40.0 s": the progress notification's message. */
export function progressMessage(p: { done: number; total: number; meanReward: number | null; etaMs: number | null }): string {
  const parts = [`${p.done}/${p.total}`];
  if (p.meanReward !== null) parts.push(`mean reward ${p.meanReward.toFixed(3)}`);
  if (p.etaMs !== null && p.done < p.total) parts.push(`ETA ${formatDuration(p.etaMs)}`);
  return parts.join(' · ');
}

/**
 * A run's label in the tree: when it started and the tail of its id, short
 * enough that the description (count, mean reward, SIMULATED) stays visible
 * in a normal sidebar; the full id is in the tooltip.
 */
export function runLabel(run: RunRecord): string {
  const when = new Date(run.startTime).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  return `${when} · ${run.id.slice(-6)}`;
}
