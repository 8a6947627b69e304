import assert from 'node:assert/strict';
import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { ChatMessageRecord } from '../../../src/core/trace/messages';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { receiverFixture, sdkFixture, type ReceiverFixture } from './helpers';

const messages = (s: SpanRecord, key: string): ChatMessageRecord[] => JSON.parse(String(s.attributes[key])) as ChatMessageRecord[];
const byName = (spans: SpanRecord[], name: string): SpanRecord => {
  const s = spans.find((x) => x.name === name);
  assert.ok(s, `span ${name} in ${spans.map((x) => x.name).join(', ')}`);
  return s;
};

describe('OTLP receiver with the real OpenTelemetry JS SDK', () => {
  let fx: ReceiverFixture;
  beforeEach(async () => {
    fx = await receiverFixture();
  });
  afterEach(async () => {
    await fx.close();
  });

  it('stores current GenAI spans (protobuf, gzip) as a rollout of the run, task and sample the resource names', async () => {
    const sdk = sdkFixture(fx.receiver.url, {
      protocol: 'protobuf',
      gzip: true,
      resource: { 'rollout_lab.run.id': 'run-py', 'rollout_lab.task.id': 'task-7', 'rollout_lab.sample': 2, 'rollout_lab.task.split': 'val' },
    });
    const agent = sdk.span('invoke_agent Researcher', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Researcher' });
    const chat = sdk.span(
      'chat gpt-4o-mini',
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You are a researcher.' }]),
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Find papers on ' }, { type: 'text', content: 'APOE4.' }] }]),
        'gen_ai.output.messages': JSON.stringify([
          { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'search', arguments: { query: 'APOE4' } }], finish_reason: 'tool_call' },
        ]),
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 15,
        'gen_ai.response.id': 'chatcmpl-1',
        'vendor.custom': 'kept',
      },
      agent,
    );
    chat.end();
    const tool = sdk.span('execute_tool search', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'search', 'gen_ai.tool.call.id': 'call_1', 'gen_ai.tool.call.arguments': '{"query":"APOE4"}', 'gen_ai.tool.call.result': '3 papers' }, agent);
    tool.end();
    agent.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'relevance', 'gen_ai.evaluation.score.value': 0.75 });
    agent.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'reward', 'gen_ai.evaluation.score.value': 0.6 });
    agent.end();
    await sdk.shutdown();

    const { rollouts } = fx.store.listRollouts();
    assert.equal(rollouts.length, 1);
    const r = rollouts[0]!;
    assert.equal(r.id, agent.spanContext().traceId);
    assert.deepEqual([r.runId, r.taskId, r.sample, r.split, r.status, r.failure], ['run-py', 'task-7', 2, 'val', 'succeeded', null]);
    assert.equal(r.finalReward, 0.6);
    assert.deepEqual(r.criteria, { relevance: 0.75 });
    assert.equal(r.spanCount, 3);
    assert.deepEqual(
      r.agents.map((a) => [a.agent, a.visits, a.llmCalls, a.toolCalls, a.inputTokens, a.outputTokens]),
      [['Researcher', 1, 1, 1, 120, 15]],
    );
    assert.equal(fx.store.getRun('run-py')?.params.source, 'otlp');

    const spans = fx.store.getSpans(r.id);
    assert.equal(byName(spans, 'invoke_agent Researcher').kind, 'rollout');
    const llm = byName(spans, 'chat gpt-4o-mini');
    assert.equal(llm.kind, 'llm');
    assert.deepEqual(messages(llm, Attr.inputMessages), [
      { role: 'system', content: 'You are a researcher.' },
      { role: 'user', content: 'Find papers on APOE4.' },
    ]);
    assert.deepEqual(messages(llm, Attr.outputMessages), [{ role: 'assistant', content: '', tool_calls: [{ id: 'call_1', name: 'search', arguments: '{"query":"APOE4"}' }] }]);
    assert.deepEqual(llm.attributes[Attr.finishReasons], ['tool_call']);
    assert.equal(llm.attributes[Attr.agentName], 'Researcher');
    assert.equal(llm.attributes['vendor.custom'], 'kept');
    const t = byName(spans, 'execute_tool search');
    assert.equal(t.kind, 'tool');
    assert.deepEqual([t.attributes[Attr.toolName], t.attributes[Attr.toolArguments], t.attributes[Attr.toolResult], t.attributes[Attr.agentName]], ['search', '{"query":"APOE4"}', '3 papers', 'Researcher']);
  });

  it('stores older GenAI spans (OTLP/JSON) in the "imported" run, from indexed attributes and content events', async () => {
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'json' });
    const root = sdk.span('workflow');
    const a = sdk.span(
      'openai.chat',
      {
        'gen_ai.system': 'openai',
        'gen_ai.request.model': 'gpt-3.5-turbo',
        'gen_ai.prompt.0.role': 'system',
        'gen_ai.prompt.0.content': 'Be brief.',
        'gen_ai.prompt.1.role': 'user',
        'gen_ai.prompt.1.content': 'Weather in Paris?',
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': '',
        'gen_ai.completion.0.finish_reason': 'tool_calls',
        'gen_ai.completion.0.tool_calls.0.id': 'c1',
        'gen_ai.completion.0.tool_calls.0.name': 'weather',
        'gen_ai.completion.0.tool_calls.0.arguments': '{"city":"Paris"}',
        'gen_ai.usage.prompt_tokens': 30,
        'gen_ai.usage.completion_tokens': 9,
        'gen_ai.agent.name': 'Planner',
      },
      root,
    );
    a.end();
    const b = sdk.span('chat legacy', { 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'anthropic' }, root);
    b.addEvent('gen_ai.content.prompt', { 'gen_ai.prompt': JSON.stringify([{ role: 'user', content: 'Hi' }]) });
    b.addEvent('gen_ai.content.completion', { 'gen_ai.completion': JSON.stringify([{ role: 'assistant', content: 'Hello!' }]) });
    b.addEvent('custom.note', { detail: 'x' });
    b.end();
    root.setStatus({ code: SpanStatusCode.ERROR, message: 'agent crashed' });
    root.end();
    await sdk.shutdown();

    const r = fx.store.listRollouts().rollouts[0]!;
    assert.deepEqual([r.runId, r.taskId, r.sample, r.status, r.failure, r.error], ['imported', r.id, 0, 'failed', 'other', 'agent crashed']);
    assert.deepEqual(r.agents.map((x) => [x.agent, x.llmCalls, x.inputTokens, x.outputTokens]), [['Planner', 1, 30, 9]]);
    const spans = fx.store.getSpans(r.id);
    const older = byName(spans, 'openai.chat');
    assert.equal(older.kind, 'llm');
    assert.equal(older.attributes[Attr.providerName], 'openai');
    assert.deepEqual([older.attributes[Attr.inputTokens], older.attributes[Attr.outputTokens]], [30, 9]);
    assert.deepEqual(messages(older, Attr.inputMessages), [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Weather in Paris?' },
    ]);
    assert.deepEqual(messages(older, Attr.outputMessages), [{ role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'weather', arguments: '{"city":"Paris"}' }] }]);
    assert.deepEqual(older.attributes[Attr.finishReasons], ['tool_calls']);
    assert.equal(older.attributes['gen_ai.prompt.1.content'], 'Weather in Paris?', 'the original attributes are kept');
    const legacy = byName(spans, 'chat legacy');
    assert.deepEqual(messages(legacy, Attr.inputMessages), [{ role: 'user', content: 'Hi' }]);
    assert.deepEqual(messages(legacy, Attr.outputMessages), [{ role: 'assistant', content: 'Hello!' }]);
    const kept = JSON.parse(String(legacy.attributes['rollout_lab.otlp.events'])) as Array<{ name: string }>;
    assert.deepEqual(kept.map((e) => e.name), ['custom.note']);
    assert.equal(byName(spans, 'workflow').kind, 'rollout');
  });

  it('stores OpenInference spans: AGENT, LLM with indexed messages and token counts, TOOL with input and output values', async () => {
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.task.id': 'oi-1' } });
    const agent = sdk.span('Triage', { 'openinference.span.kind': 'AGENT', 'input.value': 'ticket text' });
    const llm = sdk.span(
      'ChatCompletion',
      {
        'openinference.span.kind': 'LLM',
        'llm.model_name': 'gpt-4o',
        'llm.provider': 'openai',
        'llm.input_messages.0.message.role': 'system',
        'llm.input_messages.0.message.content': 'Route tickets.',
        'llm.input_messages.1.message.role': 'user',
        'llm.input_messages.1.message.contents.0.message_content.type': 'text',
        'llm.input_messages.1.message.contents.0.message_content.text': 'My card was charged twice.',
        'llm.output_messages.0.message.role': 'assistant',
        'llm.output_messages.0.message.tool_calls.0.tool_call.id': 'tc9',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'lookup',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{"id":42}',
        'llm.token_count.prompt': 50,
        'llm.token_count.completion': 7,
      },
      agent,
    );
    llm.end();
    const tool = sdk.span('lookup', { 'openinference.span.kind': 'TOOL', 'tool.name': 'lookup', 'input.value': '{"id":42}', 'output.value': 'billing' }, agent);
    tool.end();
    const chain = sdk.span('format', { 'openinference.span.kind': 'CHAIN' }, agent);
    chain.end();
    agent.end();
    await sdk.shutdown();

    const r = fx.store.listRollouts().rollouts[0]!;
    assert.deepEqual([r.runId, r.taskId, r.status], ['imported', 'oi-1', 'succeeded']);
    assert.deepEqual(r.agents.map((x) => [x.agent, x.visits, x.llmCalls, x.toolCalls, x.inputTokens, x.outputTokens]), [['Triage', 1, 1, 1, 50, 7]]);
    const spans = fx.store.getSpans(r.id);
    const l = byName(spans, 'ChatCompletion');
    assert.equal(l.kind, 'llm');
    assert.deepEqual([l.attributes[Attr.requestModel], l.attributes[Attr.providerName], l.attributes[Attr.operationName]], ['gpt-4o', 'openai', 'chat']);
    assert.deepEqual(messages(l, Attr.inputMessages), [
      { role: 'system', content: 'Route tickets.' },
      { role: 'user', content: 'My card was charged twice.' },
    ]);
    assert.deepEqual(messages(l, Attr.outputMessages), [{ role: 'assistant', content: '', tool_calls: [{ id: 'tc9', name: 'lookup', arguments: '{"id":42}' }] }]);
    const t = byName(spans, 'lookup');
    assert.deepEqual([t.kind, t.attributes[Attr.toolName], t.attributes[Attr.toolArguments], t.attributes[Attr.toolResult]], ['tool', 'lookup', '{"id":42}', 'billing']);
    assert.equal(byName(spans, 'format').kind, 'node');
    assert.equal(byName(spans, 'Triage').kind, 'rollout');
  });

  it('grows a trace over several exports: running until its root span arrives, then finished', async () => {
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', simple: true, resource: { 'rollout_lab.run.id': 'r2' } });
    const root = sdk.span('invoke_agent Solo', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Solo' });
    const chat = sdk.span('chat m', { 'gen_ai.operation.name': 'chat', 'gen_ai.usage.input_tokens': 5, 'gen_ai.usage.output_tokens': 2 }, root);
    chat.end();
    await sdk.flush();
    const id = root.spanContext().traceId;
    let r = fx.store.getRollout(id);
    assert.equal(r?.status, 'running');
    assert.equal(fx.store.getSpans(id).length, 1);
    // The agent span has not arrived: the stored child cannot name its agent yet; the summary at the end does.
    assert.equal(fx.store.getSpans(id)[0]!.attributes[Attr.agentName], undefined);
    root.end();
    await sdk.shutdown();
    r = fx.store.getRollout(id);
    assert.equal(r?.status, 'succeeded');
    assert.equal(r?.spanCount, 2);
    assert.deepEqual(r?.agents.map((a) => [a.agent, a.visits, a.llmCalls, a.inputTokens]), [['Solo', 1, 1, 5]]);
  });
});
