import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LlmCallMerger, matchCall } from '../../../src/core/trace/llmCallMerge';
import { newSpanId, newTraceId } from '../../../src/core/trace/ids';
import { Attr, type Attributes, type SpanRecord } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';

const PROMPT = JSON.stringify([{ role: 'system', content: 'You are Support.' }, { role: 'user', content: 'C-17 cannot log in' }]);

function rec(traceId: string, over: Partial<SpanRecord> & { attributes?: Attributes }): SpanRecord {
  return { traceId, spanId: newSpanId(), parentSpanId: null, name: 'x', kind: 'llm', startTime: 100, endTime: 200, status: 'ok', ...over, attributes: { ...over.attributes } };
}

/** The gateway's record of a call: tokens, ids, logprobs, the prompt as it was sent. */
const gatewayRecord = (traceId: string, over: Partial<SpanRecord> & { attributes?: Attributes } = {}): SpanRecord =>
  rec(traceId, {
    name: 'chat served',
    startTime: 120,
    endTime: 180,
    parentSpanId: 'r'.repeat(16),
    ...over,
    attributes: { [Attr.callSource]: 'gateway', [Attr.agentName]: 'Support', [Attr.inputMessages]: PROMPT, [Attr.tokenIds]: [1, 2], [Attr.logprobs]: [-0.1, -0.2], [Attr.inputTokens]: 30, ...over.attributes },
  });

/** A framework's span of a call (OpenInference): its own name and parent, no response id. */
const frameworkSpan = (traceId: string, over: Partial<SpanRecord> & { attributes?: Attributes } = {}): SpanRecord =>
  rec(traceId, {
    name: 'ChatOpenAI',
    parentSpanId: 'a'.repeat(16),
    ...over,
    attributes: { 'openinference.span.kind': 'LLM', [Attr.inputMessages]: PROMPT, 'output.value': '{"generations":[]}', 'llm.input_messages.0.message.role': 'system', ...over.attributes },
  });

function setup(): { tracer: RolloutTracer; merger: LlmCallMerger } {
  const tracer = new RolloutTracer(newTraceId(), null);
  return { tracer, merger: new LlmCallMerger({ add: (s) => tracer.add(s), replace: (s) => tracer.replace(s) }, new Set(['Support'])) };
}

test('gateway first, framework span later: one llm span with the gateway id, tokens and token ids, the framework name and parent', () => {
  const { tracer, merger } = setup();
  const g = merger.gatewayCall(gatewayRecord(tracer.traceId));
  const f = frameworkSpan(tracer.traceId);
  const kept = merger.frameworkCall(f);
  const llm = tracer.spans().filter((s) => s.kind === 'llm');
  assert.equal(llm.length, 1);
  assert.equal(kept.spanId, g.spanId, 'the id already written stays');
  assert.equal(kept.name, 'ChatOpenAI');
  assert.equal(kept.parentSpanId, f.parentSpanId, "the framework's nesting");
  assert.deepEqual([kept.startTime, kept.endTime], [100, 200]);
  assert.deepEqual(kept.attributes[Attr.tokenIds], [1, 2]);
  assert.deepEqual(kept.attributes[Attr.logprobs], [-0.1, -0.2]);
  assert.equal(kept.attributes[Attr.matchedBy], 'content');
  assert.equal(kept.attributes[Attr.mergedSpanId], f.spanId);
  assert.equal(kept.attributes[Attr.spanRevision], 1);
  assert.equal(kept.attributes['output.value'], undefined, "the framework's raw copy of the answer is not kept twice");
  assert.equal(merger.resolve(f.spanId), g.spanId, "a span under the framework's record hangs under the merged one");
});

test('framework span first, the gateway record after: one span again, under the id written first', () => {
  const { tracer, merger } = setup();
  const f = merger.frameworkCall(frameworkSpan(tracer.traceId));
  assert.equal(f.attributes[Attr.unmatchedCall], undefined, 'not flagged while the rollout has no gateway call: it may be the only record');
  const g = gatewayRecord(tracer.traceId);
  const kept = merger.gatewayCall(g);
  assert.equal(tracer.spans().length, 1);
  assert.equal(kept.spanId, f.spanId);
  assert.deepEqual(kept.attributes[Attr.tokenIds], [1, 2]);
  assert.equal(merger.resolve(g.spanId), f.spanId);
});

