/**
 * Numbers as people read them: integers as they are, other values to a few
 * significant digits, so float noise (0.7394999999999998) never shows.
 */
export function formatNumber(x: number, significant = 4): string {
  return String(Math.abs(x) >= 10 ** significant ? Math.round(x) : tidyNumber(x, significant));
}

/** The number formatNumber shows, as a number (to tidy the numbers inside JSON before printing it). */
export function tidyNumber(x: number, significant = 4): number {
  if (!Number.isFinite(x) || Number.isInteger(x) || Math.abs(x) >= 10 ** significant) return x;
  return Number(x.toPrecision(significant));
}

/** A score to fixed digits ('n/a' when there is none): the evaluation report's. */
export { num } from '../../src/core/analysis/numberFormat';

/** A difference to fixed digits with its sign (+0.120, -0.050; never -0.000). */
export function signed(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return 'n/a';
  const s = x.toFixed(digits);
  if (/^-0\.?0*$/.test(s)) return s.slice(1);
  return x > 0 ? `+${s}` : s;
}
