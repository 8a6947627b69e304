import type OpenAI from 'openai';

/** The sampled tokens of an answer as training needs them: each token and its logprob, never the alternatives. */
export interface TokenLogprobs {
  content: Array<{ token: string; logprob: number }>;
}

type Choice = OpenAI.Chat.ChatCompletion.Choice;

/**
 * The sampled token ids, wherever the server puts them: `choices[].token_ids`
 * (vLLM and python-trainer's serve, asked with return_token_ids) or each
 * `logprobs.content[].id` (llama.cpp, which ignores return_token_ids). null
 * when the server gave none or a malformed list.
 */
export function completionTokenIds(choice: Choice): number[] | null {
  const direct = integers((choice as { token_ids?: unknown }).token_ids);
  if (direct) return direct;
  const content = choice.logprobs?.content;
  if (!content?.length) return null;
  return integers(content.map((t) => (t as { id?: unknown }).id));
}

/** vLLM's `prompt_token_ids` (next to `choices` when asked with return_token_ids); null when absent. */
export function promptTokenIds(completion: OpenAI.Chat.ChatCompletion): number[] | null {
  const top = integers((completion as { prompt_token_ids?: unknown }).prompt_token_ids);
  return top ?? integers((completion.choices[0] as { prompt_token_ids?: unknown } | undefined)?.prompt_token_ids);
}

/** Token and logprob of each sampled token; the alternatives (up to 20 per token on llama.cpp) are dropped. */
export function sampledLogprobs(choice: Choice): TokenLogprobs | null {
  const content = choice.logprobs?.content;
  if (!content?.length) return null;
  return { content: content.map((t) => ({ token: t.token, logprob: t.logprob })) };
}

function integers(value: unknown): number[] | null {
  return Array.isArray(value) && value.length > 0 && value.every((x) => Number.isInteger(x)) ? (value as number[]) : null;
}
