import { createHash } from 'node:crypto';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type OpenAI from 'openai';

type WireToolCall = OpenAI.Chat.ChatCompletionMessageToolCall;

export interface UniqueToolCalls {
  calls: WireToolCall[];
  /** The server's ids, in call order ("" where it sent none), when any was replaced; null when all were kept. */
  originalIds: string[] | null;
}

/** Every tool-call id the conversation already uses: asked for by an assistant message or answered by a tool message. */
export function toolCallIdsIn(messages: readonly BaseMessage[]): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) {
    if (AIMessage.isInstance(m)) {
      for (const c of m.tool_calls ?? []) if (c.id) ids.add(c.id);
      for (const c of m.invalid_tool_calls ?? []) if (c.id) ids.add(c.id);
    } else if (ToolMessage.isInstance(m) && m.tool_call_id) {
      ids.add(m.tool_call_id);
    }
  }
  return ids;
}

/** The same for a conversation in OpenAI's wire format (what an outside agent sends the gateway). */
export function toolCallIdsInWire(messages: readonly OpenAI.Chat.ChatCompletionMessageParam[]): Set<string> {
  const ids = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') for (const c of m.tool_calls ?? []) if (c.id) ids.add(c.id);
    if (m.role === 'tool' && m.tool_call_id) ids.add(m.tool_call_id);
  }
  return ids;
}

/**
 * Gives each tool call of a response an id unique in the conversation.
 * Servers send "" (llama.cpp), none at all, the same id twice, or restart at
 * `call_0` every response; LangGraph's ToolNode skips a call whose id already
 * has a result, so such ids silently stop every tool loop after its first round.
 * A server id that is present and new is kept. A replacement is 9 letters and
 * digits (what strict chat templates such as Mistral's accept), derived from the
 * caller (agents running in parallel make the same first call), the call and
 * its position, so a replayed rollout gets the same ids.
 */
export function uniqueToolCallIds(calls: readonly WireToolCall[], taken: ReadonlySet<string>, caller = ''): UniqueToolCalls {
  const used = new Set(taken);
  let replaced = false;
  const out = calls.map((call, index) => {
    const id = typeof call.id === 'string' ? call.id : '';
    if (id.trim() && !used.has(id)) {
      used.add(id);
      return call;
    }
    replaced = true;
    const fresh = freshId(call, index, used, caller);
    used.add(fresh);
    return { ...call, id: fresh };
  });
  return { calls: out, originalIds: replaced ? calls.map((c) => (typeof c.id === 'string' ? c.id : '')) : null };
}

function freshId(call: WireToolCall, index: number, used: ReadonlySet<string>, caller: string): string {
  const what = call.type === 'function' ? `${call.function.name}\u0000${call.function.arguments}` : call.type;
  for (let attempt = 0; ; attempt++) {
    const id = createHash('sha256').update(`${caller}\u0000${used.size}\u0000${index}\u0000${attempt}\u0000${what}`).digest('hex').slice(0, 9);
    if (!used.has(id)) return id;
  }
}