test('matching rules: the response id decides when both have one; else the traceparent span; else the prompt inside the framework span\'s time', () => {
  const t = newTraceId();
  const g = gatewayRecord(t, { attributes: { [Attr.responseId]: 'chatcmpl-1' } });
  assert.equal(matchCall(frameworkSpan(t, { attributes: { [Attr.responseId]: 'chatcmpl-1' } }), g), 'response_id');
  assert.equal(matchCall(frameworkSpan(t, { attributes: { [Attr.responseId]: 'chatcmpl-2' } }), g), null, 'another call, whatever its prompt');
  // A framework span that was current during the request is that call's, even under an id of the framework's own.
  const own = frameworkSpan(t, { attributes: { [Attr.responseId]: 'run-1' } });
  assert.equal(matchCall(own, gatewayRecord(t, { attributes: { [Attr.responseId]: 'chatcmpl-1', [Attr.callerSpanId]: own.spanId } })), 'trace_context');
  // The framework's llm span was current when the request went out: it is the gateway record's caller.
  const f = frameworkSpan(t, { attributes: { [Attr.inputMessages]: '[{"role":"user","content":"other words"}]' } });
  assert.equal(matchCall(f, gatewayRecord(t, { attributes: { [Attr.callerSpanId]: f.spanId } })), 'trace_context');
  // Its parent was current (the framework did not make its llm span current): the caller is the parent, and the times must agree.
  assert.equal(matchCall(f, gatewayRecord(t, { attributes: { [Attr.callerSpanId]: f.parentSpanId! } })), 'trace_context');
  assert.equal(matchCall(f, gatewayRecord(t, { startTime: 900, endTime: 950, attributes: { [Attr.callerSpanId]: f.parentSpanId! } })), null);
  // The same prompt, but the gateway's call is outside the framework span's time: another call.
  assert.equal(matchCall(frameworkSpan(t), gatewayRecord(t, { startTime: 400, endTime: 450 })), null);
  assert.equal(matchCall(frameworkSpan(t), gatewayRecord(t)), 'content');
});

test('two calls with the same prompt are told apart by time; an unmatched framework span is flagged once the rollout has gateway calls, until its pair comes', () => {
  const { tracer, merger } = setup();
  const g1 = merger.gatewayCall(gatewayRecord(tracer.traceId, { startTime: 120, endTime: 180 }));
  const g2 = merger.gatewayCall(gatewayRecord(tracer.traceId, { startTime: 320, endTime: 380 }));
  const second = merger.frameworkCall(frameworkSpan(tracer.traceId, { startTime: 300, endTime: 400 }));
  assert.equal(second.spanId, g2.spanId);
  const stray = merger.frameworkCall(frameworkSpan(tracer.traceId, { startTime: 600, endTime: 700 }));
  assert.equal(stray.attributes[Attr.unmatchedCall], true, 'no gateway record of it (yet): flagged, so it is neither exported nor counted');
  const first = merger.frameworkCall(frameworkSpan(tracer.traceId, { startTime: 100, endTime: 200 }));
  assert.equal(first.spanId, g1.spanId);
  const late = merger.gatewayCall(gatewayRecord(tracer.traceId, { startTime: 620, endTime: 680 }));
  assert.equal(late.spanId, stray.spanId, "the stray's gateway record came after all");
  assert.equal(late.attributes[Attr.unmatchedCall], undefined, 'and the flag is gone');
  assert.equal(tracer.spans().filter((s) => s.kind === 'llm').length, 3);
});

test("the framework's agent wins when it is one of the lab's; a wrapper's name does not replace the gateway's agent", () => {
  const { tracer, merger } = setup();
  merger.gatewayCall(gatewayRecord(tracer.traceId));
  const kept = merger.frameworkCall(frameworkSpan(tracer.traceId, { attributes: { [Attr.agentName]: 'Agent workflow' } }));
  assert.equal(kept.attributes[Attr.agentName], 'Support');
});

test('settle: a gateway record whose traceparent span never arrived hangs under the root; one under a merged record follows it', () => {
  const { tracer, merger } = setup();
  const root = 'f'.repeat(16);
  const orphan = merger.gatewayCall(gatewayRecord(tracer.traceId, { parentSpanId: 'd'.repeat(16), attributes: { [Attr.callerSpanId]: 'd'.repeat(16), [Attr.inputMessages]: '[{"role":"user","content":"q"}]' } }));
  merger.settle(new Set(tracer.spans().map((s) => s.spanId)), root);
  const moved = tracer.spans().find((s) => s.spanId === orphan.spanId)!;
  assert.equal(moved.parentSpanId, root);
  assert.equal(moved.attributes[Attr.callerSpanId], 'd'.repeat(16), 'the caller it named is kept');
  assert.equal(moved.attributes[Attr.spanRevision], 1);
  // A record already under the root (no traceparent) or under a span that came is left as it is: not written again.
  const t2 = new RolloutTracer(newTraceId(), null);
  const written: SpanRecord[] = [];
  const quiet = new LlmCallMerger({ add: (s) => t2.add(s), replace: (s) => written.push(s) });
  quiet.gatewayCall(gatewayRecord(t2.traceId, { parentSpanId: root }));
  quiet.settle(new Set(), root);
  assert.deepEqual(written, []);
});

test('late spans: a merger over a finished rollout\'s stored spans pairs a framework span with its stored gateway record', () => {
  const t = newTraceId();
  const stored = [gatewayRecord(t, { attributes: { [Attr.responseId]: 'chatcmpl-5' } })];
  const written: SpanRecord[] = [];
  const merger = LlmCallMerger.over(stored, { add: (s) => written.push(s), replace: (s) => written.push(s) });
  const kept = merger.frameworkCall(frameworkSpan(t, { attributes: { [Attr.responseId]: 'chatcmpl-5' } }));
  assert.equal(kept.spanId, stored[0]!.spanId);
  assert.equal(kept.attributes[Attr.matchedBy], 'response_id');
  assert.deepEqual(written, [kept]);
  const stray = merger.frameworkCall(frameworkSpan(t, { attributes: { [Attr.responseId]: 'chatcmpl-6' } }));
  assert.equal(stray.attributes[Attr.unmatchedCall], true, 'the rollout is over and its calls went through the gateway: no pair will come');
});
