import { result, type Bench, type BenchResult } from './harness';
import { trainVsTrl } from './trainerPython';

/**
 * train.sft.tokens_per_s: the lab's sft job (`python -m rollout_trainer sft --spec job.yaml`
 * in a bundle, backend transformers, a tiny Qwen2 from model.config, an offline-built BPE
 * tokenizer) against TRL's SFTTrainer run directly on the same model (same config and seed),
 * conversations, LoRA (r 16, alpha 16, dropout 0.05, q/k/v/o) and hyper-parameters (lr 2e-4,
 * batch 4, 15 steps, seed 0). Tokens are TRL's num_tokens in both: the non-pad tokens,
 * prompt and completion, of the sequences trained on; the first 3 steps are left out of
 * both rates. Median of alternating runs (bench/python/train_vs_trl.py).
 */
export const bench: Bench = {
  names: ['train.sft.tokens_per_s'],
  async run(): Promise<BenchResult[]> {
    const r = await trainVsTrl('sft', ['--repeats', '3']);
    return [
      result('train.sft.tokens_per_s', 'tokens/s', r.lab, r.trl, `lab sft job vs TRL SFTTrainer directly, tiny Qwen2 + LoRA on ${r.device}${r.device === 'cpu' ? `, OMP_NUM_THREADS ${String(r.threads)}` : ''}; target ratio >= 0.9`),
    ];
  },
};
