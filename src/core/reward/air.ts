import type { AirRule } from '../config/schema';
import { requestedToolCalls } from '../trace/requestedToolCalls';
import { Attr, type SpanRecord } from '../trace/span';

/** One firing of an AIR rule on one span: an intermediate reward. */
export interface AirReward {
  rule: string;
  when: AirRule['when'];
  spanId: string;
  /** The agent credited: for a tool call, the agent whose model call asked for it (wherever the tool ran). */
  agent: string | null;
  tool: string | null;
  reward: number;
  /** The model call (llm span) a tool span's reward is credited to; null for a node's reward, or when no call came before the tool. */
  callSpanId: string | null;
  /** How that call was found: it lists the tool's call id, or (without a matching id) it is the latest call that finished before the tool started. */
  credit: AirCredit | null;
}

export type AirCredit = 'tool_call_id' | 'preceding_call';

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function eventOf(span: SpanRecord): AirRule['when'] | null {
  if (span.kind === 'tool') return span.status === 'error' ? 'tool.error' : 'tool.ok';
  if (span.kind === 'node') {
    const ok = span.attributes[Attr.outputOk];
    if (ok === true) return 'output.valid';
    if (ok === false) return 'output.invalid';
  }
  return null;
}

/** What crediting a tool span reads from its rollout: the model calls by the ids of the tool calls they asked for, and every finished call by end time. */
export interface ModelCallIndex {
  byToolCallId: ReadonlyMap<string, readonly SpanRecord[]>;
  /** Model calls that returned an answer, ordered by end time. */
  finished: readonly SpanRecord[];
}

export function modelCallIndex(spans: readonly SpanRecord[]): ModelCallIndex {
  const byToolCallId = new Map<string, SpanRecord[]>();
  const finished: SpanRecord[] = [];
  for (const s of spans) {
    if (s.kind !== 'llm') continue;
    if (s.status !== 'error') finished.push(s);
    for (const { id } of requestedToolCalls(s)) {
      const list = byToolCallId.get(id) ?? [];
      list.push(s);
      byToolCallId.set(id, list);
    }
  }
  finished.sort((a, b) => a.endTime - b.endTime);
  return { byToolCallId, finished };
}

/**
 * The model call a tool span's reward is credited to: the one whose answer
 * lists the tool span's `gen_ai.tool.call.id` (the latest that started before
 * the tool, should an id repeat); without an id that any call lists (a graph
 * node that runs the SQL or code a model wrote as text), the latest call of
 * the rollout, by any agent, that finished before the tool started. Null when
 * no call came before it.
 */
export function requestingCall(tool: SpanRecord, index: ModelCallIndex): { call: SpanRecord; credit: AirCredit } | null {
  const id = tool.attributes[Attr.toolCallId];
  const calls = typeof id === 'string' && id ? index.byToolCallId.get(id) : undefined;
  if (calls?.length) {
    const before = calls.filter((c) => c.startTime <= tool.startTime).sort((a, b) => a.startTime - b.startTime);
    return { call: before[before.length - 1] ?? calls[0]!, credit: 'tool_call_id' };
  }
  let preceding: SpanRecord | undefined;
  for (const c of index.finished) {
    if (c.endTime > tool.startTime) break;
    preceding = c;
  }
  return preceding ? { call: preceding, credit: 'preceding_call' } : null;
}

/**
 * Applies AIR (automatic intermediate reward) rules to a rollout's spans:
 * each tool call and each parsed agent answer may earn a small positive or
 * negative reward, which the RL adapters later add to the credited final
 * reward. A tool call's reward belongs to the model call that asked for it
 * (requestingCall: by tool-call id, else the call that finished last before
 * the tool started) and to that call's agent, whichever graph node ran the
 * tool — a user graph often runs tools in a node of their own; when no call
 * came before the tool, it belongs to the agent of the node that ran it.
 */
export function applyAirRules(rules: readonly AirRule[], spans: readonly SpanRecord[]): AirReward[] {
  const out: AirReward[] = [];
  if (!rules.length) return out;
  const index = spans.some((s) => s.kind === 'tool') ? modelCallIndex(spans) : null;
  for (const span of spans) {
    const event = eventOf(span);
    if (!event) continue;
    const asked = span.kind === 'tool' && index ? requestingCall(span, index) : null;
    const agent = str(asked?.call.attributes[Attr.agentName]) ?? str(span.attributes[Attr.agentName]);
    const tool = str(span.attributes[Attr.toolName]);
    for (const rule of rules) {
      if (rule.when !== event) continue;
      if (rule.agents && (!agent || !rule.agents.includes(agent))) continue;
      if (rule.tools && (!tool || !rule.tools.includes(tool))) continue;
      out.push({ rule: rule.name, when: rule.when, spanId: span.spanId, agent, tool, reward: rule.reward, callSpanId: asked?.call.spanId ?? null, credit: asked?.credit ?? null });
    }
  }
  return out;
}

/** Sum of intermediate rewards per agent. */
export function airTotalsByAgent(rewards: readonly AirReward[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const r of rewards) {
    const key = r.agent ?? '(graph)';
    totals[key] = (totals[key] ?? 0) + r.reward;
  }
  return totals;
}
