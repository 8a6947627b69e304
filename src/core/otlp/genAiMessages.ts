import { traceText, type ChatMessageRecord } from '../trace/messages';
import type { OtlpAttrs, OtlpEvent } from './otlpModel';
import { asText, parsedJson, toPlain } from './otlpValues';

/**
 * Chat messages from the shapes instrumentations record them in, as the lab's
 * ChatMessageRecord: OpenTelemetry GenAI's current parts-based messages
 * (`gen_ai.input.messages`), its older indexed attributes (`gen_ai.prompt.N.*`)
 * and events (`gen_ai.content.prompt`, `gen_ai.user.message`, `gen_ai.choice`…),
 * OpenInference's indexed attributes (`llm.input_messages.N.message.*`), and
 * OpenAI-style messages (content and tool_calls).
 */

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

type ToolCall = NonNullable<ChatMessageRecord['tool_calls']>[number];

/** {id, name, arguments} (GenAI) or {id, function: {name, arguments}} (OpenAI). */
function toolCall(v: unknown): ToolCall | null {
  if (!isObj(v)) return null;
  const fn = isObj(v.function) ? v.function : v;
  if (typeof fn.name !== 'string') return null;
  return { id: typeof v.id === 'string' ? v.id : '', name: fn.name, arguments: fn.arguments === undefined ? '{}' : asText(fn.arguments) };
}

/** One message in any of the object shapes: parts-based (current GenAI) or content-based (OpenAI, older GenAI). */
export function messageRecord(v: unknown, defaultRole: string): ChatMessageRecord | null {
  if (typeof v === 'string') return { role: defaultRole, content: v };
  if (!isObj(v)) return null;
  const rec: ChatMessageRecord = { role: typeof v.role === 'string' && v.role ? v.role : defaultRole, content: '' };
  const calls: ToolCall[] = [];
  if (Array.isArray(v.parts)) {
    const text: string[] = [];
    for (const part of v.parts) {
      if (!isObj(part)) continue;
      if (part.type === 'text') text.push(asText(part.content));
      else if (part.type === 'tool_call') {
        const c = toolCall(part);
        if (c) calls.push(c);
      } else if (part.type === 'tool_call_response') {
        if (typeof part.id === 'string') rec.tool_call_id = part.id;
        text.push(asText(part.response));
      } else text.push(JSON.stringify(part));
    }
    rec.content = text.join('');
  } else {
    rec.content = traceText(isObj(v.message) ? v.message.content : v.content);
    const raw = isObj(v.message) ? v.message.tool_calls : v.tool_calls;
    if (Array.isArray(raw)) for (const c of raw.map(toolCall)) if (c) calls.push(c);
  }
  if (calls.length) rec.tool_calls = calls;
  if (typeof v.name === 'string' && v.name) rec.name = v.name;
  if (typeof v.tool_call_id === 'string' && v.tool_call_id) rec.tool_call_id = v.tool_call_id;
  return rec;
}

export function messageList(v: unknown, defaultRole: string): ChatMessageRecord[] | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return [{ role: defaultRole, content: v }];
  const items = Array.isArray(v) ? v : [v];
  const out: ChatMessageRecord[] = [];
  for (const item of items) {
    const m = messageRecord(item, defaultRole);
    if (m) out.push(m);
  }
  return out;
}

/** `gen_ai.system_instructions`: text parts, or a string. */
export function systemInstructions(v: unknown): ChatMessageRecord | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string') return { role: 'system', content: v };
  const parts = Array.isArray(v) ? v : [v];
  const text = parts.map((p) => (isObj(p) && p.type === 'text' ? asText(p.content) : typeof p === 'string' ? p : JSON.stringify(p))).join('');
  return { role: 'system', content: text };
}

/** Finish reasons carried by parts-based output messages (`finish_reason` on each). */
export function outputFinishReasons(v: unknown): string[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((m) => (isObj(m) && typeof m.finish_reason === 'string' ? [m.finish_reason] : []));
}

/**
 * Indexed attributes (`<prefix>.N.<path>`) as one nested object per index:
 * `gen_ai.prompt.0.tool_calls.1.name` → [{tool_calls: [, {name}]}]. Only
 * numeric path segments become array slots; the rest object keys.
 */
