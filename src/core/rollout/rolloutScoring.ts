import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LabConfig } from '../config/schema';
import type { Task } from '../data/tasks';
import type { GraphOutcome } from '../graph/outcome';
import { Attr } from '../trace/span';
import type { OpenSpan, RolloutTracer } from '../trace/tracer';
import { LangChainTracer } from '../trace/langchainTracer';
import { judgeOutput } from '../reward/judge';
import { applyAirRules } from '../reward/air';
import type { CustomJudgeResult, CustomReward, CustomRewardResult } from '../reward/customReward';
import { judgedScores, rolloutScore, type JudgedScores, type RolloutScore } from '../reward/rolloutScore';

/** What scoring needs from the rollout environment. */
export interface ScoringContext {
  config: LabConfig;
  judgeModel: BaseChatModel;
  customReward?: CustomReward | null;
}

/** The rollout's trace, where the reward spans go. */
export interface ScoringTrace {
  tracer: RolloutTracer;
  root: OpenSpan;
  tracing: boolean;
  signal: AbortSignal | undefined;
}

/**
 * Scores a finished graph run: calls the judge and the custom reward as the
 * config asks, traces each as a reward span (with the AIR rules' intermediate
 * rewards and the final one), and returns the score for the runner to record.
 */
export async function scoreRollout(ctx: ScoringContext, trace: ScoringTrace, task: Task, outcome: GraphOutcome): Promise<RolloutScore> {
  const { tracer, root, tracing, signal } = trace;
  const { reward } = ctx.config;
  const criteria = reward.criteria;
  const custom = ctx.customReward ?? null;
  // Set when the judge ran on a final output (a holder, so the closure's assignment is seen after it).
  const judged: { scores: JudgedScores | null } = { scores: null };
  // The judge runs at most once: always without a custom reward (or in mode
  // "combine"), and in mode "replace" only when the module calls input.judge().
  let judging: Promise<CustomJudgeResult> | null = null;
  const judge = (): Promise<CustomJudgeResult> =>
    (judging ??= (async (): Promise<CustomJudgeResult> => {
      if (!outcome.finalOutput) return { scores: {}, failed: true, reward: reward.noOutputReward, error: 'the rollout has no final output to judge' };
      const span = tracer.start('judge', 'reward', root, { [Attr.rewardName]: 'judge', [Attr.rewardKind]: 'judge' });
      const judgeTracer = tracing ? new LangChainTracer(tracer, span) : null;
      const verdict = await judgeOutput(
        ctx.judgeModel,
        { goal: task.goal, context: task.context, output: outcome.finalOutput, criteria, instructions: reward.judge.promptText },
        { callbacks: judgeTracer ? [judgeTracer] : [], signal },
      );
      const j = judgedScores(verdict, reward);
      judged.scores = j;
      if (verdict.failed) span.attributes[Attr.errorType] = 'judge_failed';
      span.attributes[Attr.rewardBreakdown] = JSON.stringify(j.scores);
      span.attributes[Attr.rewardValue] = j.reward;
      span.attributes[Attr.judgeRationale] = verdict.rationale;
      span.attributes[Attr.judgeRepaired] = verdict.repaired;
      if (verdict.repair) span.attributes[Attr.judgeRepair] = verdict.repair;
      tracer.end(span, verdict.failed ? 'error' : 'ok', verdict.error);
      const result = { scores: { ...j.scores }, failed: verdict.failed, reward: j.reward };
      return verdict.error === undefined ? result : { ...result, error: verdict.error };
    })());

  if (!custom || reward.mode === 'combine') {
    if (outcome.finalOutput) await judge();
    else {
      const span = tracer.start('no-output', 'reward', root, {
        [Attr.rewardName]: 'no-output',
        [Attr.rewardKind]: 'final',
        [Attr.rewardValue]: reward.noOutputReward,
      });
      tracer.end(span, 'ok');
    }
  }
  let customResult: CustomRewardResult | null = null;
  let customSpan: OpenSpan | null = null;
  if (custom) {
    customSpan = tracer.start('custom', 'reward', root, {
      [Attr.rewardName]: 'custom',
      [Attr.rewardKind]: 'custom',
      [Attr.rewardModule]: custom.file,
      'rollout_lab.reward.mode': reward.mode,
    });
    try {
      customResult = await custom.evaluate(
        {
          // The whole task, gold included: the reward is the one place the expected answer goes.
          task: { id: task.id, goal: task.goal, context: task.context, expected: structuredClone(task.expected ?? task.expectedDecision), expectedDecision: task.expectedDecision, meta: structuredClone(task.meta ?? {}) },
          outcome: { finalOutput: outcome.finalOutput, decision: outcome.decision, turns: outcome.turns, failures: outcome.failures.map((f) => ({ ...f })) },
          spans: Object.freeze(structuredClone([...tracer.spans()])),
          judge,
        },
        { signal },
      );
    } catch (err) {
      // Out of time, or its worker ended: the rollout fails, and its trace says where.
      customSpan.attributes[Attr.errorType] = err instanceof Error ? err.name : 'Error';
      tracer.end(customSpan, 'error', err instanceof Error ? err.message : String(err));
      throw err;
    }
    signal?.throwIfAborted();
  }
  const score = rolloutScore(reward, { hasOutput: Boolean(outcome.finalOutput), judge: judged.scores, custom: customResult });
  if (customSpan && customResult) {
    if (customResult.ok) {
      customSpan.attributes[Attr.rewardValue] = customResult.reward;
      customSpan.attributes[Attr.rewardBreakdown] = JSON.stringify(customResult.breakdown);
      if (customResult.info !== undefined) customSpan.attributes[Attr.rewardInfo] = customResult.info;
      tracer.end(customSpan, 'ok');
    } else {
      // A broken reward never loses the rollout: it keeps its trace and gets the penalty.
      customSpan.attributes[Attr.rewardValue] = score.finalReward;
      customSpan.attributes[Attr.errorType] = 'custom_reward_failed';
      root.attributes[Attr.rewardError] = customResult.error;
      tracer.end(customSpan, 'error', customResult.error);
    }
  }
  for (const air of applyAirRules(ctx.config.air, tracer.spans())) {
    const span = tracer.start(air.rule, 'reward', air.spanId, {
      [Attr.rewardName]: air.rule,
      [Attr.rewardKind]: 'intermediate',
      [Attr.rewardValue]: air.reward,
      'rollout_lab.reward.rule': air.when,
      [Attr.agentName]: air.agent,
      ...(air.credit ? { [Attr.airCredit]: air.credit, [Attr.airCall]: air.callSpanId } : {}),
    });
    tracer.end(span, 'ok');
  }
  const final = tracer.start('final', 'reward', root, {
    [Attr.rewardName]: 'final',
    [Attr.rewardKind]: 'final',
    [Attr.rewardValue]: score.finalReward,
    [Attr.rewardBreakdown]: JSON.stringify(
      Object.fromEntries(Object.entries(score.criteria ?? {}).map(([k, v]) => [k, { score: v, weight: criteria[k]?.weight ?? 0 }])),
    ),
    'rollout_lab.judge.failed': score.judgeFailed,
  });
  if (custom) final.attributes['rollout_lab.reward.source'] = score.source;
  tracer.end(final, 'ok');
  return score;
}
