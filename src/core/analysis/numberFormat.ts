/*
 * Numbers and durations as text, the same in the CLI, the editor and the
 * panels (a browser-safe module of the webview catalogue). A missing value
 * reads 'n/a' unless the caller's table uses another mark.
 */

/** A score or mean to fixed digits ('n/a', or `missing`, when there is none). */
export function num(x: number | null | undefined, digits = 3, missing = 'n/a'): string {
  return x === null || x === undefined || !Number.isFinite(x) ? missing : x.toFixed(digits);
}

/** A percentage (already times 100) to fixed digits: "12.5 %". */
export function pct(x: number | null | undefined, digits = 1): string {
  return x === null || x === undefined || !Number.isFinite(x) ? 'n/a' : `${x.toFixed(digits)} %`;
}

/** 950, 12.3k, 4.5M: counts that stay narrow in a table. */
export function count(n: number): string {
  const abs = Math.abs(n);
  if (abs < 10_000) return String(n);
  if (abs < 1_000_000) return `${(n / 1000).toFixed(abs < 100_000 ? 1 : 0)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

/** "850 ms", "2.3 s", "4 m 05 s", "2 h 05 m"; '-' (or `missing`) when there is none. */
export function duration(ms: number | null, missing = '-'): string {
  if (ms === null) return missing;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60_000);
  if (m < 60) return `${m} m ${String(Math.round((ms % 60_000) / 1000)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} m`;
}

/** In whole seconds, for a job's age and the time it has left: "42 s", "3 min 05 s", "2 h 10 min". */
export function durationText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** 1.234, 0.05, 2e-4, 12, 3.5e+6: four significant digits at most, no trailing zeros (a learning rate fits too). */
export function shortNumber(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Number.isInteger(n) && Math.abs(n) < 1e6) return String(n);
  const abs = Math.abs(n);
  if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) {
    const [mantissa, exp] = n.toExponential(3).split('e');
    return `${stripZeros(mantissa!)}e${exp!.replace(/^\+/, '')}`;
  }
  return stripZeros(n.toPrecision(4));
}

function stripZeros(s: string): string {
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
