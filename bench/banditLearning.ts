import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../src/core/lab/init';
import { Lab } from '../src/core/lab/lab';
import { runRollouts } from '../src/core/rollout/runner';
import { mean, pairedTTest } from '../src/core/analysis/statistics';
import { trainBanditPolicy } from '../src/core/train/bandit/policyStore';

const PUBMEDQA = resolve(__dirname, '../../shared/data/pubmedqa/ori_pqal.json');

/** lab.json "bandit" settings of the experiment besides the mode: a small LinUCB exploration bonus, as a policy that is evaluated exploits. */
export const LEARNING_BANDIT = { algorithm: 'linucb', alpha: 0.1 } as const;

export interface BanditLearningOptions {
  trainTasks: number;
  valTasks: number;
  /** Picks the tasks and seeds the rollouts (validation rollouts use seed + 1). */
  seed: number;
  concurrency?: number;
  /** lab.json "bandit" settings in place of LEARNING_BANDIT's. */
  bandit?: Record<string, unknown>;
}

export interface BanditLearningResult {
  /** Validation tasks with a reward in both runs, in task order. */
  taskIds: string[];
  off: number[];
  decide: number[];
  meanOff: number;
  meanDecide: number;
  /** Paired over tasks: decide − off. */
  delta: number;
  se: number;
  pValue: number;
  /** Supervisor decisions the policy was trained on. */
  trainRecords: number;
  policyVersion: string;
}

/**
 * Does the Supervisor's learnt policy beat its own model? On a fresh research
 * lab against the simulated endpoint: train-split rollouts with bandit.mode
 * "off" (the simulated Supervisor picks with a position bias), a policy
 * trained from their decisions (trainBanditPolicy, simulated rollouts
 * included on purpose), then the same validation tasks with the same seeds
 * under "off" and under "decide" (ε = 0: the policy's pick), compared task by
 * task with a paired t-test. Every figure comes from the simulated endpoint.
 */
export async function banditLearning(opts: BanditLearningOptions): Promise<BanditLearningResult> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-bandit-learning-'));
  const configFile = join(dir, '.rollout-lab', 'lab.json');
  const setBandit = (bandit: Record<string, unknown>): void => {
    const cfg = JSON.parse(readFileSync(configFile, 'utf8'));
    cfg.bandit = { ...(opts.bandit ?? LEARNING_BANDIT), ...bandit };
    writeFileSync(configFile, JSON.stringify(cfg, null, 2));
  };
  /** Rollouts of one split in a lab opened for them; the caller closes it. */
  const rollouts = async (split: 'train' | 'val', limit: number, seed: number): Promise<{ lab: Lab; rewards: Map<string, number> }> => {
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const ds = await lab.loadDataset();
      const tasks = lab.selectTasks(ds, { split, limit, seed: opts.seed });
      const run = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: opts.concurrency ?? 4, params: { split }, seed });
      const rewards = new Map<string, number>();
      for (const r of run.rollouts) if (r.status === 'succeeded' && r.finalReward !== null) rewards.set(r.taskId, r.finalReward);
      return { lab, rewards };
    } catch (e) {
      await lab.close();
      throw e;
    }
  };
  try {
    await initWorkspace(dir, { dataset: PUBMEDQA });
    setBandit({ mode: 'off' });
    const train = await rollouts('train', opts.trainTasks, opts.seed);
    const info = await trainBanditPolicy(train.lab.store, train.lab.loaded.config, train.lab.loaded.labDir, { split: 'train', includeSimulated: true }).finally(() => train.lab.close());
    const off = await rollouts('val', opts.valTasks, opts.seed + 1);
    await off.lab.close();
    setBandit({ mode: 'decide', epsilon: 0 });
    const decide = await rollouts('val', opts.valTasks, opts.seed + 1);
    await decide.lab.close();
    const taskIds = [...off.rewards.keys()].filter((id) => decide.rewards.has(id));
    const a = taskIds.map((id) => off.rewards.get(id)!);
    const b = taskIds.map((id) => decide.rewards.get(id)!);
    const t = pairedTTest(a, b);
    if (!t) throw new Error(`only ${taskIds.length} validation tasks have a reward in both runs`);
    return {
      taskIds,
      off: a,
      decide: b,
      meanOff: mean(a)!,
      meanDecide: mean(b)!,
      delta: t.delta,
      se: Number.isFinite(t.t) && t.t !== 0 ? t.delta / t.t : 0,
      pValue: t.pValue,
      trainRecords: info.records,
      policyVersion: info.version,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
