import { createHash } from 'node:crypto';
import type { RewardConfig } from '../config/schema';
import type { RolloutRecord } from '../store/types';
import { weightedReward } from './weighted';

/*
 * Which reward a final reward was computed under. Two rewards compare only
 * under one definition: after new weights are saved, the rewards stored
 * before them are re-scored on the fly where what the rollout stored allows
 * it, and otherwise are not compared at all.
 */

/** A short key of what decides a final reward (the weights as proportions, the penalties, the custom reward and how it mixes): equal keys, comparable rewards. */
export function rewardDefinitionKey(reward: RewardConfig): string {
  const total = Object.values(reward.criteria).reduce((s, c) => s + c.weight, 0);
  const weights = Object.entries(reward.criteria)
    .map(([name, c]) => [name, total > 0 ? c.weight / total : 0] as const)
    .sort((a, b) => a[0].localeCompare(b[0]));
  const custom = reward.module ? { module: reward.module, mode: reward.mode, customWeight: reward.customWeight, customFailurePenalty: reward.customFailurePenalty } : null;
  const definition = { weights, judgeFailurePenalty: reward.judgeFailurePenalty, noOutputReward: reward.noOutputReward, custom };
  return createHash('sha256').update(JSON.stringify(definition)).digest('hex').slice(0, 12);
}

/**
 * A rollout's final reward under `reward`, from what it stored, with no model
 * call: possible when the judge alone scores (no custom reward module) and
 * the rollout has a score for every criterion (a failed judge counts its
 * penalty, no final output the no-output reward); null otherwise, and for a
 * rollout that has no reward at all.
 */
export function rewardUnder(r: Pick<RolloutRecord, 'criteria' | 'judgeFailed' | 'finalReward' | 'status' | 'failure'>, reward: RewardConfig): number | null {
  if (reward.module || r.finalReward === null) return null;
  const names = Object.keys(reward.criteria);
  if (r.judgeFailed) return weightedReward(Object.fromEntries(names.map((k) => [k, reward.judgeFailurePenalty])), reward.criteria);
  if (!r.criteria) return r.status === 'failed' && (r.failure === 'no_output' || r.failure === 'truncated') ? reward.noOutputReward : null;
  if (names.some((k) => typeof r.criteria![k] !== 'number')) return null;
  return weightedReward(r.criteria, reward.criteria);
}