export function indexedObjects(attrs: OtlpAttrs, prefix: string): Json[] | null {
  const p = `${prefix}.`;
  let out: Json[] | null = null;
  for (const [key, value] of attrs) {
    if (!key.startsWith(p)) continue;
    const path = key.slice(p.length).split('.');
    const index = Number(path[0]);
    if (!Number.isInteger(index) || index < 0 || index > 10_000 || path.length < 2) continue;
    out ??= [];
    let node: Json = (out[index] ??= Object.create(null) as Json);
    for (let i = 1; i < path.length - 1; i++) {
      const seg = path[i]!;
      if (seg === '__proto__') break;
      node = isObj(node[seg]) ? (node[seg] as Json) : (node[seg] = Object.create(null) as Json);
    }
    const last = path[path.length - 1]!;
    if (last !== '__proto__') node[last] = toPlain(value);
  }
  return out ? Array.from(out, (x) => x ?? {}) : null;
}

/** Numeric-keyed objects ({0: {...}, 1: {...}}) as arrays, in index order. */
function indexedList(v: unknown): Json[] {
  if (!isObj(v)) return [];
  return Object.keys(v)
    .filter((k) => /^\d+$/.test(k))
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => v[k])
    .filter(isObj);
}

/** Older GenAI indexed messages: role, content, tool_calls.M.{id,name,arguments}, tool_call_id. */
export function olderIndexedMessages(attrs: OtlpAttrs, prefix: 'gen_ai.prompt' | 'gen_ai.completion', defaultRole: string): { messages: ChatMessageRecord[]; finishReasons: string[] } | null {
  const objs = indexedObjects(attrs, prefix);
  if (!objs) return null;
  const finishReasons: string[] = [];
  const messages = objs.map((o) => {
    if (typeof o.finish_reason === 'string') finishReasons.push(o.finish_reason);
    return messageRecord({ ...o, tool_calls: indexedList(o.tool_calls) }, defaultRole)!;
  });
  return { messages, finishReasons };
}

/** OpenInference: llm.input_messages.N.message.{role,content,name,tool_call_id,contents.K.message_content.text,tool_calls.M.tool_call.{id,function.name,function.arguments}}. */
export function openInferenceMessages(attrs: OtlpAttrs, prefix: 'llm.input_messages' | 'llm.output_messages', defaultRole: string): ChatMessageRecord[] | null {
  const objs = indexedObjects(attrs, prefix);
  if (!objs) return null;
  return objs.map((o) => {
    const m = isObj(o.message) ? o.message : {};
    const contents = indexedList(m.contents).map((c) => (isObj(c.message_content) && typeof c.message_content.text === 'string' ? c.message_content.text : ''));
    const calls = indexedList(m.tool_calls).map((c) => (isObj(c.tool_call) ? c.tool_call : {}));
    return messageRecord(
      {
        role: m.role,
        content: typeof m.content === 'string' ? m.content : contents.join(''),
        name: m.name,
        tool_call_id: m.tool_call_id,
        tool_calls: calls,
      },
      defaultRole,
    )!;
  });
}

/** Messages from span events (older GenAI conventions); the events they came from are reported so they are not kept twice. */
export function eventMessages(events: readonly OtlpEvent[]): { input: ChatMessageRecord[] | null; output: ChatMessageRecord[] | null; finishReasons: string[]; used: Set<OtlpEvent> } {
  let input: ChatMessageRecord[] | null = null;
  let output: ChatMessageRecord[] | null = null;
  const finishReasons: string[] = [];
  const used = new Set<OtlpEvent>();
  const ROLE_EVENTS: Record<string, string> = { 'gen_ai.system.message': 'system', 'gen_ai.user.message': 'user', 'gen_ai.assistant.message': 'assistant', 'gen_ai.tool.message': 'tool' };
  for (const e of events) {
    const a = e.attributes;
    if (e.name === 'gen_ai.content.prompt') {
      input = messageList(parsedJson(a.get('gen_ai.prompt')), 'user');
      used.add(e);
    } else if (e.name === 'gen_ai.content.completion') {
      output = messageList(parsedJson(a.get('gen_ai.completion')), 'assistant');
      used.add(e);
    } else if (ROLE_EVENTS[e.name]) {
      const role = ROLE_EVENTS[e.name]!;
      const m = messageRecord({ role, content: parsedJson(a.get('content')), tool_calls: parsedJson(a.get('tool_calls')), tool_call_id: a.get('id') }, role);
      if (m) (input ??= []).push(m);
      used.add(e);
    } else if (e.name === 'gen_ai.choice') {
      const msg = parsedJson(a.get('message'));
      const m = messageRecord(isObj(msg) ? msg : { content: msg }, 'assistant');
      if (m) (output ??= []).push(m);
      const fr = a.get('finish_reason');
      if (typeof fr === 'string') finishReasons.push(fr);
      used.add(e);
    }
  }
  return { input, output, finishReasons, used };
}
