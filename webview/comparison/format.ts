import { num } from '../shared/format';

/** Number formatting of the comparison panel (rewards and scores are 0..1). */
export { num, signed } from '../shared/format';

export function interval(ci: [number, number] | null | undefined): string {
  return ci ? `${num(ci[0])} to ${num(ci[1])}` : 'n/a';
}

/** Mean ± half-width of its interval, or the interval's ends when it is not centred on the mean (bounded or Wilson intervals near 0 or 1). */
export function meanPm(m: number | null, ci: [number, number] | null): string {
  if (m === null) return 'n/a';
  if (!ci) return num(m);
  const below = num(m - ci[0]);
  return below === num(ci[1] - m) ? `${num(m)} ± ${below}` : `${num(m)} (${num(ci[0])} to ${num(ci[1])})`;
}

export function pValue(p: number | null | undefined): string {
  if (p === null || p === undefined) return 'n/a';
  return p < 0.001 ? '< 0.001' : p.toFixed(3);
}


/** Whether a protocol is JSON (shown in a monospace block) rather than prose. */
export function isJsonText(text: string): boolean {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return false;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}
