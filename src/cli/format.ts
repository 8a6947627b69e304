import type { LearningCurve } from '../core/train/pipeline/learningCurve';
import { meanWithInterval, pairedChangeText } from '../core/train/pipeline/learningCurveText';
import { table } from '../core/analysis/textTable';

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
