import type { CurvesJob, CurvesPoint } from '../../src/shared/trainingCurvesProtocol';

/** One metric over the steps of a job, in step order of arrival. */
export interface MetricSeries {
  metric: string;
  points: Array<{ step: number; value: number }>;
}

/** The metrics a job's curves show, by kind: the ones python-trainer reports that say whether training goes well. */
export function curveMetrics(kind: CurvesJob['kind']): string[] {
  return kind === 'sft' ? ['loss'] : ['loss', 'reward_mean', 'kl', 'clip_frac'];
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
