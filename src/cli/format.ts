import type { EvalMetrics } from '../core/analysis/metrics';
import { num, pct } from '../core/analysis/numberFormat';
import { FAILURE_KINDS, FAILURE_SHORT_LABELS } from '../core/store/failureKinds';
import type { LearningCurve } from '../core/train/pipeline/learningCurve';
import { meanWithInterval, pairedChangeText } from '../core/train/pipeline/learningCurveText';



/** Fixed-width table with a header row, for terminals. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => cells.map((c, i) => (c ?? '').padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

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


/**
 * The learning curve as terminal tables, one per trained model: version,
 * the phase that produced it, rollouts and tasks, mean final reward with its
 * 95 % interval, and the paired change from the previous evaluated version.
 */
export function learningCurveTable(curve: LearningCurve): string {
  const where = curve.split === 'val' ? 'validation' : curve.split;
  const blocks: string[] = [];
  for (const s of curve.series) {
    const rows = s.points.map((p) => [
      `${p.label}${p.active ? ' *' : ''}`,
      p.producedBy ? `${p.producedBy.phase} ${new Date(p.producedBy.at).toISOString().slice(0, 16).replace('T', ' ')}` : p.version === null ? 'lab.json' : '-',
      p.rollouts ? `${p.rollouts} (${p.tasks} tasks)${p.simulated ? `, ${p.simulated} SIMULATED` : ''}` : 'not evaluated',
      p.rollouts ? meanWithInterval(p.reward.mean, p.reward.ci) : '-',
      pairedChangeText(p.change),
    ]);
    blocks.push(
      `Learning curve of ${s.agents.join(', ')} (model ${s.model}), ${where} split — mean final reward, ${Math.round(curve.confidence * 100)} % interval; * active`,
      table(['version', 'produced by', 'rollouts', 'mean reward', 'change vs previous (paired)'], rows),
      '',
    );
  }
  if (curve.series.some((s) => s.points.some((p) => p.simulated > 0))) blocks.push('SIMULATED: some rollouts were answered by the simulated endpoint; their rewards measure the simulator, not a model.');
  if (curve.simulatedLeftOut) blocks.push(`${curve.simulatedLeftOut} simulated rollouts left out.`);
  if (curve.hint) blocks.push(curve.hint);
  return blocks.join('\n').trimEnd();
}
