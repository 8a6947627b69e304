import { terminalSafe } from './terminalText';

/** Fixed-width table with a header row, for terminals; every cell is one line, its control characters escaped. */
export function table(header: string[], rawRows: string[][]): string {
  const rows = rawRows.map((r) => r.map((c) => terminalSafe(c ?? '')));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
