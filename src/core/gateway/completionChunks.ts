import type OpenAI from 'openai';

type Chunk = Record<string, unknown>;

/**
 * A finished completion as the chunks OpenAI streams (`stream: true`): per
 * choice a role chunk, the content, each tool call whole (index, id, name,
 * arguments) and a finish chunk; then, when the client asked with
 * `stream_options.include_usage`, a usage chunk with no choices. Fields servers
 * add for training (vLLM's token_ids, prompt_token_ids) and the logprobs ride
 * on the content chunks, as vLLM streams them.
 */
export function completionChunks(c: OpenAI.Chat.ChatCompletion, includeUsage: boolean): Chunk[] {
  const head: Chunk = {
    id: c.id,
    object: 'chat.completion.chunk',
    created: c.created,
    model: c.model,
    ...(c.system_fingerprint ? { system_fingerprint: c.system_fingerprint } : {}),
    ...(includeUsage ? { usage: null } : {}),
  };
  const promptIds = (c as { prompt_token_ids?: unknown }).prompt_token_ids;
  const chunks: Chunk[] = [];
  const push = (choice: Chunk, extra: Chunk = {}): void => {
    chunks.push({ ...head, ...extra, choices: [{ logprobs: null, finish_reason: null, ...choice }] });
  };
  for (const choice of c.choices) {
    const index = choice.index;
    const msg = choice.message;
    push({ index, delta: { role: 'assistant', content: msg.content === null ? null : '' } }, chunks.length === 0 && promptIds ? { prompt_token_ids: promptIds } : {});
    const tokenIds = (choice as { token_ids?: unknown }).token_ids;
    const training = { ...(choice.logprobs ? { logprobs: choice.logprobs } : {}), ...(tokenIds ? { token_ids: tokenIds } : {}) };
    if (msg.content) push({ index, delta: { content: msg.content }, ...training });
    (msg.tool_calls ?? []).forEach((call, i) => {
      if (call.type !== 'function') return;
      const delta = { tool_calls: [{ index: i, id: call.id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } }] };
      push({ index, delta, ...(msg.content ? {} : training) });
    });
    push({ index, delta: {}, finish_reason: choice.finish_reason });
  }
  if (includeUsage) chunks.push({ ...head, choices: [], usage: c.usage ?? null });
  return chunks;
}
