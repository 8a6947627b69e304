import { Attr, type SpanRecord } from './span';

/** A tool call a model call's answer asked for. */
export interface RequestedToolCall {
  id: string;
  name: unknown;
  /** The arguments as the model wrote them (a JSON string), when it did. */
  arguments: string | undefined;
}

const cache = new WeakMap<SpanRecord, { raw: string; calls: readonly RequestedToolCall[] }>();

/**
 * The tool calls (with an id) an llm span's answer asks for, from its
 * `gen_ai.output.messages`. Parsed once per answer — a rollout's tool spans
 * each look through all its calls — and keyed by the answer's text too, since
 * a live call's span gets its answer when it ends. Most answers ask for no
 * tool: those are not parsed at all.
 */
export function requestedToolCalls(call: SpanRecord): readonly RequestedToolCall[] {
  const raw = call.attributes[Attr.outputMessages];
  if (typeof raw !== 'string' || !raw.includes('tool_calls')) return [];
  const cached = cache.get(call);
  if (cached?.raw === raw) return cached.calls;
  let messages: unknown;
  try {
    messages = JSON.parse(raw);
  } catch {
    messages = null;
  }
  const calls: RequestedToolCall[] = [];
  for (const m of Array.isArray(messages) ? (messages as Array<{ tool_calls?: Array<{ id?: unknown; name?: unknown; arguments?: unknown }> }>) : []) {
    for (const c of Array.isArray(m?.tool_calls) ? m.tool_calls : []) {
      if (typeof c?.id === 'string' && c.id) calls.push({ id: c.id, name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : undefined });
    }
  }
  cache.set(call, { raw, calls });
  return calls;
}
