import type { LabConfig } from '../config/schema';

/** What a lab's reward is made of: what the evaluation table and report can show about it. */
export interface RewardSetup {
  /** The judge's configured criteria, in config order. */
  criteria: readonly string[];
  /**
   * The judge scores every rollout with output: no custom reward, or one in mode
   * "combine". In mode "replace" it runs only when the module asks, and the
   * rollouts that carry judge scores show it.
   */
  judge: boolean;
  /** A custom reward module (reward.module) scores the rollouts. */
  custom: boolean;
}

export function rewardSetupOf(config: LabConfig): RewardSetup {
  const custom = Boolean(config.reward.module);
  return { criteria: Object.keys(config.reward.criteria), judge: !custom || config.reward.mode === 'combine', custom };
}
