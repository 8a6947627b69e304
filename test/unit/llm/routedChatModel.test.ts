import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { LLMResult } from '@langchain/core/outputs';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';
import { HypothesisOutput, roleMarker } from '../../../src/core/graph/researchLab/outputs';
import { toOpenAIMessages } from '../../../src/core/llm/messageConversion';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import type { RoutedResponseMetadata } from '../../../src/core/llm/responseMetadata';
import type { ResolvedModel } from '../../../src/core/llm/routing';
import { parseStructured } from '../../../src/core/llm/structuredOutput';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';

const pubmedSearch = tool(async ({ query }) => JSON.stringify([{ pmid: '30000001', title: `Trial of ${query}` }]), {
  name: 'pubmed_search',
  description: 'Search PubMed.',
  schema: z.object({ query: z.string().describe('search terms'), top_k: z.number().int().optional() }),
});

const brief = [
  new SystemMessage(`${roleMarker('Geneticist')}\nPropose a hypothesis as JSON.`),
  new HumanMessage('Research question: Does APOE4 raise amyloid-beta in the ageing brain?\n\nContext:\nAPOE4 carriers had significantly higher amyloid-beta.'),
];

function resolved(url: string, over: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    logical: 'small',
    baseUrl: url,
    model: 'qwen-sim',
    apiKey: 'not-needed',
    temperature: 0.7,
    timeoutMs: 10_000,
    maxRetries: 2,
    logprobs: false,
    tokenIds: false,
    version: 'v2',
    simulated: true,
    ...over,
  };
}

/** Records what a trace layer would see. */
class Recorder extends BaseCallbackHandler {
  name = 'recorder';
  starts: Array<{ params: Record<string, unknown>; metadata?: Record<string, unknown> }> = [];
  ends: LLMResult[] = [];
  errors: Error[] = [];
  override handleChatModelStart(
    _llm: unknown,
    _messages: BaseMessage[][],
    _runId: string,
    _parent?: string,
    extra?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    this.starts.push({ params: (extra?.invocation_params ?? {}) as Record<string, unknown>, metadata });
  }
  override handleLLMEnd(output: LLMResult): void {
    this.ends.push(output);
  }
  override handleLLMError(err: Error): void {
    this.errors.push(err);
  }
}

