import type { EvalMetrics } from '../core/reward/metrics';

export function pct(x: number | null): string {
  return x === null ? 'n/a' : `${x.toFixed(1)} %`;
}

export function num(x: number | null, digits = 3): string {
  return x === null || x === undefined ? 'n/a' : x.toFixed(digits);
}

/** Fixed-width table with a header row, for terminals. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** The evaluation table of the reference study. */
export function metricsTable(m: EvalMetrics, simulated: boolean): string {
  const rows: string[][] = [
    ['Execution Success Rate', pct(m.executionSuccessRate), `${m.succeeded}/${m.rollouts} rollouts`],
    ['Average Final Reward', num(m.averageFinalReward), m.judgeFailures ? `${m.judgeFailures} judge failures (penalty applied)` : ''],
    [
      'Decision Alignment',
      pct(m.decisionAlignment),
      `${m.alignedCount}/${m.alignmentDenominator} yes/no tasks; maybe: ${m.maybe.rollouts} (${m.maybe.go} GO, ${m.maybe.noGo} NO-GO)`,
    ],
    ['Average Turn Count', num(m.averageTurnCount, 1), ''],
    ...Object.entries(m.judge).map(([k, v]) => [`Judge: ${k}`, num(v), '']),
  ];
  const title = simulated ? 'Evaluation (SIMULATED endpoint: these numbers measure the simulator, not a model)' : 'Evaluation';
  return `${title}\n${table(['Metric', 'Value', 'Detail'], rows)}`;
}

export function duration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} m ${Math.round((ms % 60_000) / 1000)} s`;
}
