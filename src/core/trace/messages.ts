import type { BaseMessage } from '@langchain/core/messages';

/** A chat message as GenAI semantic conventions and OpenAI record it. */
export interface ChatMessageRecord {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  content: string;
  name?: string;
  tool_calls?: Array<{ id: string; name: string; arguments: string }>;
  tool_call_id?: string;
}

const ROLE: Record<string, string> = { human: 'user', ai: 'assistant', system: 'system', tool: 'tool', generic: 'user', developer: 'system' };

/** Message content as text for a trace: non-text parts are kept as JSON rather than dropped. */
export function traceText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof part?.text === 'string' ? part.text : JSON.stringify(part)))
      .join('');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

export function toMessageRecord(msg: BaseMessage): ChatMessageRecord {
  const type = msg.getType();
  const rec: ChatMessageRecord = { role: ROLE[type] ?? type, content: traceText(msg.content) };
  if (msg.name) rec.name = msg.name;
  const calls = (msg as { tool_calls?: Array<{ id?: string; name: string; args: unknown }> }).tool_calls;
  if (calls?.length) {
    rec.tool_calls = calls.map((c) => ({ id: c.id ?? '', name: c.name, arguments: JSON.stringify(c.args ?? {}) }));
  }
  const toolCallId = (msg as { tool_call_id?: string }).tool_call_id;
  if (toolCallId) rec.tool_call_id = toolCallId;
  return rec;
}

/** A message in OpenAI's wire format (what an outside agent sends the recording gateway), as recorded. */
export function wireMessageRecord(msg: { role: string; content?: unknown; name?: unknown; tool_calls?: unknown; tool_call_id?: unknown }): ChatMessageRecord {
  const rec: ChatMessageRecord = { role: msg.role === 'developer' ? 'system' : msg.role, content: traceText(msg.content) };
  if (typeof msg.name === 'string' && msg.name) rec.name = msg.name;
  const calls = Array.isArray(msg.tool_calls) ? (msg.tool_calls as Array<{ id?: unknown; function?: { name?: unknown; arguments?: unknown } }>) : [];
  if (calls.length) {
    rec.tool_calls = calls.map((c) => ({
      id: typeof c.id === 'string' ? c.id : '',
      name: typeof c.function?.name === 'string' ? c.function.name : '',
      arguments: typeof c.function?.arguments === 'string' ? c.function.arguments : JSON.stringify(c.function?.arguments ?? {}),
    }));
  }
  if (typeof msg.tool_call_id === 'string' && msg.tool_call_id) rec.tool_call_id = msg.tool_call_id;
  return rec;
}
