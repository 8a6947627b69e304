import { result, type Bench, type BenchResult } from './harness';
import { trainVsTrl } from './trainerPython';

/**
 * train.grpo.step_s: seconds of one GRPO optimizer step on a batch of 8 rollout records (two
 * groups of four sampled completions, with the sampler's token_ids and logprobs): the lab's
 * grpo_update against TRL's GRPOTrainer on the same batch (its reference logprobs with the
 * adapter off, _compute_loss, backward, clipping, optimizer step), the same tiny Qwen2,
 * LoRA, lr, clip and KL coefficient. Median of 7 alternating steps each after 2 warm-up
 * steps (bench/python/train_vs_trl.py).
 */
export const bench: Bench = {
  names: ['train.grpo.step_s'],
  async run(): Promise<BenchResult[]> {
    const r = await trainVsTrl('grpo', ['--steps', '7', '--warmup', '2']);
    return [result('train.grpo.step_s', 's', r.lab, r.trl, `lab grpo_update vs TRL GRPOTrainer step, tiny Qwen2 + LoRA on ${r.device}${r.device === 'cpu' ? `, ${String(r.threads)} thread(s)` : ''}; target ratio <= 1.1`)];
  },
};