describe('RoutedChatModel', () => {
  let sim: SimServer;
  before(async () => {
    sim = await startSimServer({ seed: 3 });
  });
  after(() => sim.close());

  it('round-trips a bound tool: call, tool result, final answer citing it', async () => {
    const model = new RoutedChatModel({ resolved: resolved(sim.url), agent: 'Geneticist' });
    const withTools = model.bindTools([pubmedSearch], { tool_choice: 'any' });
    const first = await withTools.invoke(brief);
    assert.equal(first.tool_calls?.length, 1);
    const call = first.tool_calls![0]!;
    assert.equal(call.name, 'pubmed_search');
    assert.equal(typeof call.args.query, 'string');
    assert.ok(call.id);
    const result = (await pubmedSearch.invoke(call)) as ToolMessage;
    assert.equal(result.tool_call_id, call.id);
    const second = await model.bindTools([pubmedSearch]).invoke([...brief, first, result]);
    assert.equal(second.tool_calls?.length ?? 0, 0);
    const parsed = await parseStructured(HypothesisOutput, String(second.content));
    assert.ok(parsed.ok);
    assert.ok(parsed.value.supporting_papers.some((p) => p.includes('30000001')));
    assert.equal(sim.requests.at(-1)!.agent, 'Geneticist');
  });

  it('accepts OpenAI-format tool dicts and a named tool_choice', async () => {
    const model = new RoutedChatModel({ resolved: resolved(sim.url) });
    const dict = { type: 'function', function: { name: 'protein_lookup', description: 'Protein table.', parameters: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } } };
    const msg = await model.bindTools([dict, pubmedSearch], { tool_choice: 'protein_lookup' }).invoke(brief);
    assert.deepEqual(msg.tool_calls?.map((c) => [c.name, c.args]), [['protein_lookup', { name: 'APOE4' }]]);
  });

  it('puts usage and routing metadata on the message', async () => {
    const model = new RoutedChatModel({ resolved: resolved(sim.url, { logprobs: true }), temperature: 0.2 });
    const msg = await model.invoke(brief);
    assert.ok(msg.id?.startsWith('chatcmpl-sim-'));
    const u = msg.usage_metadata!;
    assert.ok(u.input_tokens > 0 && u.output_tokens > 0);
    assert.equal(u.total_tokens, u.input_tokens + u.output_tokens);
    const meta = msg.response_metadata as unknown as RoutedResponseMetadata;
    assert.equal(meta.model_name, 'qwen-sim');
    assert.equal(meta.finish_reason, 'stop');
    assert.equal(meta.retries, 0);
    assert.equal(typeof meta.latencyMs, 'number');
    assert.equal(meta.simulated, true);
    assert.equal(meta.baseUrl, sim.url);
    assert.equal(meta.logicalModel, 'small');
    assert.equal(meta.modelVersion, 'v2');
    assert.equal(meta.system_fingerprint, 'rollout-lab-simulated');
    assert.ok((meta.logprobs?.content?.length ?? 0) > 0);
  });

  it('is traced by callbacks inside a LangGraph node: invocation params at start, output and usage at end', async () => {
    const model = new RoutedChatModel({ resolved: resolved(sim.url), agent: 'Geneticist', temperature: 0.3 }).bindTools([pubmedSearch], {
      tool_choice: 'none',
    });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('Geneticist', async (state) => ({ messages: [await model.invoke(state.messages)] }))
      .addEdge(START, 'Geneticist')
      .addEdge('Geneticist', END)
      .compile();
    const rec = new Recorder();
    const out = await graph.invoke({ messages: brief }, { callbacks: [rec] });
    assert.equal(out.messages.length, 3);
    assert.equal(rec.starts.length, 1);
    const { params, metadata } = rec.starts[0]!;
    assert.equal(params.model, 'qwen-sim');
    assert.equal(params.temperature, 0.3);
    assert.equal(params.tool_choice, 'none');
    assert.deepEqual((params.tools as Array<{ function: { name: string } }>).map((t) => t.function.name), ['pubmed_search']);
    assert.equal(metadata?.agent, 'Geneticist');
    assert.equal(metadata?.langgraph_node, 'Geneticist');
    assert.equal(rec.ends.length, 1);
    const end = rec.ends[0]!;
    assert.ok((end.llmOutput?.tokenUsage as { totalTokens: number }).totalTokens > 0);
    const gen = end.generations[0]![0]! as { message?: AIMessage; generationInfo?: Record<string, unknown> };
    assert.equal(gen.generationInfo?.logicalModel, 'small');
    assert.equal(gen.message?.response_metadata.simulated, true);
    assert.ok((gen.message?.usage_metadata?.output_tokens ?? 0) > 0);
  });

  it('passes the abort signal through and reports the error to callbacks', { timeout: 10_000 }, async () => {
    const hanging = await startSimServer({ faults: () => ({ kind: 'hang' }) });
    try {
      const model = new RoutedChatModel({ resolved: resolved(hanging.url) });
      const controller = new AbortController();
      const rec = new Recorder();
      const pending = model.invoke(brief, { signal: controller.signal, callbacks: [rec] });
      while (hanging.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort();
      await assert.rejects(pending, { name: 'AbortError' });
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(hanging.requests.length, 1);
    } finally {
      await hanging.close();
    }
  });

  it('surfaces retries exhausted as an error carrying the retry count', async () => {
    const failing = await startSimServer({ faults: () => ({ kind: 'server-error' }) });
    try {
      const model = new RoutedChatModel({ resolved: resolved(failing.url, { maxRetries: 1 }), backoff: { baseDelayMs: 1, maxDelayMs: 2 } });
      const rec = new Recorder();
      await assert.rejects(model.invoke(brief, { callbacks: [rec] }), /HTTP 500 after 1 retry/);
      assert.equal((rec.errors[0] as { retries?: number } | undefined)?.retries, 1);
    } finally {
      await failing.close();
    }
  });
});

describe('toOpenAIMessages', () => {
  it('converts system, human, ai with tool calls, and tool messages', () => {
    const out = toOpenAIMessages([
      new SystemMessage('sys'),
      new HumanMessage({ content: [{ type: 'text', text: 'hi ' }, { type: 'text', text: 'there' }] }),
      new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'pubmed_search', args: { query: 'tau' }, type: 'tool_call' }] }),
      new ToolMessage({ content: '[]', tool_call_id: 'c1' }),
      new AIMessage('done'),
    ]);
    assert.deepEqual(out, [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi there' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'pubmed_search', arguments: '{"query":"tau"}' } }] },
      { role: 'tool', content: '[]', tool_call_id: 'c1' },
      { role: 'assistant', content: 'done' },
    ]);
  });
});
