import { modelCallIndex, requestingCall } from '../../../reward/air';
import { Attr, type SpanRecord } from '../../../trace/span';
import type { ChatMessage, ToolCall } from './chatMessages';
import { llmCalls, orderedSpans, type LlmCall } from './llmCalls';
import type { RewardOrigin, RewardPenalty, RewardSource } from './rewardPenalty';
import { countSkip, type RolloutFilter, type SelectedRollout } from './rolloutSelection';
import { callSkipReason, versionMismatch } from './sftAdapter';
import type { ToolDefinition } from './toolDefinitions';

export type CreditScheme = 'equal' | 'last' | 'discounted';
export const CREDIT_SCHEMES: readonly CreditScheme[] = ['equal', 'last', 'discounted'];
export const DEFAULT_GAMMA = 0.9;

/**
 * One RL transition: a model call of an agent with the reward it is credited
 * with. Records of one task form a GRPO group (`group`).
 */
export interface RlRecord {
  group: string;
  rolloutId: string;
  agent: string;
  /** Position among the rollout's model calls. */
  call: number;
  messages: ChatMessage[];
  completion: { text: string; tool_calls: ToolCall[] };
  tools: ToolDefinition[];
  token_ids: number[] | null;
  logprobs: number[] | null;
  /** credited share of the final reward + air. */
  reward: number;
  final_reward: number;
  /** Whether final_reward is a score, the no-output reward, or a penalty (then `penalty` says why). */
  reward_source: RewardSource;
  penalty: RewardPenalty | null;
  credit: CreditScheme;
  /** Sum of the AIR intermediate rewards attributed to this call. */
  air: number;
  metadata: { runId: string; agentCall: number; agentCalls: number; promptVersion: string | null; modelVersion: string | null; model: string | null };
}

/**
 * The share of the final reward a call gets: all of it on every call
 * ('equal'), all of it on the agent's last call only ('last'), or discounted
 * by how many of the agent's calls come after it ('discounted').
 */
export function creditedReward(finalReward: number, agentIndex: number, agentCalls: number, scheme: CreditScheme, gamma = DEFAULT_GAMMA): number {
  const after = agentCalls - 1 - agentIndex;
  if (scheme === 'last') return after === 0 ? finalReward : 0;
  if (scheme === 'discounted') return Math.pow(gamma, after) * finalReward;
  return finalReward;
}

/**
 * AIR rewards per model call (by span id). The runner hangs each intermediate
 * reward under the span that earned it: a tool span or an agent's node span.
 * A tool's reward goes to the model call that asked for it, whichever node
 * ran the tool (requestingCall: the call whose answer lists the tool call's
 * id, else the latest call of the rollout that finished before the tool
 * started). A node's reward goes to the agent's last call that started
 * before the node ended — the answer the node parsed — or to its first call
 * when none did.
 */
export function airByCall(spans: readonly SpanRecord[]): Map<string, number> {
  const ordered = orderedSpans(spans);
  const byId = new Map(ordered.map((s) => [s.spanId, s]));
  const index = modelCallIndex(ordered);
  const callsOf = new Map<string, SpanRecord[]>();
  for (const s of ordered) {
    const agent = s.attributes[Attr.agentName];
    if (s.kind !== 'llm' || typeof agent !== 'string') continue;
    const list = callsOf.get(agent) ?? [];
    list.push(s);
    callsOf.set(agent, list);
  }
  const out = new Map<string, number>();
  for (const r of ordered) {
    if (r.kind !== 'reward' || r.attributes[Attr.rewardKind] !== 'intermediate') continue;
    const value = r.attributes[Attr.rewardValue];
    if (typeof value !== 'number') continue;
    const target = r.parentSpanId ? byId.get(r.parentSpanId) : undefined;
    const asked = target?.kind === 'tool' ? requestingCall(target, index)?.call : null;
    if (asked) {
      out.set(asked.spanId, (out.get(asked.spanId) ?? 0) + value);
      continue;
    }
    const agent = r.attributes[Attr.agentName] ?? target?.attributes[Attr.agentName];
    const calls = typeof agent === 'string' ? callsOf.get(agent) : undefined;
    if (!calls?.length) continue;
    // A reward emitted from inside the agent (emit_reward) lies within its span: the call before the reward, not before the span's end.
    const until = Math.min(target?.endTime ?? Infinity, r.startTime);
    const before = calls.filter((c) => c.startTime <= until);
    const call = before[before.length - 1] ?? calls[0]!;
    out.set(call.spanId, (out.get(call.spanId) ?? 0) + value);
  }
  return out;
}

export interface RlOptions {
  credit: CreditScheme;
  gamma: number;
}

function toRecord(rollout: SelectedRollout, call: LlmCall, air: number, o: RlOptions, origin: RewardOrigin): RlRecord {
  const done = call.completion!;
  const credited = creditedReward(rollout.finalReward, call.agentIndex, call.agentCalls, o.credit, o.gamma);
  return {
    group: rollout.taskId,
    rolloutId: rollout.id,
    agent: call.agent,
    call: call.index,
    messages: call.prompt,
    completion: { text: done.content, tool_calls: done.tool_calls ?? [] },
    tools: call.tools,
    token_ids: call.tokenIds,
    logprobs: call.logprobs,
    reward: credited + air,
    final_reward: rollout.finalReward,
    reward_source: origin.reward_source,
    penalty: origin.penalty,
    credit: o.credit,
    air,
    metadata: {
      runId: rollout.runId,
      agentCall: call.agentIndex,
      agentCalls: call.agentCalls,
      promptVersion: call.promptVersion,
      modelVersion: call.modelVersion,
      model: call.model,
    },
  };
}

/** The RL transitions of one rollout, in call order. */
export function rlRecordsOfRollout(
  rollout: SelectedRollout,
  spans: readonly SpanRecord[],
  f: RolloutFilter,
  o: RlOptions,
  origin: RewardOrigin,
  skipped: Record<string, number>,
): RlRecord[] {
  const air = airByCall(spans);
  const out: RlRecord[] = [];
  for (const call of llmCalls(spans, new Set(f.agents))) {
    const reason = versionMismatch(call, f) ?? callSkipReason(call);
    if (reason) {
      countSkip(skipped, reason);
      continue;
    }
    out.push(toRecord(rollout, call, air.get(call.span.spanId) ?? 0, o, origin));
  }
  return out;
}
