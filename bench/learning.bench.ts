import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initWorkspace } from '../src/core/lab/init';
import { learningRun, pValueText, type StageResult } from '../src/core/train/pipeline/learningRun';
import { result, type Bench, type BenchResult } from './harness';

/**
 * learning.sft and learning.grpo: one learning run of the ticket-routing
 * example (fixed seeds: the tasks, the built Qwen2's initialisation, the
 * trainer, every sampled request), as `rollout-lab demo --train` runs it.
 * learning.sft is the validation reward after SFT against the untrained
 * student; learning.grpo after GRPO (offline, then online) against after SFT;
 * both on the same validation tasks with the same request seeds. Not timed.
 */
export const bench: Bench = {
  names: ['learning.sft', 'learning.grpo'],
  async run(): Promise<BenchResult[]> {
    const ws = mkdtempSync(path.join(tmpdir(), 'rollout-lab-learning-'));
    try {
      await initWorkspace(ws, { example: 'ticket-routing' });
      const r = await learningRun({ workspace: ws, log: (line) => process.stderr.write(`${line}\n`) });
      const stage = (name: string): StageResult => {
        const s = r.stages.find((x) => x.stage === name);
        if (!s) throw new Error(`the learning run has no ${name} stage`);
        return s;
      };
      const [untrained, sft, grpo] = [stage('untrained'), stage('sft'), stage('grpo')];
      const teacher = r.teacher.simulated ? 'teacher simulated (canned answers, ~1 in 6 wrong)' : 'teacher real';
      const note = (s: StageResult, base: StageResult, want: number): string =>
        `validation reward ${s.mean.toFixed(3)} (${s.stage}, ${s.version}) vs ${base.mean.toFixed(3)} (${base.stage}); paired change ${s.change!.delta.toFixed(3)} ` +
        `[${s.change!.ci[0].toFixed(3)}, ${s.change!.ci[1].toFixed(3)}], p ${pValueText(s.change!.pValue)}, n ${s.n} tasks; target ≥ +${want}; ${teacher}`;
      return [
        result('learning.sft', 'reward', sft.mean, untrained.mean, note(sft, untrained, 0.3)),
        result('learning.grpo', 'reward', grpo.mean, sft.mean, note(grpo, sft, 0.1)),
      ];
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
};
