import type { FailureKind } from '../store/failureKinds';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { Attr } from '../trace/span';
import { isScored } from '../reward/scoredRollouts';
import { clip } from '../clip';
import { readSpans, type SpanBudget } from './reportSpans';

export interface LowRollout {
  rolloutId: string;
  taskId: string;
  sample: number;
  status: RolloutRecord['status'];
  /** Why it failed (a no-output rollout still has its reward); null when it succeeded. */
  failure: FailureKind | null;
  finalReward: number;
  decision: string | null;
  expectedDecision: string | null;
  judgeFailed: boolean;
  turns: number | null;
  /** The custom reward's breakdown; null without one. */
  rewardBreakdown: Record<string, number> | null;
  /** The custom reward's `info` text, when it gave one and the rollout's spans were read. */
  rewardInfo: string | null;
}

/** The scored rollouts with the lowest reward (no-output ones included), with the custom reward's info read from their spans while the budget lasts. */
export function lowestRollouts(store: TraceStore, done: readonly RolloutRecord[], count: number, custom: boolean, budget: SpanBudget): LowRollout[] {
  return done
    .filter(isScored)
    .sort((a, b) => a.finalReward! - b.finalReward! || a.startTime - b.startTime)
    .slice(0, count)
    .map((r) => {
      let info: string | null = null;
      // Only while the budget lasts, and never counted as unread: the info is a nicety, not part of the explanation.
      if (custom && r.rewardBreakdown && budget.left > 0) {
        const span = readSpans(store, r, budget)?.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'custom');
        const v = span?.attributes[Attr.rewardInfo];
        info = typeof v === 'string' && v ? clip(v) : null;
      }
      return {
        rolloutId: r.id,
        taskId: r.taskId,
        sample: r.sample,
        status: r.status,
        failure: r.failure ?? null,
        finalReward: r.finalReward!,
        decision: r.decision,
        expectedDecision: r.expectedDecision,
        judgeFailed: r.judgeFailed,
        turns: r.turns,
        rewardBreakdown: r.rewardBreakdown ?? null,
        rewardInfo: info,
      };
    });
}
