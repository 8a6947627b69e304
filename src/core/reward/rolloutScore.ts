import type { RewardConfig } from '../config/schema';
import type { CustomRewardResult } from './customReward';
import { weightedReward } from './weighted';

/** The judge's scores of a final output as the reward counts them. */
export interface JudgedScores {
  /** Per criterion, 0..1; every criterion gets judgeFailurePenalty when the judge failed. */
  scores: Record<string, number>;
  failed: boolean;
  /** The weighted reward of `scores`. */
  reward: number;
}

/** What the reward policy gives a rollout; the runner records it. */
export interface RolloutScore {
  finalReward: number;
  /** The judge's scores; null when the judge did not run on a final output. */
  criteria: Record<string, number> | null;
  judgeFailed: boolean;
  /** The custom reward's breakdown; null without a custom reward or when it failed. */
  rewardBreakdown: Record<string, number> | null;
  /** What the final reward came from: the judge, the no-output reward, the custom reward alone, or both combined. */
  source: 'judge' | 'no-output' | 'custom' | 'combine';
  /** Why the custom reward failed (the rollout then gets customFailurePenalty); null otherwise. */
  customError: string | null;
}

export interface ScoreInputs {
  /** The graph gave a final output. */
  hasOutput: boolean;
  /**
   * The judge's scores of the final output: needed whenever it has one, except
   * in mode "replace", where the judge runs only if the custom reward asked.
   */
  judge: JudgedScores | null;
  /** The custom reward's result; null when lab.json names no reward module. */
  custom: CustomRewardResult | null;
}

/** A judge verdict under the reward config: a failed judge gives every criterion the penalty, so it is never a free pass. */
export function judgedScores(verdict: { scores: Record<string, number>; failed: boolean }, reward: Pick<RewardConfig, 'criteria' | 'judgeFailurePenalty'>): JudgedScores {
  const scores = verdict.failed ? Object.fromEntries(Object.keys(reward.criteria).map((k) => [k, reward.judgeFailurePenalty])) : verdict.scores;
  return { scores, failed: verdict.failed, reward: weightedReward(scores, reward.criteria) };
}

/**
 * The reward policy: the judge's reward (or noOutputReward without a final
 * output); with a custom reward, that reward alone (mode "replace") or
 * mixed with the judge's by customWeight ("combine"); a custom reward that
 * failed gives customFailurePenalty, and the rollout keeps its trace.
 */
export function rolloutScore(reward: RewardConfig, inputs: ScoreInputs): RolloutScore {
  const { hasOutput, judge, custom } = inputs;
  const judgeReward = (): number => {
    if (!hasOutput) return reward.noOutputReward;
    if (!judge) throw new Error('a rollout with a final output is scored by the judge: pass its scores');
    return judge.reward;
  };
  const base = { criteria: judge?.scores ?? null, judgeFailed: judge?.failed ?? false, rewardBreakdown: null, customError: null };
  if (!custom) return { ...base, finalReward: judgeReward(), source: hasOutput ? 'judge' : 'no-output' };
  const combine = reward.mode === 'combine';
  const source = combine ? 'combine' : 'custom';
  const fromJudge = combine ? judgeReward() : null;
  if (!custom.ok) return { ...base, finalReward: reward.customFailurePenalty, source, customError: custom.error };
  return {
    ...base,
    finalReward: fromJudge === null ? custom.reward : (1 - reward.customWeight) * fromJudge + reward.customWeight * custom.reward,
    rewardBreakdown: { ...custom.breakdown },
    source,
  };
}
