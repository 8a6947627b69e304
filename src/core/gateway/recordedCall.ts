import type OpenAI from 'openai';
import { DEFAULT_MAX_TOKENS } from '../config/schema';
import { chatCompletion, type ChatCallOptions, type ChatRequest } from '../llm/client';
import { readCompletion } from '../llm/responseMetadata';
import { toolCallIdsInWire } from '../llm/toolCallIds';
import { callMerger } from '../trace/llmCallMerge';
import type { LiveRollout } from '../trace/liveRollouts';
import { Attr } from '../trace/span';
import { agentAttributes, llmErrorAttributes, llmRequestAttributes, llmResponseAttributes, llmSpanName, type AgentVersions } from '../trace/llmSpanAttributes';
import { wireMessageRecord } from '../trace/messages';
import type { GatewayRoute } from './gatewayRouting';

export interface RecordedCallOptions {
  signal: AbortSignal;
  versions?: AgentVersions;
  backoff?: ChatCallOptions['backoff'];
  /** The caller's current span (from its `traceparent`): the call's span hangs under it. */
  callerSpanId?: string | null;
}

/**
 * Sends one chat completion from an outside agent through the routed client
 * (its retries, timeouts, format fallback, token ids and logprobs) and records
 * it as an `llm` span with the attributes an in-process call gets: under the
 * caller's current span when the request carried a `traceparent`, else under
 * the rollout's root. A framework's own span of the same call, received over
 * OTLP before or after, becomes one span with it (see LlmCallMerger). Returns the completion as the agent should see it:
 * tool-call ids made unique in the conversation, as a graph's ToolNode sees them.
 */
export async function recordedCall(
  rollout: LiveRollout,
  route: GatewayRoute,
  request: ChatRequest,
  opts: RecordedCallOptions,
): Promise<OpenAI.Chat.ChatCompletion> {
  const { resolved, agent } = route;
  // Every call of a rollout gets its seed, as in-process calls do (withRequestSeed), unless the agent chose one.
  const body: ChatRequest = { ...request, seed: request.seed ?? rollout.seed };
  const wire = body.messages;
  const attrs = {
    ...llmRequestAttributes({
      model: resolved.model,
      messages: wire.map(wireMessageRecord),
      // What chatCompletion will send when the agent leaves them out.
      temperature: body.temperature ?? resolved.temperature,
      max_tokens: body.max_tokens ?? body.max_completion_tokens ?? resolved.maxTokens ?? DEFAULT_MAX_TOKENS,
      tools: body.tools,
      response_format: body.response_format,
      simulated: resolved.simulated,
    }),
    ...agentAttributes(agent, opts.versions),
    [Attr.callSource]: 'gateway',
    ...(opts.callerSpanId ? { [Attr.callerSpanId]: opts.callerSpanId } : {}),
  };
  const span = rollout.tracer.start(llmSpanName(attrs), 'llm', opts.callerSpanId ?? rollout.root, attrs);
  const calls = callMerger(rollout);
  let result;
  try {
    result = await chatCompletion(resolved, body, { signal: opts.signal, backoff: opts.backoff, ...(agent ? { agent } : {}) });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    Object.assign(span.attributes, llmErrorAttributes(error));
    calls.gatewayCall(rollout.tracer.record(span, 'error', error.message));
    throw error;
  }
  const { metadata, toolCalls } = readCompletion(result, resolved, wire, { takenToolCallIds: toolCallIdsInWire(wire), ...(agent ? { agent } : {}) });
  const c = result.completion;
  const [first, ...others] = c.choices;
  const message = { ...first!.message, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) };
  const answer = wireMessageRecord({ ...message, content: message.content ?? '' });
  Object.assign(span.attributes, llmResponseAttributes({ ...metadata }, answer, { input: c.usage?.prompt_tokens ?? null, output: c.usage?.completion_tokens ?? null }));
  calls.gatewayCall(rollout.tracer.record(span, 'ok'));
  return { ...c, choices: [{ ...first!, message }, ...others] };
}
