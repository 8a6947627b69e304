import type { ChatMessageRecord } from '../../../trace/messages';

/**
 * Chat messages in the shape Hugging Face chat templates and TRL read: the
 * OpenAI form, with tool calls as `{id, type: 'function', function: {name,
 * arguments}}` and `arguments` a JSON string.
 */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: ChatRole;
  content: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

const ROLES: readonly string[] = ['system', 'user', 'assistant', 'tool'];

/** A traced message in training form; keys always in the same order so exports are byte-stable. */
export function toChatMessage(rec: ChatMessageRecord): ChatMessage {
  const msg: ChatMessage = { role: rec.role as ChatRole, content: typeof rec.content === 'string' ? rec.content : '' };
  if (rec.tool_calls?.length) {
    msg.tool_calls = rec.tool_calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
  }
  if (rec.tool_call_id !== undefined) msg.tool_call_id = rec.tool_call_id;
  return msg;
}

/**
 * Consecutive user messages (a briefing followed by the turn-limit note) become
 * one: templates such as Llama 2's and Mistral's reject two user turns in a row.
 */
export function mergeUserRuns(messages: ChatMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    const prev = out[out.length - 1];
    if (prev && prev.role === 'user' && m.role === 'user') out[out.length - 1] = { role: 'user', content: `${prev.content}\n\n${m.content}` };
    else out.push(m);
  }
  return out;
}

function argumentsProblem(args: unknown): string | null {
  if (typeof args !== 'string') return 'tool-call arguments are not a JSON string';
  try {
    const v: unknown = JSON.parse(args);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? null : 'tool-call arguments are not a JSON object';
  } catch {
    return 'tool-call arguments are not valid JSON';
  }
}

/**
 * What a chat template needs of a conversation, checked: an optional system
 * message first; then user first; user and assistant turns alternating;
 * tool messages only after an assistant message with tool calls, each
 * answering one of its call ids once, all calls answered before the next
 * turn; ids unique; arguments JSON object strings; an assistant message with
 * no tool calls has text; the conversation ends with the assistant. Returns
 * the first problem, or null.
 */
export function conversationProblem(messages: readonly ChatMessage[]): string | null {
  if (!messages.length) return 'no messages';
  const seenIds = new Set<string>();
  let open: Set<string> | null = null; // calls of the latest assistant message not yet answered
  let prev: ChatMessage | null = null;
  for (const [i, m] of messages.entries()) {
    if (!ROLES.includes(m.role)) return `message ${i} has role "${m.role}"`;
    if (typeof m.content !== 'string') return `message ${i} has no text content`;
    if (m.role === 'system') {
      if (i !== 0) return `message ${i} is a system message after the start`;
    } else if (m.role === 'tool') {
      if (!open) return `message ${i} is a tool result with no assistant tool call before it`;
      if (!m.tool_call_id || !open.has(m.tool_call_id)) return `message ${i} answers tool call "${m.tool_call_id ?? ''}", which the assistant did not make or was answered already`;
      open.delete(m.tool_call_id);
    } else {
      if (open?.size) return `message ${i} (${m.role}) comes before every tool call of the assistant was answered`;
      open = null;
      if (m.role === 'user') {
        if (prev?.role === 'user') return `messages ${i - 1} and ${i} are two user turns in a row`;
      } else {
        if (!prev || prev.role === 'system') return 'the conversation starts with the assistant, not the user';
        if (prev.role === 'assistant') return `messages ${i - 1} and ${i} are two assistant turns in a row`;
        if (m.tool_calls?.length) {
          open = new Set();
          for (const c of m.tool_calls) {
            if (c.type !== 'function' || !c.function?.name) return `message ${i} has a tool call without a function name`;
            if (!c.id) return `message ${i} has a tool call without an id`;
            if (seenIds.has(c.id)) return `tool call id "${c.id}" is used twice`;
            const bad = argumentsProblem(c.function.arguments);
            if (bad) return `message ${i}: ${bad}`;
            seenIds.add(c.id);
            open.add(c.id);
          }
        } else if (!m.content.trim()) {
          return `message ${i} is an assistant message with neither text nor tool calls`;
        }
      }
    }
    prev = m;
  }
  return prev?.role === 'assistant' ? null : 'the conversation does not end with an assistant message';
}
