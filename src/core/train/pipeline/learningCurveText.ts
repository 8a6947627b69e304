import type { PairedChange } from './learningCurve';

/*
 * The learning curve's numbers as text, shared by the CLI's table and the
 * Training view (no imports beyond types, so either loads it cheaply).
 */

/** "0.712 [0.650, 0.774]": a mean with its interval's ends (bounded intervals are not symmetric). */
export function meanWithInterval(mean: number | null, ci: [number, number] | null, digits = 3): string {
  if (mean === null) return 'n/a';
  return ci ? `${mean.toFixed(digits)} [${ci[0].toFixed(digits)}, ${ci[1].toFixed(digits)}]` : mean.toFixed(digits);
}

/** "+0.150 [+0.080, +0.220] p 0.002 (24 pairs)": a paired change; '-' for none. */
export function pairedChangeText(c: PairedChange | null): string {
  if (!c || c.delta === null) return c ? `no pairs with ${c.versus}` : '-';
  const s = (x: number): string => `${x >= 0 ? '+' : ''}${x.toFixed(3)}`;
  const p = c.pValue === null ? '' : ` p ${c.pValue < 0.001 ? '< 0.001' : c.pValue.toFixed(3)}`;
  return `${s(c.delta)}${c.ci ? ` [${s(c.ci[0])}, ${s(c.ci[1])}]` : ''}${p} (${c.pairs} pair${c.pairs === 1 ? '' : 's'})`;
}

/**
 * The interval on the reward's 0..1 range as text, `width` characters:
 * "·····━━━●━━·········" (the interval drawn, the mean a dot), for places that
 * show text only (a tree item's description).
 */
export function intervalGauge(mean: number, ci: [number, number] | null, width = 20): string {
  const at = (x: number): number => Math.max(0, Math.min(width - 1, Math.round(x * (width - 1))));
  const cells = Array.from({ length: width }, () => '·');
  if (ci) for (let i = at(ci[0]); i <= at(ci[1]); i++) cells[i] = '━';
  cells[at(mean)] = '●';
  return cells.join('');
}
