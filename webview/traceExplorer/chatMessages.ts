import type { AttributeValue } from '../../src/core/trace/span';

export interface ChatToolCall {
  id: string;
  name: string;
  /** JSON text as the model wrote it. */
  arguments: string;
}

export interface ChatMessage {
  role: string;
  name?: string;
  content: string;
  toolCalls: ChatToolCall[];
  /** On a tool message: the call it answers. */
  toolCallId?: string;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  return JSON.stringify(v);
}

function toolCall(v: unknown): ChatToolCall | null {
  if (!isObject(v)) return null;
  // OpenAI wire shape nests name and arguments under `function`.
  const fn = isObject(v.function) ? v.function : v;
  const name = fn.name;
  if (typeof name !== 'string') return null;
  return { id: typeof v.id === 'string' ? v.id : '', name, arguments: asText(fn.arguments ?? fn.args ?? '') };
}

/** Text of a content that is a string or a list of parts ({type:'text', text|content}). */
function contentText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    return v
      .map((p) => (typeof p === 'string' ? p : isObject(p) && (p.type === 'text' || p.type === undefined) ? asText(p.text ?? p.content) : ''))
      .filter(Boolean)
      .join('\n');
  }
  return asText(v);
}

function message(v: unknown): ChatMessage | null {
  if (!isObject(v) || typeof v.role !== 'string') return null;
  const msg: ChatMessage = { role: v.role, content: contentText(v.content), toolCalls: [] };
  if (typeof v.name === 'string') msg.name = v.name;
  if (typeof v.tool_call_id === 'string') msg.toolCallId = v.tool_call_id;
  if (Array.isArray(v.tool_calls)) {
    for (const c of v.tool_calls) {
      const call = toolCall(c);
      if (call) msg.toolCalls.push(call);
    }
  }
  // OpenTelemetry GenAI shape: {role, parts: [{type:'text'}, {type:'tool_call'}, {type:'tool_call_response'}]}.
  if (Array.isArray(v.parts)) {
    const text: string[] = [];
    for (const p of v.parts) {
      if (!isObject(p)) continue;
      if (p.type === 'text') text.push(asText(p.content ?? p.text));
      else if (p.type === 'tool_call') {
        const call = toolCall(p);
        if (call) msg.toolCalls.push(call);
      } else if (p.type === 'tool_call_response') {
        if (typeof p.id === 'string') msg.toolCallId = p.id;
        text.push(asText(p.response ?? p.result));
      }
    }
    if (text.length) msg.content = [msg.content, ...text].filter(Boolean).join('\n');
  }
  return msg;
}

/**
 * The messages of `gen_ai.input.messages` / `gen_ai.output.messages`: the
 * tracer's JSON (role, content, tool_calls, tool_call_id), the OpenAI wire
 * shape and the OpenTelemetry parts shape. null when the value is not a
 * message list, so the caller can show it raw.
 */
/** A span attribute that holds JSON text, parsed; null when it is not a string of valid JSON. */
export function parseJsonAttribute(value: AttributeValue | undefined): unknown {
  if (typeof value !== 'string') return null;
  try {
    return JSON.parse(value);
  } catch {
    return null;
  }
}

export function parseChatMessages(value: AttributeValue | undefined): ChatMessage[] | null {
  const data = parseJsonAttribute(value);
  if (data === null) return null;
  if (!Array.isArray(data)) return null;
  const out: ChatMessage[] = [];
  for (const m of data) {
    const msg = message(m);
    if (!msg) return null;
    out.push(msg);
  }
  return out;
}
