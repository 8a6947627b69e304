import { z } from 'zod';

/**
 * The part of an OpenAI chat completions request the simulator reads. Loose
 * objects: clients send fields the simulator ignores (user, metadata, ...).
 */
const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const Content = z.union([z.string(), z.array(ContentPart), z.null()]).optional();

const ToolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function').default('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const Message = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content: Content }),
  z.looseObject({ role: z.literal('developer'), content: Content }),
  z.looseObject({ role: z.literal('user'), content: Content }),
  z.looseObject({ role: z.literal('assistant'), content: Content, tool_calls: z.array(ToolCall).optional() }),
  z.looseObject({ role: z.literal('tool'), content: Content, tool_call_id: z.string() }),
]);

const Tool = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
});

const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
]);

export const SimChatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(Message).min(1),
  tools: z.array(Tool).optional(),
  tool_choice: ToolChoice.optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  return_token_ids: z.boolean().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  seed: z.number().int().nullish(),
  response_format: z.looseObject({ type: z.string() }).nullish(),
});

export type SimChatRequest = z.output<typeof SimChatRequestSchema>;
export type SimMessage = SimChatRequest['messages'][number];
export type SimTool = NonNullable<SimChatRequest['tools']>[number];

export function messageText(m: SimMessage): string {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (!c) return '';
  return c.map((p) => p.text ?? '').join('');
}

/** The whole conversation as text: what seeds an answer, so the same conversation always gets the same one. */
export function conversationFingerprint(req: SimChatRequest): string {
  return req.messages.map((m) => `${m.role}:${messageText(m)}`).join('\n');
}
