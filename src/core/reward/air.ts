import type { AirRule } from '../config/schema';
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
  /** The model call (llm span) that asked for the tool call, when its id says so; null otherwise. */
  callSpanId: string | null;
}

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

/** Model calls by the ids of the tool calls they asked for (`gen_ai.output.messages` tool_calls). */
export type ToolCallRequests = ReadonlyMap<string, readonly SpanRecord[]>;

export function toolCallRequests(spans: readonly SpanRecord[]): ToolCallRequests {
  const out = new Map<string, SpanRecord[]>();
  for (const s of spans) {
    if (s.kind !== 'llm') continue;
    const raw = s.attributes[Attr.outputMessages];
    if (typeof raw !== 'string' || !raw.includes('tool_calls')) continue;
    let messages: unknown;
    try {
      messages = JSON.parse(raw);
    } catch {
      continue;
    }
    if (!Array.isArray(messages)) continue;
    for (const m of messages as Array<{ tool_calls?: Array<{ id?: unknown }> }>) {
      for (const c of Array.isArray(m?.tool_calls) ? m.tool_calls : []) {
        if (typeof c?.id !== 'string' || !c.id) continue;
        const list = out.get(c.id) ?? [];
        list.push(s);
        out.set(c.id, list);
      }
    }
  }
  return out;
}

/**
 * The model call that asked for a tool span's call: the one whose answer
 * lists the tool span's `gen_ai.tool.call.id` (the latest that started before
 * the tool, should an id repeat); null when the span has no id or no call
 * lists it.
 */
export function requestingCall(tool: SpanRecord, requests: ToolCallRequests): SpanRecord | null {
  const id = tool.attributes[Attr.toolCallId];
  if (typeof id !== 'string' || !id) return null;
  const calls = requests.get(id);
  if (!calls?.length) return null;
  const before = calls.filter((c) => c.startTime <= tool.startTime).sort((a, b) => a.startTime - b.startTime);
  return before[before.length - 1] ?? calls[0]!;
}

/**
 * Applies AIR (automatic intermediate reward) rules to a rollout's spans:
 * each tool call and each parsed agent answer may earn a small positive or
 * negative reward, which the RL adapters later add to the credited final
 * reward. A tool call's reward belongs to the agent whose model call asked
 * for it (matched by tool-call id), whichever graph node ran the tool — a
 * user graph often runs tools in a node of their own; without a matching id
 * it belongs to the agent of the node that ran it.
 */
export function applyAirRules(rules: readonly AirRule[], spans: readonly SpanRecord[]): AirReward[] {
  const out: AirReward[] = [];
  if (!rules.length) return out;
  const requests = spans.some((s) => s.kind === 'tool') ? toolCallRequests(spans) : new Map<string, SpanRecord[]>();
  for (const span of spans) {
    const event = eventOf(span);
    if (!event) continue;
    const call = span.kind === 'tool' ? requestingCall(span, requests) : null;
    const agent = str(call?.attributes[Attr.agentName]) ?? str(span.attributes[Attr.agentName]);
    const tool = str(span.attributes[Attr.toolName]);
    for (const rule of rules) {
      if (rule.when !== event) continue;
      if (rule.agents && (!agent || !rule.agents.includes(agent))) continue;
      if (rule.tools && (!tool || !rule.tools.includes(tool))) continue;
      out.push({ rule: rule.name, when: rule.when, spanId: span.spanId, agent, tool, reward: rule.reward, callSpanId: call?.spanId ?? null });
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
