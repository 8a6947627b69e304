import type { BaseMessage } from '@langchain/core/messages';
import type { Runnable, RunnableConfig } from '@langchain/core/runnables';
import type { ResolvedModel } from '../../../src/core/llm/routing';
import { newTraceId } from '../../../src/core/trace/ids';
import { LangChainTracer } from '../../../src/core/trace/langchainTracer';
import type { SpanRecord } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';

/** A routed model at `url` the way the router resolves one; tests change what they need. */
export function resolvedAt(url: string, over: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    logical: 'small',
    baseUrl: url,
    model: 'small-model',
    apiKey: 'not-needed',
    maxTokens: 2048,
    maxTokensSetting: 'models.small.maxTokens',
    timeoutMs: 10_000,
    maxRetries: 0,
    logprobs: false,
    tokenIds: false,
    version: null,
    simulated: false,
    ...over,
  };
}

/** Invokes a model (or any runnable over messages) with the lab's tracer and returns the answer and the spans it recorded. */
export async function traced<T>(
  runnable: Pick<Runnable<BaseMessage[], T>, 'invoke'>,
  messages: BaseMessage[],
  config: RunnableConfig & Record<string, unknown> = {},
): Promise<{ output: T; spans: readonly SpanRecord[]; llm: SpanRecord[] }> {
  const tracer = new RolloutTracer(newTraceId(), null);
  const root = tracer.start('rollout', 'rollout', null);
  const output = await runnable.invoke(messages, { ...config, callbacks: [new LangChainTracer(tracer, root)] });
  tracer.end(root);
  const spans = tracer.spans();
  return { output, spans, llm: spans.filter((s) => s.kind === 'llm') };
}
