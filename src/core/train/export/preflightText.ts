import type { PreflightCheck, PreflightReport, PreflightSeverity } from './preflightTypes';

const ICON: Record<PreflightSeverity, string> = { error: '✗', warning: '⚠', info: 'ℹ' };
/** Rollout ids shown per check in the text report. */
const IDS_SHOWN = 3;

/** Icon of a check: ✓ passed, ℹ for information, ⚠ warning, ✗ error. */
export function checkIcon(check: PreflightCheck): string {
  return check.severity === 'info' && check.count === 0 ? '✓' : ICON[check.severity];
}

/** The report as text, for a terminal or an output channel. */
export function preflightReportText(report: PreflightReport): string {
  const errors = report.checks.filter((c) => c.severity === 'error').length;
  const warnings = report.checks.filter((c) => c.severity === 'warning').length;
  const plural = (n: number, w: string): string => `${n} ${w}${n === 1 ? '' : 's'}`;
  const lines = [
    `pre-flight for ${report.phase}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')} — ${
      report.ok ? 'ready to run' : 'the phase would fail: fix the errors first'
    }`,
  ];
  for (const c of report.checks) {
    lines.push(`${checkIcon(c)} ${c.title}`);
    if (c.severity === 'info') continue;
    if (c.rollouts.length) {
      const more = c.rollouts.length > IDS_SHOWN ? ` (+${c.rollouts.length - IDS_SHOWN} more)` : '';
      lines.push(`    rollouts: ${c.rollouts.slice(0, IDS_SHOWN).join(', ')}${more}`);
    }
    lines.push(`    fix: ${c.fix}`);
  }
  lines.push(`counts: ${Object.entries(report.counts).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  return lines.join('\n');
}
