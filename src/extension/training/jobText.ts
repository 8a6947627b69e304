import { shortNumber } from '../../core/analysis/numberFormat';
import { LEADING_METRICS, type TrainerEvent } from '../../core/train/jobs/trainerEvents';
import { shortStartTime } from '../view/rolloutPresentation';

/**
 * How training jobs read in the editor: compact numbers, one-line metrics,
 * sparklines and durations for the Output channel and the Training view.
 * No `vscode` here, so it stays plain functions over plain data.
 */

/** Fields of a metrics event that are bookkeeping, not a metric worth a column. */
const NOT_SHOWN = new Set(['epoch', 'time']);

/** The metric names of a metrics event in the order they are shown. */
export function orderedMetrics(values: Record<string, number>): string[] {
  const names = Object.keys(values).filter((k) => !NOT_SHOWN.has(k));
  const lead = LEADING_METRICS.filter((k) => names.includes(k));
  return [...lead, ...names.filter((k) => !(LEADING_METRICS as readonly string[]).includes(k))];
}

/** "step 3 loss 1.234 lr 2e-4" */
export function metricsLine(step: number, values: Record<string, number>): string {
  return [`step ${step}`, ...orderedMetrics(values).map((k) => `${k} ${shortNumber(values[k]!)}`)].join(' ');
}

/** The Output channel's line for a trainer event; null keeps the raw line (an event we have nothing shorter for). */
export function eventLine(ev: TrainerEvent): string | null {
  switch (ev.event) {
    case 'metrics':
      return metricsLine(ev.step, ev.values);
    case 'start': {
      const parts = [ev.backend ? `backend ${ev.backend}` : '', ev.device ? `on ${ev.device}` : '', ev.examples !== undefined ? `${ev.examples} examples` : '', ev.steps !== undefined ? `${ev.steps} steps` : ''];
      return `start: ${parts.filter(Boolean).join(', ') || 'training'}`;
    }
    case 'checkpoint':
      return `checkpoint at step ${ev.step}: ${ev.path}`;
    case 'serving':
      return `serving ${ev.model || 'the policy'}${ev.version ? ` (version ${ev.version})` : ''} at ${ev.url}`;
    case 'version':
      return `new policy version ${ev.version}${ev.adapter ? ` (${ev.adapter})` : ''}`;
    case 'done':
      return `done${typeof ev.result.status === 'string' ? `: ${ev.result.status}` : ''}`;
    case 'error':
      return `error: ${ev.message}`;
    default:
      return null;
  }
}

const BARS = '▁▂▃▄▅▆▇█';

/** A unicode sparkline of the last `width` values (flat series draw a flat line). */
export function sparkline(values: readonly number[], width = 16): string {
  const v = values.filter((x) => Number.isFinite(x)).slice(-width);
  if (v.length === 0) return '';
  const lo = Math.min(...v);
  const hi = Math.max(...v);
  if (hi === lo) return BARS[3]!.repeat(v.length);
  return v.map((x) => BARS[Math.round(((x - lo) / (hi - lo)) * (BARS.length - 1))]!).join('');
}


/**
 * The question Stop Job asks: its buttons are "Stop Job" and "Keep Running",
 * never a "Cancel" that could mean either (stop the job, or leave it alone).
 */
export function stopJobQuestion(job: { id: string; targetName: string; kind: string }): { message: string; detail: string; stop: string; keep: string } {
  return {
    message: `Stop training job ${job.id} on ${job.targetName}?`,
    detail: job.kind === 'serve' ? 'The served policy stops answering.' : 'The job is stopped on its target; nothing is registered.',
    stop: 'Stop Job',
    keep: 'Keep Running',
  };
}

/**
 * The jobs' labels, in the same order: the phase and when the job started
 * ("sft-juniors · 14:05", "sft-juniors · Nov 21 14:05"), which is what tells
 * jobs apart — their ids share the phase and date, so a sidebar cut them to
 * identical prefixes. Jobs of one phase started in the same minute add the
 * id's last four characters (random hex), kept as long as it takes to be unique.
 */
export function jobLabels(jobs: ReadonlyArray<{ id: string; phase: string; createdAt: number }>, now = Date.now()): string[] {
  const base = jobs.map((j) => `${j.phase} · ${shortStartTime(j.createdAt, now)}`);
  const count = new Map<string, number>();
  for (const b of base) count.set(b, (count.get(b) ?? 0) + 1);
  return jobs.map((j, i) => {
    const b = base[i]!;
    if (count.get(b) === 1) return b;
    const twins = jobs.filter((_x, k) => base[k] === b).map((x) => x.id);
    // The shortest tail (at least 4) that no other job with this label shares.
    let n = 4;
    while (n < j.id.length && twins.some((t) => t !== j.id && t.slice(-n) === j.id.slice(-n))) n++;
    return `${b} · ${j.id.slice(-n)}`;
  });
}
