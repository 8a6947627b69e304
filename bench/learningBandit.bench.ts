import { banditLearning, LEARNING_BANDIT } from './banditLearning';
import { result, type Bench, type BenchResult } from './harness';

const TRAIN_TASKS = 200;
const VAL_TASKS = 80;
const SEED = 2026;

/**
 * learning.bandit.simulated: mean validation reward of the research lab with
 * the Supervisor's trained bandit policy deciding (bandit.mode "decide", ε 0)
 * against bandit.mode "off" (the Supervisor's own model), on the same 80
 * validation tasks with the same seeds, after 200 train-split rollouts; all
 * on the SIMULATED endpoint. learning.bandit.simulated.p: the paired t-test's
 * two-sided p-value over those tasks (want < 0.05).
 */
export const bench: Bench = {
  names: ['learning.bandit'],
  async run(): Promise<BenchResult[]> {
    const r = await banditLearning({ trainTasks: TRAIN_TASKS, valTasks: VAL_TASKS, seed: SEED });
    const settings = `linucb alpha ${LEARNING_BANDIT.alpha}, ${r.trainRecords} train decisions`;
    return [
      result(
        'learning.bandit.simulated',
        'reward',
        r.meanDecide,
        r.meanOff,
        `SIMULATED endpoint: val reward, policy deciding vs bandit off, n=${r.taskIds.length} tasks, +${r.delta.toFixed(3)} ± ${r.se.toFixed(3)} (SE), paired p=${r.pValue.toPrecision(2)} (${settings})`,
      ),
      result('learning.bandit.simulated.p', 'p', r.pValue, null, `paired t-test over the ${r.taskIds.length} validation tasks; want < 0.05`),
    ];
  },
};
