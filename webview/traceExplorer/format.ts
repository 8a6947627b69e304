/** Number and time formats shared by the trace explorer's rows, details and footer. */

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

/** Pretty-prints JSON text; anything that is not JSON comes back unchanged. */
export function prettyJson(text: string): string {
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return text;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return text;
  }
}
