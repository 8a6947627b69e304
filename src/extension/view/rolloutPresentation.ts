import { duration } from '../../core/analysis/numberFormat';
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


export function formatReward(r: number | null): string {
  return r === null ? 'n/a' : r.toFixed(2);
}

function rolloutDurationMs(r: RolloutRecord, now: number): number {
  return (r.endTime ?? now) - r.startTime;
}

/**
 * The tree item's description: "reward 0.71 · 2.3 s"; a failed rollout leads
 * with why ("no output · reward 0.00 · 2.3 s", "timeout · 2.3 s": one that
 * threw has no reward to show); a running one shows its time so far. When its
 * run draws several samples per task (`samplesPerTask`, from the run's
 * options) every sample is numbered from #1, the first one too.
 */
export function rolloutDescription(r: RolloutRecord, now = Date.now(), samplesPerTask = 1): string {
  const time = duration(Math.max(0, rolloutDurationMs(r, now)));
  const sample = samplesPerTask > 1 || r.sample > 0 ? `${sampleLabel(r.sample)} · ` : '';
  if (r.status === 'running') return `${sample}running · ${time}`;
  if (r.status === 'succeeded') return `${sample}reward ${formatReward(r.finalReward)} · ${time}`;
  const why = `${r.failure ? FAILURE_SHORT_LABELS[r.failure] : r.status}${r.supersededBy ? ' · superseded (redone by a resume)' : ''}`;
  return `${sample}${why}${r.finalReward === null ? '' : ` · reward ${formatReward(r.finalReward)}`} · ${time}`;
}

/** A sample's number as people count: the stored index 0 is "#1". */
export function sampleLabel(sample: number): string {
  return `#${sample + 1}`;
}

/** The samples per task a run drew (its `samples` option), 1 when it does not say. */
export function samplesPerTask(run: Pick<RunRecord, 'params'>): number {
  const n = run.params.samples;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 1;
}

/** What started a run: its `command` option ("run" for Run Rollouts and older runs). */
export function runKind(run: Pick<RunRecord, 'params'>): string {
  const c = run.params.command;
  return typeof c === 'string' && c ? c : 'run';
}

/** Which side of a comparison a run is, with the variant's label. */
function comparisonSide(run: Pick<RunRecord, 'params'>): { side: string; label: string } | undefined {
  const c = run.params.comparison as { side?: unknown; label?: unknown } | undefined;
  if (typeof c !== 'object' || c === null || typeof c.side !== 'string') return undefined;
  return { side: c.side.toUpperCase(), label: typeof c.label === 'string' ? c.label : '' };
}

const RUN_KIND_ICONS: Record<string, string> = {
  run: 'play',
  eval: 'checklist',
  compare: 'git-compare',
  pipeline: 'mortar-board',
  online: 'sync',
  optimize: 'sparkle',
};

/** The kind's word at the front of a run's label ("" for a plain run), and its codicon. */
export function runKindBadge(run: Pick<RunRecord, 'params'>): { word: string; icon: string } {
  const kind = runKind(run);
  const icon = RUN_KIND_ICONS[kind] ?? 'history';
  if (kind === 'run') return { word: '', icon };
  if (kind === 'compare') {
    const side = comparisonSide(run);
    return { word: side ? `compare ${side.side}` : 'compare', icon };
  }
  if (kind === 'pipeline') return { word: 'training', icon };
  return { word: kind, icon };
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

/**
 * The run item's description: "12 rollouts · mean 0.64 · SIMULATED" (a
 * comparison side leads with its variant, "A: base · …").
 */
export function runDescription(run: RunRecord, s: RunSummary): string {
  const parts: string[] = [];
  const side = runKind(run) === 'compare' ? comparisonSide(run) : undefined;
  if (side?.label) parts.push(`${side.side}: ${side.label}`);
  parts.push(`${s.rollouts} rollout${s.rollouts === 1 ? '' : 's'}`);
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
export function rolloutTooltipMarkdown(r: RolloutRecord, now = Date.now(), samples = 1): string {
  const e = escapeMarkdown;
  const lines = [
    `**Task ${e(r.taskId)}**${samples > 1 || r.sample > 0 ? ` · sample ${r.sample + 1}${samples > 1 ? ` of ${samples}` : ''}` : ''}${r.simulated ? ' · SIMULATED' : ''}`,
    '',
    `Status: ${e(statusText(r))}${r.split ? ` · split ${e(r.split)}` : ''}`,
    `Reward: ${formatReward(r.finalReward)}${r.judgeFailed ? ' (judge failed)' : ''}`,
    `Duration: ${duration(Math.max(0, rolloutDurationMs(r, now)))} · ${r.spanCount} spans${r.turns !== null ? ` · ${r.turns} turns` : ''}`,
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
  if (p.etaMs !== null && p.done < p.total) parts.push(`ETA ${duration(p.etaMs)}`);
  return parts.join(' · ');
}

/**
 * A run's label in the tree: its kind when it is not a plain run ("eval",
 * "compare A", "training") and when it started — "14:05" today, "Nov 21
 * 14:05" before — short enough that the description (count, mean reward,
 * SIMULATED) stays visible in a normal sidebar; the full id is in the tooltip,
 * and the view adds its tail when two runs would read the same.
 */
export function runLabel(run: Pick<RunRecord, 'startTime' | 'params'>, now = Date.now()): string {
  const when = shortStartTime(run.startTime, now);
  const { word } = runKindBadge(run);
  return word ? `${word} · ${when}` : when;
}

/** When something started, short: "14:05" today, "Nov 21 14:05" before. */
export function shortStartTime(at: number, now = Date.now()): string {
  const d = new Date(at);
  const hm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
  return d.toDateString() === new Date(now).toDateString() ? hm : `${d.toLocaleDateString('en-US', { month: 'short', day: 'numeric' })} ${hm}`;
}
