import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { context } from '@opentelemetry/api';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, stepCountIs, streamText, tool, type ToolSet } from 'ai';
import { z } from 'zod';
import type { OtlpSpan, OtlpValue } from '../../../src/core/otlp/otlpModel';
import { normaliseSpan } from '../../../src/core/otlp/spanNormalise';
import type { RolloutRecord } from '../../../src/core/store/types';
import { newTraceId } from '../../../src/core/trace/ids';
import { LiveRollouts } from '../../../src/core/trace/liveRollouts';
import type { ChatMessageRecord } from '../../../src/core/trace/messages';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { receiverFixture, sdkFixture, type ReceiverFixture } from './helpers';

/*
 * The Vercel AI SDK (`ai`, with the OpenAI-compatible provider) as its users
 * run it: generateText / streamText with a tool and experimental_telemetry,
 * its spans exported by the real OpenTelemetry JS SDK to the lab's receiver,
 * against an OpenAI-compatible server that asks for the tool, then answers.
 */

const TICKET = 'Customer C-17 cannot log in since the password reset.';
const ANSWER = '{"queue":"tech","customer":"C-17","plan":"pro"}';
const CUSTOMER = { id: 'C-17', plan: 'pro', status: 'locked' };

const tools: ToolSet = {
  lookup_customer: tool({
    description: 'Look up a customer by id',
    inputSchema: z.object({ id: z.string() }),
    execute: async ({ id }) => ({ ...CUSTOMER, id }),
  }),
};

/** A streamed answer's text once the stream has closed (and with it the SDK's span of the whole call). */
async function streamed(result: { consumeStream(): PromiseLike<void>; text: PromiseLike<string> }): Promise<string> {
  await result.consumeStream();
  return result.text;
}

const messages = (s: SpanRecord, key: string): ChatMessageRecord[] => JSON.parse(String(s.attributes[key])) as ChatMessageRecord[];

