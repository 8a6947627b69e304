/** Number and time formats shared by the trace explorer's rows, details and footer. */
import type { AttributeValue } from '../../src/core/trace/span';
import { formatNumber, tidyNumber } from '../shared/format';

export { formatNumber };

export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  if (ms === 0) return '0 ms';
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = Math.floor(ms / 60_000);
  const s = Math.round((ms % 60_000) / 1000);
  return `${m}m ${String(s).padStart(2, '0')}s`;
}

/** Short axis tick labels: the axis already says it is time. */
export function formatTick(ms: number): string {
  if (ms === 0) return '0';
  // Below 10 ms ticks fall on tenths: rounding them to whole ms would repeat labels (0 1ms 1ms).
  if (ms < 10) return `${+ms.toFixed(1)}ms`;
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(2)}s`;
  return `${+(ms / 60_000).toFixed(1)}m`;
}

const INT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
export function formatInt(n: number): string {
  return INT.format(n);
}

export function formatScore(n: number | null | undefined, digits = 3): string {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(digits) : '–';
}

export function shortId(id: string, n = 8): string {
  return id.length > n ? `${id.slice(0, n)}…` : id;
}

/** Digits kept in raw values and JSON: enough for any real figure, too few for binary float noise (0.1 + 0.2). */
const RAW_DIGITS = 12;

/** Pretty-prints JSON text, its numbers without float noise; anything that is not JSON comes back unchanged. */
export function prettyJson(text: string): string {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return text;
  try {
    return JSON.stringify(JSON.parse(t), (_k, v: unknown) => (typeof v === 'number' ? tidyNumber(v, RAW_DIGITS) : v), 2);
  } catch {
    return text;
  }
}

/** Significant digits of a number attribute: a measurement or a score, not a payload. */
const ATTR_DIGITS = 6;

/** A raw attribute value as text: numbers (alone or in a list) to a few significant digits, strings as they are. */
export function valueText(v: AttributeValue): string {
  if (typeof v === 'number') return formatNumber(v, ATTR_DIGITS);
  if (Array.isArray(v)) return `[${(v as Array<string | number | boolean>).map((x) => (typeof x === 'number' ? formatNumber(x, ATTR_DIGITS) : JSON.stringify(x))).join(', ')}]`;
  return typeof v === 'string' ? v : JSON.stringify(v);
}
