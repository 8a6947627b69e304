import type { BaseMessage } from '@langchain/core/messages';

/**
 * How an error starts when an answer failed because the server stopped it at
 * max_tokens. Failure reports classify rollouts by this prefix: keep it exact.
 */
export const TRUNCATED_AT_MAX_TOKENS = 'truncated at max_tokens';

/** An answer the server ended at its token limit, with the limit and the lab.json key that sets it when known. */
export interface MaxTokensCut {
  maxTokens: number | null;
  setting: string | null;
}

/**
 * Whether the server ended this answer at max_tokens (finish_reason "length",
 * or Anthropic-style stop_reason "max_tokens" from other chat models); null
 * when it finished on its own.
 */
export function maxTokensCutOf(message: BaseMessage): MaxTokensCut | null {
  const meta = (message.response_metadata ?? {}) as Record<string, unknown>;
  if (meta.finish_reason !== 'length' && meta.stop_reason !== 'max_tokens') return null;
  return {
    maxTokens: typeof meta.max_tokens === 'number' ? meta.max_tokens : null,
    setting: typeof meta.max_tokens_setting === 'string' ? meta.max_tokens_setting : null,
  };
}

/** The error of an answer that could not be used after it was cut at max_tokens. */
export function truncatedError(cut: MaxTokensCut, problem: string): string {
  const limit = cut.maxTokens === null ? '' : ` (${cut.maxTokens})`;
  const fix = cut.setting ? `raise ${cut.setting} in .rollout-lab/lab.json` : 'raise the max_tokens of its model';
  return `${TRUNCATED_AT_MAX_TOKENS}${limit}: the answer was cut off before it was complete — ${fix}, or ask for a shorter answer. ${problem}`;
}

/** The line a repair request adds when the answer it repairs was cut off. */
export function shorterAnswerRequest(cut: MaxTokensCut): string {
  const limit = cut.maxTokens === null ? 'the token limit' : `the limit of ${cut.maxTokens} tokens`;
  return `Your previous answer was cut off at ${limit} before it was complete. Answer again, much shorter: keep every text value brief.`;
}
