import type { RolloutRecord, RolloutStatus } from '../store/types';

/*
 * Which rollouts a mean reward is taken over, everywhere (evaluation table,
 * report, comparison, prompt lenses, re-scoring): every finished rollout that
 * has a reward. That is every succeeded rollout, and the failed ones whose
 * graph finished without a final output, scored with reward.noOutputReward
 * (the reference study gave "a rollout with no final protocol" 0). Rollouts
 * that threw have no reward and are counted apart; cancelled ones are not
 * finished.
 */

/** The statuses of rollouts that can have a reward (a store query; then keep those that have one). */
export const SCORED_STATUSES: readonly RolloutStatus[] = ['succeeded', 'failed'];

export function isScored(r: Pick<RolloutRecord, 'status' | 'finalReward'>): boolean {
  return (r.status === 'succeeded' || r.status === 'failed') && typeof r.finalReward === 'number' && Number.isFinite(r.finalReward);
}