describe('Vercel AI SDK telemetry through the OTLP receiver', () => {
  let fx: ReceiverFixture;
  let stub: OpenAIStub;
  const live = new LiveRollouts();
  // What an agent's `provider.register()` does: a context manager, so the SDK's spans nest under its active span.
  before(() => new NodeTracerProvider().register());
  after(() => context.disable());
  beforeEach(async () => {
    fx = await receiverFixture({ live });
    stub = await startOpenAIStub({ server: 'vllm', replies: [{ toolCalls: [{ name: 'lookup_customer', arguments: { id: 'C-17' } }] }, { content: ANSWER }] });
  });
  afterEach(async () => {
    await stub.close();
    await fx.close();
  });

  const model = (): ReturnType<ReturnType<typeof createOpenAICompatible>> => createOpenAICompatible({ name: 'lab', baseURL: stub.url, apiKey: 'test', includeUsage: true })('served-model');

  for (const call of ['generateText', 'streamText'] as const) {
    it(`${call}: its model calls are llm spans with messages, tokens, model, response id and finish reason; ai.toolCall is the tool; functionId names the agent`, async () => {
      const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.run.id': 'run-ai', 'rollout_lab.task.id': 'T-1' } });
      const telemetry = { isEnabled: true, functionId: 'Support', tracer: sdk.tracer };
      const args = { model: model(), system: 'You route support tickets.', prompt: TICKET, tools, stopWhen: stepCountIs(4), experimental_telemetry: telemetry };
      const text = call === 'generateText' ? (await generateText(args)).text : await streamed(streamText(args));
      assert.equal(text, ANSWER);
      await sdk.shutdown();

      const { rollouts } = fx.store.listRollouts({ runId: 'run-ai' });
      assert.equal(rollouts.length, 1);
      const r = rollouts[0]!;
      const spans = fx.store.getSpans(r.id);
      const root = spans.find((s) => s.parentSpanId === null)!;
      assert.deepEqual([root.name, root.kind], [`ai.${call}`, 'rollout'], 'the wrapper is the agent turn, not a model call');
      const llm = spans.filter((s) => s.kind === 'llm').sort((a, b) => a.startTime - b.startTime);
      assert.deepEqual(llm.map((s) => s.name), [`ai.${call}.${call === 'generateText' ? 'doGenerate' : 'doStream'}`, `ai.${call}.${call === 'generateText' ? 'doGenerate' : 'doStream'}`]);
      const [first, second] = [llm[0]!, llm[1]!];
      assert.deepEqual(messages(first, Attr.inputMessages), [
        { role: 'system', content: 'You route support tickets.' },
        { role: 'user', content: TICKET },
      ]);
      const toolCall = { id: 'call_0', name: 'lookup_customer', arguments: '{"id":"C-17"}' };
      assert.deepEqual(messages(first, Attr.outputMessages), [{ role: 'assistant', content: '', tool_calls: [toolCall] }]);
      assert.deepEqual(messages(second, Attr.inputMessages), [
        { role: 'system', content: 'You route support tickets.' },
        { role: 'user', content: TICKET },
        { role: 'assistant', content: '', tool_calls: [toolCall] },
        { role: 'tool', content: JSON.stringify(CUSTOMER), tool_call_id: 'call_0', name: 'lookup_customer' },
      ]);
      assert.deepEqual(messages(second, Attr.outputMessages), [{ role: 'assistant', content: ANSWER }]);
      assert.deepEqual([first.attributes[Attr.finishReasons], second.attributes[Attr.finishReasons]], [['tool_calls'], ['stop']]);
      assert.deepEqual([first.attributes[Attr.responseId], second.attributes[Attr.responseId]], ['chatcmpl-stub-1', 'chatcmpl-stub-2']);
      for (const s of llm) {
        assert.deepEqual([s.attributes[Attr.operationName], s.attributes[Attr.requestModel], s.attributes[Attr.responseModel], s.attributes[Attr.agentName]], ['chat', 'served-model', 'served-model', 'Support']);
        assert.ok(Number(s.attributes[Attr.inputTokens]) > 0 && Number(s.attributes[Attr.outputTokens]) > 0, s.name);
      }
      assert.deepEqual(JSON.parse(String(first.attributes['gen_ai.request.tools'])).map((t: { name: string }) => t.name), ['lookup_customer']);

      const t = spans.find((s) => s.kind === 'tool');
      assert.ok(t, `a tool span among ${spans.map((s) => `${s.name}:${s.kind}`).join(', ')}`);
      assert.deepEqual(
        [t.name, t.attributes[Attr.operationName], t.attributes[Attr.toolName], t.attributes[Attr.toolCallId], t.attributes[Attr.toolArguments], t.attributes[Attr.toolResult], t.attributes[Attr.agentName]],
        ['ai.toolCall', 'execute_tool', 'lookup_customer', 'call_0', '{"id":"C-17"}', JSON.stringify(CUSTOMER), 'Support'],
      );

      // The wrapper's summed usage is not a call of its own: the agent's tokens are its two model calls'.
      const tokens = (k: string): number => llm.reduce((n, s) => n + Number(s.attributes[k]), 0);
      assert.deepEqual(
        r.agents.map((a) => [a.agent, a.visits, a.llmCalls, a.toolCalls, a.inputTokens, a.outputTokens]),
        [['Support', 1, 2, 1, tokens(Attr.inputTokens), tokens(Attr.outputTokens)]],
      );
    });
  }

  function startLive(agents: string[]): { id: string; tracer: RolloutTracer; remove: () => void } {
    const id = newTraceId();
    const tracer = new RolloutTracer(id, fx.store);
    fx.store.startRun({ id: 'run-cmd', startTime: 0, endTime: null, status: 'running', params: {}, simulated: false, planned: 1 });
    const record: RolloutRecord = {
      id, runId: 'run-cmd', taskId: 'T-1', split: null, sample: 0, status: 'running', failure: null, finalReward: null, criteria: null, judgeFailed: false,
      decision: null, expectedDecision: null, turns: null, error: null, simulated: false, startTime: Date.now(), endTime: null, spanCount: 0, agents: [],
    };
    fx.store.startRollout(record);
    const root = tracer.start('rollout', 'rollout', null);
    return { id, tracer, remove: live.add({ id, runId: 'run-cmd', taskId: 'T-1', sample: 0, tracer, root, seed: 1, agents }) };
  }

  for (const service of ['Support', 'ticket-service']) {
    it(`without a functionId, the resource's service.name "${service}" names the agent only when it is an agent of the lab`, async () => {
      const r = startLive(['Support']);
      const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'service.name': service, 'rollout_lab.rollout.id': r.id } });
      await generateText({ model: model(), prompt: TICKET, tools, stopWhen: stepCountIs(4), experimental_telemetry: { isEnabled: true, tracer: sdk.tracer } });
      await sdk.shutdown();
      const calls = r.tracer.spans().filter((s) => s.kind === 'llm' || s.kind === 'tool');
      assert.equal(calls.length, 3);
      for (const s of calls) assert.equal(s.attributes[Attr.agentName], service === 'Support' ? 'Support' : undefined, s.name);
      r.remove();
    });
  }
});

