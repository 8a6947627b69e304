import type { ChatMessageRecord } from '../../../trace/messages';
import { Attr, type SpanRecord } from '../../../trace/span';
import { conversationProblem, mergeUserRuns, toChatMessage, type ChatMessage } from './chatMessages';
import { researchLabToolDefinition, toolDefinition, type ToolDefinition } from './toolDefinitions';

/** One model call of an agent in a rollout, read back from its `llm` span. */
export interface LlmCall {
  span: SpanRecord;
  agent: string;
  /** Position among all the rollout's model calls, in start order. */
  index: number;
  /** Position among this agent's calls in the rollout, and how many it made. */
  agentIndex: number;
  agentCalls: number;
  /** The prompt messages, consecutive user turns merged. */
  prompt: ChatMessage[];
  /** The model's answer; null when the call failed or recorded none. */
  completion: ChatMessage | null;
  tools: ToolDefinition[];
  promptVersion: string | null;
  modelVersion: string | null;
  model: string | null;
  tokenIds: number[] | null;
  logprobs: number[] | null;
  /** Why the call cannot be a training example ('call_failed' or what a chat template would reject); null when it can. */
  problem: string | null;
}

function str(v: unknown): string | null {
  return typeof v === 'string' && v ? v : null;
}

function numbers(v: unknown): number[] | null {
  return Array.isArray(v) && v.length && v.every((x) => typeof x === 'number') ? (v as number[]) : null;
}

function parseJson(v: unknown): unknown {
  if (typeof v !== 'string') return null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
}

function messagesOf(v: unknown): ChatMessage[] | null {
  const parsed = parseJson(v);
  if (!Array.isArray(parsed)) return null;
  return parsed.map((m) => toChatMessage(m as ChatMessageRecord));
}

/** The tools the call was given; failing that, the research-lab tools its conversation used. */
function toolsOf(span: SpanRecord, conversation: ChatMessage[]): ToolDefinition[] {
  const recorded = parseJson(span.attributes['gen_ai.request.tools']);
  if (Array.isArray(recorded) && recorded.length) return recorded.map(toolDefinition).filter((t): t is ToolDefinition => t !== null);
  const names = [...new Set(conversation.flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name)))];
  return names.map(researchLabToolDefinition).filter((t): t is ToolDefinition => t !== null);
}

/** Spans in a fixed order: start time, then span id (getSpans sorts by start time only). */
export function orderedSpans(spans: readonly SpanRecord[]): SpanRecord[] {
  return [...spans].sort((a, b) => a.startTime - b.startTime || (a.spanId < b.spanId ? -1 : a.spanId > b.spanId ? 1 : 0));
}

/** The model calls of the given agents in one rollout's spans, in start order. */
export function llmCalls(spans: readonly SpanRecord[], agents: ReadonlySet<string>): LlmCall[] {
  // A call recorded twice that could not be matched is flagged on the framework's copy: the gateway's copy is the row.
  const all = orderedSpans(spans).filter((s) => s.kind === 'llm' && s.attributes[Attr.unmatchedCall] !== true);
  const perAgent = new Map<string, number>();
  for (const s of all) {
    const agent = str(s.attributes[Attr.agentName]);
    if (agent) perAgent.set(agent, (perAgent.get(agent) ?? 0) + 1);
  }
  const seen = new Map<string, number>();
  const calls: LlmCall[] = [];
  all.forEach((span, index) => {
    const agent = str(span.attributes[Attr.agentName]);
    if (!agent) return;
    const agentIndex = seen.get(agent) ?? 0;
    seen.set(agent, agentIndex + 1);
    if (!agents.has(agent)) return;
    const prompt = messagesOf(span.attributes[Attr.inputMessages]);
    const output = messagesOf(span.attributes[Attr.outputMessages]);
    const completion = span.status === 'error' ? null : (output?.[0] ?? null);
    const merged = prompt ? mergeUserRuns(prompt) : [];
    let problem: string | null = null;
    if (!completion) problem = 'call_failed';
    else if (!prompt) problem = 'the span has no readable prompt messages';
    else if (completion.role !== 'assistant') problem = `the completion has role "${completion.role}"`;
    else problem = conversationProblem([...merged, completion]);
    calls.push({
      span,
      agent,
      index,
      agentIndex,
      agentCalls: perAgent.get(agent) ?? 1,
      prompt: merged,
      completion,
      tools: toolsOf(span, completion ? [...merged, completion] : merged),
      promptVersion: str(span.attributes[Attr.promptVersion]),
      modelVersion: str(span.attributes[Attr.modelVersion]),
      model: str(span.attributes[Attr.responseModel]) ?? str(span.attributes[Attr.requestModel]),
      tokenIds: numbers(span.attributes[Attr.tokenIds]),
      logprobs: numbers(span.attributes[Attr.logprobs]),
      problem,
    });
  });
  return calls;
}
