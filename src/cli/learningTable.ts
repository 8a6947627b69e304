import type { LearningRunResult } from '../core/train/pipeline/learningRun';
import { pValueText } from '../core/train/pipeline/learningRun';
import { num } from '../core/analysis/numberFormat';
import { table } from '../core/analysis/textTable';

/** The before/after table of a learning run: one row per stage, its change against the stage before on the same tasks. */
export function learningTable(r: LearningRunResult): string {
  const rows = r.stages.map((s) => [
    s.stage,
    s.version,
    String(s.n),
    num(s.mean),
    s.ci ? `${num(s.ci[0])} .. ${num(s.ci[1])}` : 'n/a',
    s.change ? `${s.change.delta >= 0 ? '+' : ''}${num(s.change.delta)} (${num(s.change.ci[0])} .. ${num(s.change.ci[1])}, p ${pValueText(s.change.pValue)})` : '',
  ]);
  return table(['stage', 'model version', 'n', 'mean reward', '95% interval', 'change vs previous (paired, 95%)'], rows);
}
