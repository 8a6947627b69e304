import { boundedMeanInterval, mean, meanConfidenceInterval, sampleStd, wilsonInterval } from './statistics';

/*
 * The two figures every report number is shown as: a mean with its interval,
 * and a rate with its Wilson interval, at the report's confidence level.
 */

export const REPORT_CONFIDENCE = 0.95;

/** A mean with its interval. */
export interface MeanStat {
  n: number;
  mean: number | null;
  /** 95 % interval (see meanStat); null without values, or below two that are not all 0 or 1. */
  ci: [number, number] | null;
  std: number | null;
  min: number | null;
  max: number | null;
}

/** A proportion in percent with its Wilson score interval (percent). */
export interface RateStat {
  count: number;
  n: number;
  rate: number | null;
  ci: [number, number] | null;
}

/** Mean with its interval: with `bounds` (scores and rewards lie in 0..1) one that stays inside them (boundedMeanInterval), else Student t. */
export function meanStat(xs: readonly number[], bounds?: readonly [number, number]): MeanStat {
  return {
    n: xs.length,
    mean: mean(xs),
    ci: bounds ? boundedMeanInterval(xs, REPORT_CONFIDENCE, bounds) : meanConfidenceInterval(xs, REPORT_CONFIDENCE),
    std: sampleStd(xs),
    min: xs.length ? Math.min(...xs) : null,
    max: xs.length ? Math.max(...xs) : null,
  };
}

export function rateStat(count: number, n: number): RateStat {
  const ci = wilsonInterval(count, n, REPORT_CONFIDENCE);
  return { count, n, rate: n ? (100 * count) / n : null, ci: ci ? [100 * ci[0], 100 * ci[1]] : null };
}