function span(attrs: Array<[string, OtlpValue]>, over: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), parentSpanId: 'c'.repeat(16), name: 's', kind: 1, startMs: 1, endMs: 2,
    attributes: new Map(attrs), events: [], links: [], status: { code: 0, message: '' }, ...over,
  };
}

describe('Vercel AI SDK spans of older releases and other calls', () => {
  it('reads args/result parts, promptTokens/completionTokens and a length finish; a wrapper without functionId is a plain step', () => {
    const llm = normaliseSpan(
      span([
        ['ai.operationId', 'ai.generateText.doGenerate'],
        ['ai.model.id', 'gpt-x'],
        ['ai.model.provider', 'openai.chat'],
        ['ai.prompt.messages', JSON.stringify([
          { role: 'user', content: [{ type: 'text', text: 'Look up ' }, { type: 'text', text: 'C-17' }] },
          { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', args: { id: 'C-17' } }] },
          { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', result: { plan: 'pro' } }, { type: 'tool-result', toolCallId: 'c2', toolName: 'lookup', output: { type: 'error-text', value: 'not found' } }] },
        ])],
        ['ai.response.text', 'The plan is'],
        ['ai.response.finishReason', 'length'],
        ['ai.response.id', 'resp-9'],
        ['ai.usage.promptTokens', 30],
        ['ai.usage.completionTokens', 4],
      ]),
    ).record;
    assert.equal(llm.kind, 'llm');
    assert.deepEqual(messages(llm, Attr.inputMessages), [
      { role: 'user', content: 'Look up C-17' },
      { role: 'assistant', content: 'Looking.', tool_calls: [{ id: 'c1', name: 'lookup', arguments: '{"id":"C-17"}' }] },
      { role: 'tool', content: '{"plan":"pro"}', tool_call_id: 'c1', name: 'lookup' },
      { role: 'tool', content: 'not found', tool_call_id: 'c2', name: 'lookup' },
    ]);
    assert.deepEqual(messages(llm, Attr.outputMessages), [{ role: 'assistant', content: 'The plan is' }]);
    assert.deepEqual(
      [llm.attributes[Attr.requestModel], llm.attributes[Attr.providerName], llm.attributes[Attr.responseId], llm.attributes[Attr.inputTokens], llm.attributes[Attr.outputTokens], llm.attributes[Attr.finishReasons], llm.attributes[Attr.truncated]],
      ['gpt-x', 'openai.chat', 'resp-9', 30, 4, ['length'], true],
    );

    const wrapper = normaliseSpan(span([['ai.operationId', 'ai.generateText'], ['ai.model.id', 'gpt-x'], ['ai.usage.inputTokens', 30]], { name: 'ai.generateText' }));
    assert.deepEqual([wrapper.record.kind, wrapper.isAgentSpan, wrapper.record.attributes[Attr.agentName], wrapper.record.attributes[Attr.inputTokens]], ['node', false, undefined, undefined]);
    const agent = normaliseSpan(span([['ai.operationId', 'ai.streamObject'], ['ai.telemetry.functionId', 'Planner']], { name: 'ai.streamObject' }));
    assert.deepEqual([agent.record.kind, agent.isAgentSpan, agent.record.attributes[Attr.agentName], agent.record.attributes[Attr.nodeName]], ['node', true, 'Planner', 'Planner']);
    const object = normaliseSpan(span([['ai.operationId', 'ai.generateObject.doGenerate'], ['ai.response.object', '{"queue":"tech"}']])).record;
    assert.deepEqual([object.kind, messages(object, Attr.outputMessages)], ['llm', [{ role: 'assistant', content: '{"queue":"tech"}' }]]);
  });
});
