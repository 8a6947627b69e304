import type { CurvesJob, CurvesPoint } from '../../src/shared/trainingCurvesProtocol';
import { durationText } from '../../src/core/analysis/numberFormat';
import { LEADING_METRICS } from '../../src/core/train/jobs/trainerEvents';

/** One metric over the steps of a job, in step order of arrival. */
export interface MetricSeries {
  metric: string;
  points: Array<{ step: number; value: number }>;
}

/** Charts shown before the first point, by kind: what python-trainer reports that says whether training goes well. */
function expected(kind: CurvesJob['kind']): string[] {
  return kind === 'sft' ? ['loss'] : ['loss', 'reward_mean', 'kl', 'clip_frac'];
}

/**
 * The metrics a job's curves show: every numeric metric its log reported
 * (loss, lr, grad_norm, reward, KL, …), the usual ones of its kind first,
 * then the others the trainer is known to log, then the rest in the order
 * they first appeared; epoch (bookkeeping) last.
 */
export function curveMetrics(kind: CurvesJob['kind'], points: readonly CurvesPoint[] = []): string[] {
  const seen: string[] = [];
  const has = new Set<string>();
  for (const p of points)
    for (const k of Object.keys(p.values))
      if (!has.has(k) && Number.isFinite(p.values[k])) {
        has.add(k);
        seen.push(k);
      }
  const known = [...expected(kind), ...LEADING_METRICS.filter((k) => has.has(k))];
  const lead = [...new Set(known)];
  const rest = seen.filter((k) => !lead.includes(k) && k !== 'epoch');
  return [...lead, ...rest, ...(has.has('epoch') ? ['epoch'] : [])];
}

/** The series of one metric: the points that report it (a metric may be missing from some events). */
export function seriesOf(points: readonly CurvesPoint[], metric: string): MetricSeries {
  const out: MetricSeries['points'] = [];
  for (const p of points) {
    const v = p.values[metric];
    if (typeof v === 'number' && Number.isFinite(v)) out.push({ step: p.step, value: v });
  }
  return { metric, points: out };
}

const ENDED_BEFORE_METRICS: Partial<Record<CurvesJob['state'], string>> = {
  failed: 'No metrics: the job failed before it reported a step — Show Log has its output.',
  cancelled: 'No metrics: the job was cancelled before it reported a step.',
  succeeded: 'The job ended without reporting metrics.',
};

/**
 * The status line over the charts: "step 12 of 40 · about 3 min 05 s left ·
 * 12 metrics events" while a job runs (the time left from the step rate:
 * steps between the first and last points the host timed, else since the
 * job was created), or what an ended job without metrics means — never
 * "Waiting…" for a job that will report nothing more.
 */
export function progressText(job: CurvesJob, points: readonly CurvesPoint[], totalSteps: number | null, now = Date.now()): string {
  const last = points.at(-1);
  const waiting = job.state === 'launching' || job.state === 'running';
  if (!last) return ENDED_BEFORE_METRICS[job.state] ?? (waiting ? 'Waiting for the first metrics…' : 'No metrics reported.');
  const events = `${points.length} metrics event${points.length === 1 ? '' : 's'}`;
  const step = Math.max(...points.map((p) => p.step));
  const parts = [totalSteps ? `step ${step} of ${totalSteps}` : `last step ${step}`];
  if (waiting && totalSteps && step < totalSteps) {
    const eta = msPerStep(job, points, step);
    if (eta !== null) parts.push(`about ${durationText(eta * (totalSteps - step))} left`);
  }
  parts.push(events);
  return parts.join(' · ');
}

/** Milliseconds per step: between the first and last points timed at different moments, else since the job was created. */
function msPerStep(job: CurvesJob, points: readonly CurvesPoint[], step: number): number | null {
  const timed = points.filter((p) => typeof p.at === 'number');
  const first = timed[0];
  const last = timed.at(-1);
  if (first && last && last.at! > first.at! && last.step > first.step) return (last.at! - first.at!) / (last.step - first.step);
  if (last && step > 0 && last.at! > job.createdAt) return (last.at! - job.createdAt) / step;
  return null;
}
