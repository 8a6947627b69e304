import type OpenAI from 'openai';
import type { StructuredOutputMode } from '../config/schema';
import type { ChatResult } from './client';
import { completionTokenIds, promptTokenIds, sampledLogprobs, type TokenLogprobs } from './completionTokens';
import { estimatePromptTokens, promptTruncation, serverReportsTruncation } from './promptTruncation';
import type { ResolvedModel } from './routing';
import { uniqueToolCallIds } from './toolCallIds';

/** What the client knew about the call, attached to every message and generation for the tracer. */
export interface RoutedResponseMetadata {
  id: string;
  model_name: string;
  /** "length" when the server stopped the answer at max_tokens. */
  finish_reason: string | null;
  /** Each sampled token and its logprob; the alternatives the server sent are dropped. */
  logprobs: TokenLogprobs | null;
  /** The sampled token ids: `choices[].token_ids` (vLLM) or `logprobs.content[].id` (llama.cpp). */
  token_ids: number[] | null;
  /** The prompt's token ids, from servers that return them (vLLM with return_token_ids). */
  prompt_token_ids: number[] | null;
  /** The server's tool-call ids when some were missing, empty or repeated and were replaced ("" for none); else null. */
  tool_call_original_ids: string[] | null;
  /** max_tokens sent, and the lab.json key that sets it. */
  max_tokens: number | null;
  max_tokens_setting: string | null;
  /** How the answer's format was enforced, when a schema was asked for: the mode used, and why it is weaker than configured. */
  structured_output: StructuredOutputMode | null;
  structured_output_fallback: string | null;
  /** Lower bound on the prompt's tokens, and whether the server evidently cut the prompt to fit its context. */
  prompt_estimated_tokens: number;
  prompt_truncated: boolean;
  latencyMs: number;
  retries: number;
  /** Why each retry was made ("HTTP 429", "broken response body: …"); empty when none was. */
  retry_reasons: string[];
  simulated: boolean;
  baseUrl: string;
  logicalModel: string;
  modelVersion: string | null;
  system_fingerprint: string | null;
}

export interface ReadCompletion {
  metadata: RoutedResponseMetadata;
  /** The first choice's tool calls, each with an id unique in the conversation. */
  toolCalls: OpenAI.Chat.ChatCompletionMessageToolCall[];
}

export interface ReadCompletionOptions {
  /** Tool-call ids the conversation already uses. */
  takenToolCallIds: ReadonlySet<string>;
  /** The calling agent: replacement tool-call ids are derived from it. */
  agent?: string;
  /** A schema was asked for without response_format (structured output "off"). */
  schemaAsked?: boolean;
}

/**
 * What a routed call's answer says, read the same way wherever the call was
 * made (a graph's RoutedChatModel or the recording gateway), so both record
 * the same span attributes.
 */
export function readCompletion(
  r: ChatResult,
  resolved: ResolvedModel,
  wire: readonly OpenAI.Chat.ChatCompletionMessageParam[],
  opts: ReadCompletionOptions,
): ReadCompletion {
  const c = r.completion;
  const choice = c.choices[0]!;
  const ids = uniqueToolCallIds(choice.message.tool_calls ?? [], opts.takenToolCallIds, opts.agent);
  const prompt = promptTruncation(estimatePromptTokens(wire), c.usage?.prompt_tokens, serverReportsTruncation(c));
  const metadata: RoutedResponseMetadata = {
    id: c.id,
    model_name: c.model,
    finish_reason: choice.finish_reason ?? null,
    logprobs: sampledLogprobs(choice),
    token_ids: completionTokenIds(choice),
    prompt_token_ids: promptTokenIds(c),
    tool_call_original_ids: ids.originalIds,
    max_tokens: r.sent.max_tokens ?? r.sent.max_completion_tokens ?? null,
    max_tokens_setting: resolved.maxTokensSetting ?? null,
    structured_output: r.structuredOutput?.mode ?? (opts.schemaAsked ? 'off' : null),
    structured_output_fallback: r.structuredOutput?.fallback ?? null,
    prompt_estimated_tokens: prompt.estimatedTokens,
    prompt_truncated: prompt.truncated,
    latencyMs: r.latencyMs,
    retries: r.retries,
    retry_reasons: r.retryReasons,
    simulated: resolved.simulated,
    baseUrl: resolved.baseUrl,
    logicalModel: resolved.logical,
    modelVersion: resolved.version,
    system_fingerprint: c.system_fingerprint ?? null,
  };
  return { metadata, toolCalls: ids.calls };
}
