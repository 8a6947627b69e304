import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { LiveRollouts } from '../../../src/core/trace/liveRollouts';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr } from '../../../src/core/trace/span';
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

  function startLive(): { id: string; tracer: RolloutTracer; rootSpanId: string; remove: () => void; record: RolloutRecord } {
    const id = newTraceId();
    const tracer = new RolloutTracer(id, fx.store);
    fx.store.startRun({ id: 'run-cmd', startTime: 0, endTime: null, status: 'running', params: {}, simulated: false, planned: 1 });
    const record: RolloutRecord = {
      id, runId: 'run-cmd', taskId: 't', split: null, sample: 0, status: 'running', failure: null, finalReward: null, criteria: null, judgeFailed: false,
      decision: null, expectedDecision: null, turns: null, error: null, simulated: false, startTime: Date.now(), endTime: null, spanCount: 0, agents: [],
    };
    fx.store.startRollout(record);
    const root = tracer.start('rollout', 'rollout', null);
    // The gateway already recorded this model call (with logprobs): the agent's own span of it is a duplicate.
    tracer.end(tracer.start('chat m', 'llm', root, { [Attr.responseId]: 'chatcmpl-gw', [Attr.logprobs]: [-0.1] }));
    const remove = live.add({ id, runId: 'run-cmd', taskId: 't', sample: 0, tracer, root, seed: 1 });
    return { id, tracer, rootSpanId: root.spanId, remove, record };
  }

  it("hands spans naming a live rollout to its tracer, under its root, and drops the gateway's model calls", async () => {
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
    assert.equal(spans.filter((s) => s.attributes[Attr.responseId] === 'chatcmpl-gw').length, 1);
    const tool = spans.find((s) => s.kind === 'tool')!;
    assert.equal(tool.attributes[Attr.agentName], 'Coder');
    assert.equal(fx.store.getSpans(r.id).length, 4, 'written to the store as they arrive');
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
});
