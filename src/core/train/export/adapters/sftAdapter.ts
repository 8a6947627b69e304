import type { SpanRecord } from '../../../trace/span';
import type { ChatMessage } from './chatMessages';
import { llmCalls, type LlmCall } from './llmCalls';
import type { RewardOrigin } from './rewardPenalty';
import { countSkip, type RolloutFilter, type SelectedRollout } from './rolloutSelection';
import type { ToolDefinition } from './toolDefinitions';

/**
 * One supervised fine-tuning example: the conversational format of TRL's
 * SFTTrainer and transformers' `apply_chat_template(messages, tools=tools)`.
 * The call's prompt messages plus its completion as the last assistant turn.
 */
export interface SftRecord {
  messages: ChatMessage[];
  tools: ToolDefinition[];
  metadata: {
    rolloutId: string;
    runId: string;
    taskId: string;
    agent: string;
    call: number;
    promptVersion: string | null;
    modelVersion: string | null;
    model: string | null;
    reward: number;
  } & RewardOrigin;
}

/** A call the version filters leave out (the rollout passed because another chosen agent matched). */
export function versionMismatch(call: LlmCall, f: Pick<RolloutFilter, 'promptVersion' | 'modelVersion'>): string | null {
  if (f.promptVersion !== undefined && call.promptVersion !== f.promptVersion) return 'call_other_prompt_version';
  if (f.modelVersion !== undefined && call.modelVersion !== f.modelVersion) return 'call_other_model_version';
  return null;
}

/** Call-level skip reasons: 'call_failed' as is, any chat-template problem as 'call_invalid'. */
export function callSkipReason(call: LlmCall): string | null {
  if (!call.problem) return null;
  return call.problem === 'call_failed' ? 'call_failed' : 'call_invalid';
}

/** The SFT examples of one rollout: one per usable model call of the chosen agents. */
export function sftRecordsOfRollout(
  rollout: SelectedRollout,
  spans: readonly SpanRecord[],
  f: RolloutFilter,
  origin: RewardOrigin,
  skipped: Record<string, number>,
): SftRecord[] {
  const out: SftRecord[] = [];
  for (const call of llmCalls(spans, new Set(f.agents))) {
    const reason = versionMismatch(call, f) ?? callSkipReason(call);
    if (reason) {
      countSkip(skipped, reason);
      continue;
    }
    out.push({
      messages: [...call.prompt, call.completion!],
      tools: call.tools,
      metadata: {
        rolloutId: rollout.id,
        runId: rollout.runId,
        taskId: rollout.taskId,
        agent: call.agent,
        call: call.index,
        promptVersion: call.promptVersion,
        modelVersion: call.modelVersion,
        model: call.model,
        reward: rollout.finalReward,
        reward_source: origin.reward_source,
        penalty: origin.penalty,
      },
    });
  }
  return out;
}
