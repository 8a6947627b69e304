import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { callMerger } from '../../../src/core/trace/llmCallMerge';
import { LiveRollouts } from '../../../src/core/trace/liveRollouts';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import type { RolloutRecord } from '../../../src/core/store/types';
import { receiverFixture, sdkFixture, type ReceiverFixture } from './helpers';

describe('OTLP receiver: spans of live rollouts', () => {
  let fx: ReceiverFixture;
  const live = new LiveRollouts();
  beforeEach(async () => {
    fx = await receiverFixture({ live });
  });
  afterEach(async () => {
    await fx.close();
  });

  function startLive(): { id: string; tracer: RolloutTracer; rootSpanId: string; gatewaySpanId: string; remove: () => void; record: RolloutRecord } {
    const id = newTraceId();
    const tracer = new RolloutTracer(id, fx.store);
    fx.store.startRun({ id: 'run-cmd', startTime: 0, endTime: null, status: 'running', params: {}, simulated: false, planned: 1 });
    const record: RolloutRecord = {
      id, runId: 'run-cmd', taskId: 't', split: null, sample: 0, status: 'running', failure: null, finalReward: null, criteria: null, judgeFailed: false,
      decision: null, expectedDecision: null, turns: null, error: null, simulated: false, startTime: Date.now(), endTime: null, spanCount: 0, agents: [],
    };
    fx.store.startRollout(record);
    const root = tracer.start('rollout', 'rollout', null);
    const rollout = { id, runId: 'run-cmd', taskId: 't', sample: 0, tracer, root, seed: 1, agents: ['Coder'] };
    // The gateway already recorded this model call (with logprobs): the agent's own span of it is a second record of it.
    const gw = tracer.record(tracer.start('chat m', 'llm', root, { [Attr.callSource]: 'gateway', [Attr.responseId]: 'chatcmpl-gw', [Attr.logprobs]: [-0.1], [Attr.agentName]: 'Coder' }));
    callMerger(rollout).gatewayCall(gw);
    const remove = live.add(rollout);
    return { id, tracer, rootSpanId: root.spanId, gatewaySpanId: gw.spanId, remove, record };
  }

  it("hands spans naming a live rollout to its tracer, under its root, and merges its record of a gateway call into the gateway's", async () => {
    const r = startLive();
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
    const agent = sdk.span('invoke_agent Coder', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Coder' });
    sdk.span('chat m', { 'gen_ai.operation.name': 'chat', 'gen_ai.response.id': 'chatcmpl-gw' }, agent).end();
    sdk.span('chat m', { 'gen_ai.operation.name': 'chat', 'gen_ai.response.id': 'chatcmpl-own' }, agent).end();
    sdk.span('execute_tool run_tests', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'run_tests' }, agent).end();
    agent.end();
    await sdk.shutdown();

    const spans = r.tracer.spans();
    assert.equal(spans.length, 4, 'the gateway call, the agent span, its own model call and the tool');
    assert.ok(spans.every((s) => s.traceId === r.id));
    const agentSpan = spans.find((s) => s.name === 'invoke_agent Coder')!;
    assert.equal(agentSpan.parentSpanId, r.rootSpanId);
    assert.equal(agentSpan.kind, 'node', 'not promoted to a rollout root: the rollout has its own');
    const calls = spans.filter((s) => s.attributes[Attr.responseId] === 'chatcmpl-gw');
    assert.equal(calls.length, 1, 'one span for the call');
    assert.deepEqual([calls[0]!.spanId, calls[0]!.parentSpanId, calls[0]!.attributes[Attr.matchedBy]], [r.gatewaySpanId, agentSpan.spanId, 'response_id'], "the gateway's id, the agent's nesting");
    assert.deepEqual(calls[0]!.attributes[Attr.logprobs], [-0.1]);
    const own = spans.find((s) => s.attributes[Attr.responseId] === 'chatcmpl-own')!;
    assert.equal(own.attributes[Attr.unmatchedCall], true, 'a call the gateway never saw, in a rollout whose calls go through it: flagged');
    const tool = spans.find((s) => s.kind === 'tool')!;
    assert.equal(tool.attributes[Attr.agentName], 'Coder');
    assert.equal(fx.store.getSpans(r.id).length, 4, 'written to the store as they arrive; the merged call supersedes its first copy');
    assert.equal(fx.store.getSpans(r.id).find((s) => s.spanId === r.gatewaySpanId)?.attributes[Attr.matchedBy], 'response_id');
    assert.equal(fx.store.listRollouts().total, 1, 'no rollout of its own for the agent trace');
    r.remove();
  });

  it('stores spans naming a rollout that is no longer live as its late spans', async () => {
    const r = startLive();
    r.tracer.end({ spanId: r.rootSpanId, parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: r.record.startTime, attributes: {} });
    fx.store.finishRollout({ ...r.record, status: 'succeeded', endTime: Date.now(), spanCount: 2 });
    r.remove();
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'json', resource: { 'rollout_lab.rollout.id': r.id } });
    sdk.span('late work').end();
    await sdk.shutdown();
    const late = fx.store.getSpans(r.id).find((s) => s.name === 'late work');
    assert.ok(late, 'never lost');
    assert.equal(late.parentSpanId, r.rootSpanId);
    assert.equal(fx.store.getRollout(r.id)?.status, 'succeeded');
    assert.equal(fx.store.listRollouts().total, 1);
  });
  it('a late framework span of a finished rollout is merged into its stored gateway record, not stored beside it', async () => {
    const r = startLive();
    r.tracer.end({ spanId: r.rootSpanId, parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: r.record.startTime, attributes: {} });
    fx.store.finishRollout({ ...r.record, status: 'succeeded', endTime: Date.now(), spanCount: 2 });
    r.remove();
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'json', resource: { 'rollout_lab.rollout.id': r.id } });
    sdk.span('ChatOpenAI', { 'openinference.span.kind': 'LLM', 'gen_ai.response.id': 'chatcmpl-gw' }).end();
    await sdk.shutdown();
    const llm = fx.store.getSpans(r.id).filter((s) => s.kind === 'llm');
    assert.equal(llm.length, 1);
    assert.deepEqual([llm[0]!.spanId, llm[0]!.name, llm[0]!.attributes[Attr.matchedBy]], [r.gatewaySpanId, 'ChatOpenAI', 'response_id']);
  });

  it("a lab agent's CHAIN span is its step and credits what runs inside it; the SDK's wrapper names no agent", async () => {
    const r = startLive();
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
    const wrapper = sdk.span('Agent workflow', { 'openinference.span.kind': 'AGENT' });
    const chain = sdk.span('Coder', { 'openinference.span.kind': 'CHAIN' }, wrapper);
    sdk.span('run_tests', { 'openinference.span.kind': 'TOOL', 'input.value': '{}' }, chain).end();
    chain.end();
    wrapper.end();
    await sdk.shutdown();
    const spans = r.tracer.spans();
    const byName = (n: string): SpanRecord => spans.find((s) => s.name === n)!;
    assert.deepEqual([byName('Coder').attributes[Attr.agentName], byName('Coder').attributes[Attr.nodeName]], ['Coder', 'Coder']);
    assert.equal(byName('run_tests').attributes[Attr.agentName], 'Coder');
    assert.equal(byName('Agent workflow').attributes[Attr.agentName], undefined);
    r.remove();
  });
  it('without response ids: matched by the traceparent span, else by the prompt inside the framework span\'s time', async () => {
    const r = startLive();
    const rollout = live.get(r.id)!;
    const prompt = JSON.stringify([{ role: 'user', content: 'run the tests' }]);
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
    const agent = sdk.span('Coder', { 'openinference.span.kind': 'AGENT' });
    // The framework's llm span is current while its request goes out: the gateway's record names it by traceparent.
    const current = sdk.span('ChatOpenAI', { 'openinference.span.kind': 'LLM', 'llm.input_messages.0.message.role': 'user', 'llm.input_messages.0.message.content': 'other words' }, agent);
    const byContext = r.tracer.record(r.tracer.start('chat m', 'llm', current.spanContext().spanId, { [Attr.callSource]: 'gateway', [Attr.callerSpanId]: current.spanContext().spanId, [Attr.tokenIds]: [7] }));
    callMerger(rollout).gatewayCall(byContext);
    current.end();
    // No trace context: the same prompt, the gateway's call inside this span's time.
    const plain = sdk.span('ChatOpenAI', { 'openinference.span.kind': 'LLM', 'llm.input_messages.0.message.role': 'user', 'llm.input_messages.0.message.content': 'run the tests' }, agent);
    const byContent = r.tracer.record(r.tracer.start('chat m', 'llm', r.rootSpanId, { [Attr.callSource]: 'gateway', [Attr.inputMessages]: prompt, [Attr.tokenIds]: [8] }));
    callMerger(rollout).gatewayCall(byContent);
    await new Promise((done) => setTimeout(done, 5));
    plain.end();
    agent.end();
    await sdk.shutdown();
    const agentSpan = r.tracer.spans().find((s) => s.name === 'Coder')!;
    const calls = r.tracer.spans().filter((s) => s.kind === 'llm' && s.spanId !== r.gatewaySpanId);
    assert.deepEqual(
      calls.map((s) => [s.spanId, s.name, s.parentSpanId, s.attributes[Attr.matchedBy], s.attributes[Attr.tokenIds]]).sort(),
      [
        [byContext.spanId, 'ChatOpenAI', agentSpan.spanId, 'trace_context', [7]],
        [byContent.spanId, 'ChatOpenAI', agentSpan.spanId, 'content', [8]],
      ].sort(),
    );
    assert.ok(calls.every((s) => s.attributes[Attr.agentName] === 'Coder'));
    r.remove();
  });

  it("a tool span under a graph's tool node is the agent's whose model call asked for it (by its call id)", async () => {
    const r = startLive();
    const asked = JSON.stringify([{ role: 'assistant', content: '', tool_calls: [{ id: 'call_7', name: 'run_tests', arguments: '{}' }] }]);
    r.tracer.end(r.tracer.start('chat m', 'llm', r.rootSpanId, { [Attr.agentName]: 'Coder', [Attr.outputMessages]: asked }));
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
    const tools = sdk.span('tools', { 'openinference.span.kind': 'CHAIN' });
    sdk.span('run_tests', { 'openinference.span.kind': 'TOOL', 'tool_call.id': 'call_7', 'input.value': '{}' }, tools).end();
    tools.end();
    await sdk.shutdown();
    assert.equal(r.tracer.spans().find((s) => s.kind === 'tool')?.attributes[Attr.agentName], 'Coder');
    r.remove();
  });

  it('a call whose answer comes after a first tool span was linked still links the tool spans it asked for (its tool calls are read anew)', async () => {
    const r = startLive();
    // The agent's next call is in flight (no answer yet) when the first tool span arrives.
    const inFlight = r.tracer.start('chat m', 'llm', r.rootSpanId, { [Attr.agentName]: 'Coder' });
    const send = async (args: string): Promise<void> => {
      const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
      sdk.span('execute_tool run_tests', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'run_tests', 'gen_ai.tool.call.arguments': args }).end();
      await sdk.shutdown();
    };
    await send('{"file":"a.py"}');
    inFlight.attributes[Attr.outputMessages] = JSON.stringify([{ role: 'assistant', content: '', tool_calls: [{ id: 'call_9', name: 'run_tests', arguments: '{"file": "b.py"}' }] }]);
    r.tracer.end(inFlight);
    await send('{"file":"b.py"}');
    const tools = r.tracer.spans().filter((s) => s.kind === 'tool');
    assert.deepEqual(tools.map((s) => s.attributes[Attr.toolCallId] ?? null), [null, 'call_9'], 'the second tool span is the call_9 its answer asked for');
    r.remove();
  });

});
