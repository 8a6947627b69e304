import type { EvalMetrics } from './metrics';
import { FAILURE_KINDS, FAILURE_SHORT_LABELS } from '../store/failureKinds';
import { num, pct } from './numberFormat';
import { table } from './textTable';

/** "12 CORRECT, 5 INCORRECT, 2 none": the decisions a graph emitted, most frequent first. */
export function decisionCounts(decisions: EvalMetrics['decisions'], max = 6): string {
  const shown = decisions.slice(0, max).map((d) => `${d.count} ${d.decision ?? 'none'}`);
  const rest = decisions.slice(max).reduce((s, d) => s + d.count, 0);
  return [...shown, ...(rest ? [`${rest} other`] : [])].join(', ');
}

/** Why rollouts failed, e.g. "2 no final output (1 truncated at max_tokens), 1 timeout". */
export function failureSummary(m: EvalMetrics): string {
  const parts: string[] = [];
  if (m.noOutput) parts.push(`${m.noOutput} no final output${m.truncated ? ` (${m.truncated} truncated at max_tokens)` : ''}`);
  for (const kind of FAILURE_KINDS) {
    const n = m.failures[kind];
    if (n && kind !== 'no_output' && kind !== 'truncated') parts.push(`${n} ${FAILURE_SHORT_LABELS[kind]}`);
  }
  return parts.join(', ');
}

/** The evaluation table of the reference study, with the rows the lab has: judge rows with a judge, alignment where tasks and decisions allow it. */
export function metricsTable(m: EvalMetrics, simulated: boolean): string {
  const why = failureSummary(m);
  const rewardDetail = [
    m.rewarded ? `over ${m.rewarded} rollouts${m.noOutput ? `, ${m.noOutput} without output included` : ''}` : '',
    m.crashed ? `${m.crashed} failed without a reward (left out)` : '',
    m.judgeFailures ? `${m.judgeFailures} judge failures (penalty applied)` : '',
  ].filter(Boolean);
  const rows: string[][] = [
    ['Execution Success Rate', pct(m.rollouts ? m.executionSuccessRate : null), `${m.succeeded}/${m.rollouts} rollouts${why ? `; failed: ${why}` : ''}`],
    ['Average Final Reward', num(m.averageFinalReward), rewardDetail.join('; ')],
  ];
  if (m.shape.alignment) {
    rows.push([
      'Decision Alignment',
      pct(m.decisionAlignment),
      `${m.alignedCount}/${m.alignmentDenominator} yes/no tasks; maybe: ${m.maybe.rollouts} (${m.maybe.go} GO, ${m.maybe.noGo} NO-GO)`,
    ]);
  } else if (m.decisions.some((d) => d.decision !== null)) {
    rows.push(['Decisions', String(m.decisions.reduce((s, d) => s + d.count, 0)), decisionCounts(m.decisions)]);
  }
  rows.push(['Average Turn Count', num(m.averageTurnCount, 1), '']);
  for (const [k, v] of Object.entries(m.judge)) rows.push([`Judge: ${k}`, num(v), '']);
  for (const [k, v] of Object.entries(m.customReward)) rows.push([`Reward: ${k}`, num(v), 'custom reward breakdown, mean']);
  const title = simulated ? 'Evaluation (SIMULATED endpoint: these numbers measure the simulator, not a model)' : 'Evaluation';
  return `${title}\n${table(['Metric', 'Value', 'Detail'], rows)}`;
}
