import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initWorkspace } from '../src/core/lab/init';
import type { LEARNING_EXAMPLES } from '../src/core/lab/exampleLabs';
import { learningRun, pValueText, type StageResult } from '../src/core/train/pipeline/learningRun';
import { result, type Bench, type BenchResult } from './harness';

/**
 * One learning run of an example lab with fixed seeds (the tasks, the small
 * Qwen2's initialisation, the trainer, every sampled request), as
 * `rollout-lab demo --train --example NAME` runs it: the validation reward
 * after SFT against the untrained student, and after GRPO (offline, then
 * online) against after SFT, on the same validation tasks with the same
 * request seeds. Not timed.
 */
async function learning(example: (typeof LEARNING_EXAMPLES)[number], prefix: string, teacherNote: string, targets: { sft: string; grpo: string }): Promise<BenchResult[]> {
  const ws = mkdtempSync(path.join(tmpdir(), `rollout-lab-learning-${example}-`));
  try {
    await initWorkspace(ws, { example });
    const r = await learningRun({ workspace: ws, log: (line) => process.stderr.write(`${line}\n`) });
    const stage = (name: string): StageResult => {
      const s = r.stages.find((x) => x.stage === name);
      if (!s) throw new Error(`the learning run has no ${name} stage`);
      return s;
    };
    const [untrained, sft, grpo] = [stage('untrained'), stage('sft'), stage('grpo')];
    const teacher = r.teacher.simulated ? `teacher simulated (${teacherNote})` : 'teacher real';
    const note = (s: StageResult, base: StageResult, want: string): string =>
      `${example}: validation reward ${s.mean.toFixed(3)} (${s.stage}, ${s.version}) vs ${base.mean.toFixed(3)} (${base.stage}); paired change ${s.change!.delta.toFixed(3)} ` +
      `[${s.change!.ci[0].toFixed(3)}, ${s.change!.ci[1].toFixed(3)}], p ${pValueText(s.change!.pValue)}, n ${s.n} tasks; target ${want}; ${teacher}`;
    return [
      result(`${prefix}.sft`, 'reward', sft.mean, untrained.mean, note(sft, untrained, targets.sft)),
      result(`${prefix}.grpo`, 'reward', grpo.mean, sft.mean, note(grpo, sft, targets.grpo)),
    ];
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}

/** learning.sft / learning.grpo: the ticket-routing Router; learning.tool.sft / learning.tool.grpo: the stock-lookup Clerk, whose answer is a tool call rewarded by what it returns. */
export const bench: Bench = {
  names: ['learning.sft', 'learning.grpo', 'learning.tool.sft', 'learning.tool.grpo'],
  async run(): Promise<BenchResult[]> {
    return [
      ...(await learning('ticket-routing', 'learning', 'canned answers, ~1 in 6 wrong', { sft: '≥ +0.3', grpo: '≥ +0.1' })),
      ...(await learning('stock-lookup', 'learning.tool', 'canned tool calls, ~1 in 6 with the wrong item or tool', { sft: 'paired interval above 0', grpo: 'paired interval above 0' })),
    ];
  },
};
