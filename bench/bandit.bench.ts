import { BanditSchema } from '../src/core/config/trainingSchema';
import { LinUcb } from '../src/core/policy/linucb';
import { playSynthetic } from '../src/core/train/bandit/synthetic';
import { result, type Bench, type BenchResult } from './harness';

const ROUNDS = 5000;
const SEED = 2026;

/**
 * bandit.regret: LinUCB (lab.json's default features and alpha) on the
 * synthetic Supervisor problem with a known best arm, against the uniform
 * random policy on the same rounds (same environment seed), both measured
 * here. The cumulative regret at 1,000, 2,000 and 5,000 rounds shows the
 * growth: LinUCB's slows down, random's stays linear.
 */
export const bench: Bench = {
  names: ['bandit.regret'],
  async run(): Promise<BenchResult[]> {
    const defaults = BanditSchema.parse({});
    const random = playSynthetic(null, { rounds: ROUNDS, seed: SEED });
    const lin = playSynthetic(new LinUcb(defaults.features, defaults.alpha), { rounds: ROUNDS, seed: SEED });
    const at = (c: Float64Array, n: number): number => c[n - 1]!;
    const out: BenchResult[] = [];
    for (const n of [1000, 2000]) {
      out.push(result(`bandit.regret.${n / 1000}k`, 'regret', at(lin.cumulative, n), at(random.cumulative, n), `cumulative regret after ${n} rounds; baseline: uniform random`));
    }
    out.push(
      result(
        'bandit.regret',
        'regret',
        at(lin.cumulative, ROUNDS),
        at(random.cumulative, ROUNDS),
        `LinUCB vs uniform random after ${ROUNDS} rounds (d=${defaults.features}); want ratio well under 1 and falling`,
      ),
    );
    return out;
  },
};
