import type { RolloutRecord } from '../../../store/types';
import { Attr, type SpanRecord } from '../../../trace/span';
import { isScoredFailure } from './rolloutSelection';

/**
 * Where a training row's reward came from, said in every row (SFT, RL,
 * bandit) as `reward_source`: a real score, the no-output reward of a scored
 * failure (RL's negative signal), or a penalty standing in for a score the
 * lab could not compute — the judge failed, or the custom reward did.
 */
export type RewardSource = 'scored' | 'no_output' | 'penalty';

/** The skip reason of a rollout left out because its reward is a penalty. */
export const PENALISED = 'penalised';

export type PenaltyKind = 'judge_failed' | 'custom_reward_failed';

/** Why a rollout's reward is a penalty: the row's `penalty` (null when it is not one). */
export interface RewardPenalty {
  kind: PenaltyKind;
  /** The error as the trace recorded it. */
  reason: string;
}

/** What a row says of its reward. */
export interface RewardOrigin {
  reward_source: RewardSource;
  penalty: RewardPenalty | null;
}

/** What the rollout's catalog row says of its scoring. */
export type ScoredRollout = Pick<RolloutRecord, 'status' | 'finalReward' | 'judgeFailed'>;

function text(v: unknown): string | null {
  return typeof v === 'string' && v.trim() ? v : null;
}

/**
 * The penalty a rollout's reward is, from its spans: a custom reward that
 * failed (its error on the rollout span, or its reward span's status) gives
 * reward.customFailurePenalty; a judge that failed gives every criterion
 * reward.judgeFailurePenalty. The custom reward's failure wins: it sets the
 * final reward whatever the judge said.
 */
export function rewardPenalty(rollout: Pick<ScoredRollout, 'judgeFailed'>, spans: readonly SpanRecord[]): RewardPenalty | null {
  const custom = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.errorType] === 'custom_reward_failed');
  if (custom) {
    const root = spans.find((s) => s.kind === 'rollout' && s.parentSpanId === null);
    return { kind: 'custom_reward_failed', reason: text(root?.attributes[Attr.rewardError]) ?? text(custom.statusMessage) ?? 'the custom reward failed' };
  }
  const judge = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.errorType] === 'judge_failed');
  if (rollout.judgeFailed || judge) return { kind: 'judge_failed', reason: text(judge?.statusMessage) ?? 'the judge failed' };
  return null;
}

/** The `reward_source` and `penalty` of a rollout's rows. */
export function rewardOrigin(rollout: ScoredRollout, penalty: RewardPenalty | null): RewardOrigin {
  if (penalty) return { reward_source: 'penalty', penalty };
  return { reward_source: isScoredFailure(rollout) ? 'no_output' : 'scored', penalty: null };
}
