import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { airByCall } from '../../../src/core/train/export/adapters/rlAdapter';
import { LiveRollouts } from '../../../src/core/trace/liveRollouts';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr } from '../../../src/core/trace/span';
import { receiverFixture, sdkFixture, type ReceiverFixture } from './helpers';

describe('OTLP receiver: rewards an agent sends from inside a live rollout (gen_ai.evaluation.result events)', () => {
  let fx: ReceiverFixture;
  const live = new LiveRollouts();
  beforeEach(async () => {
    fx = await receiverFixture({ live });
  });
  afterEach(async () => {
    await fx.close();
  });

  function startLive(): { id: string; tracer: RolloutTracer; remove: () => void } {
    const id = newTraceId();
    const tracer = new RolloutTracer(id, fx.store);
    const root = tracer.start('rollout', 'rollout', null);
    // The gateway's record of the agent's first call, which asked for the tool call call_7.
    const toolCall = [{ id: 'call_7', type: 'function', function: { name: 'lookup_customer', arguments: '{"id":"C-17"}' } }];
    tracer.end(
      tracer.start('chat m', 'llm', root, {
        [Attr.agentName]: 'Support',
        [Attr.responseId]: 'chatcmpl-1',
        [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: '', tool_calls: toolCall }]),
      }),
    );
    const remove = live.add({ id, runId: 'run-cmd', taskId: 't', sample: 0, tracer, root, seed: 1 });
    return { id, tracer, remove };
  }

  it('turns each evaluation event into an intermediate reward span under the span that carried it, credited as AIR rewards are', async () => {
    const r = startLive();
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'protobuf', resource: { 'rollout_lab.rollout.id': r.id } });
    const agent = sdk.span('invoke_agent Support', { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'Support' });
    const tool = sdk.span('execute_tool lookup_customer', { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup_customer', 'gen_ai.tool.call.id': 'call_7' }, agent);
    tool.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'found_customer', 'gen_ai.evaluation.score.value': 0.25, 'gen_ai.evaluation.explanation': 'C-17 exists' });
    tool.end();
    agent.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'polite', 'gen_ai.evaluation.score.value': 0.5, 'gen_ai.agent.name': 'Reviewer' });
    // Not an evaluation (no score): kept as the span's event, no reward made of it.
    agent.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'unscored' });
    agent.end();
    await sdk.shutdown();

    const spans = r.tracer.spans();
    const rewards = spans.filter((s) => s.kind === 'reward');
    assert.deepEqual(rewards.map((s) => s.name).sort(), ['found_customer', 'polite']);
    const toolSpan = spans.find((s) => s.kind === 'tool')!;
    const agentSpan = spans.find((s) => s.name === 'invoke_agent Support')!;
    const found = rewards.find((s) => s.name === 'found_customer')!;
    assert.equal(found.parentSpanId, toolSpan.spanId, 'under the tool span that carried the event');
    assert.equal(found.traceId, r.id);
    assert.equal(found.attributes[Attr.rewardKind], 'intermediate');
    assert.equal(found.attributes[Attr.rewardValue], 0.25);
    assert.equal(found.attributes[Attr.agentName], 'Support', "inherited from the agent span, as the tool's own agent is");
    assert.equal(found.attributes[Attr.rewardInfo], 'C-17 exists');
    assert.ok(found.startTime >= toolSpan.startTime && found.startTime <= toolSpan.endTime, "at the event's time, within its span");
    const polite = rewards.find((s) => s.name === 'polite')!;
    assert.equal(polite.parentSpanId, agentSpan.spanId);
    assert.equal(polite.attributes[Attr.agentName], 'Reviewer', "the event's own agent wins");
    assert.equal(fx.store.getSpans(r.id).filter((s) => s.kind === 'reward').length, 2, 'written to the store with the rollout');

    // The tool's reward goes to the model call that asked for call_7.
    const gatewayCall = spans.find((s) => s.attributes[Attr.responseId] === 'chatcmpl-1')!;
    assert.equal(airByCall(spans).get(gatewayCall.spanId), 0.25);
    r.remove();
  });

  it('makes no reward spans for a trace that names no live rollout: its evaluations stay the imported rollout\'s own scores', async () => {
    const sdk = sdkFixture(fx.receiver.url, { protocol: 'json' });
    const root = sdk.span('agent run');
    root.addEvent('gen_ai.evaluation.result', { 'gen_ai.evaluation.name': 'reward', 'gen_ai.evaluation.score.value': 0.75 });
    root.end();
    await sdk.shutdown();
    const [rollout] = fx.store.listRollouts().rollouts;
    assert.equal(rollout?.finalReward, 0.75);
    assert.equal(fx.store.getSpans(rollout!.id).filter((s) => s.kind === 'reward').length, 0);
  });
});
