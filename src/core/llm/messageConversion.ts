import {
  AIMessage,
  ChatMessage,
  ToolMessage,
  type BaseMessage,
  type InvalidToolCall,
  type MessageContent,
  type ToolCall,
} from '@langchain/core/messages';
import type OpenAI from 'openai';

type OpenAIMessage = OpenAI.Chat.ChatCompletionMessageParam;
type OpenAIToolCall = OpenAI.Chat.ChatCompletionMessageFunctionToolCall;

/** LangChain messages in the OpenAI chat format, tool calls and tool results included. */
export function toOpenAIMessages(messages: BaseMessage[]): OpenAIMessage[] {
  return messages.map(toOpenAIMessage);
}

function toOpenAIMessage(m: BaseMessage): OpenAIMessage {
  const text = contentText(m.content);
  switch (m.type) {
    case 'system':
      return { role: 'system', content: text };
    case 'developer':
      return { role: 'developer', content: text };
    case 'human':
      return { role: 'user', content: text, ...(m.name ? { name: m.name } : {}) };
    case 'ai': {
      const calls = AIMessage.isInstance(m) ? (m.tool_calls ?? []) : [];
      if (!calls.length) return { role: 'assistant', content: text };
      return {
        role: 'assistant',
        // Some servers reject an empty string next to tool calls; null is the protocol's "no text".
        content: text || null,
        tool_calls: calls.map(
          (c, i): OpenAIToolCall => ({
            id: c.id ?? `call_${i}`,
            type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
          }),
        ),
      };
    }
    case 'tool':
      return { role: 'tool', content: text, tool_call_id: ToolMessage.isInstance(m) ? m.tool_call_id : '' };
    default: {
      const role = ChatMessage.isInstance(m) ? m.role : 'user';
      if (role === 'assistant' || role === 'system' || role === 'developer') return { role, content: text };
      return { role: 'user', content: text };
    }
  }
}

/** Plain text of a message's content; non-text parts (images) are left out. */
export function contentText(content: MessageContent): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) => {
      if (typeof part === 'string') return part;
      const p = part as { type?: string; text?: unknown };
      return p.type === 'text' && typeof p.text === 'string' ? p.text : '';
    })
    .join('');
}

/** OpenAI tool calls as LangChain ones; calls whose arguments are not JSON become invalid tool calls. */
export function fromOpenAIToolCalls(calls: OpenAI.Chat.ChatCompletionMessageToolCall[] | undefined): {
  toolCalls: ToolCall[];
  invalidToolCalls: InvalidToolCall[];
} {
  const toolCalls: ToolCall[] = [];
  const invalidToolCalls: InvalidToolCall[] = [];
  for (const c of calls ?? []) {
    if (c.type !== 'function') continue;
    const raw = c.function.arguments || '{}';
    try {
      const args: unknown = JSON.parse(raw);
      if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new Error('arguments are not a JSON object');
      toolCalls.push({ id: c.id, name: c.function.name, args: args as Record<string, unknown>, type: 'tool_call' });
    } catch (err) {
      invalidToolCalls.push({
        id: c.id,
        name: c.function.name,
        args: raw,
        error: err instanceof Error ? err.message : String(err),
        type: 'invalid_tool_call',
      });
    }
  }
  return { toolCalls, invalidToolCalls };
}
