import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OtlpSpan, OtlpValue } from '../../../src/core/otlp/otlpModel';
import { normaliseSpan } from '../../../src/core/otlp/spanNormalise';
import { Attr } from '../../../src/core/trace/span';

function span(attrs: Array<[string, OtlpValue]>, over: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), parentSpanId: 'c'.repeat(16), name: 's', kind: 1, startMs: 1, endMs: 2,
    attributes: new Map(attrs), events: [], links: [], status: { code: 0, message: '' }, ...over,
  };
}
const kv = (entries: Array<[string, OtlpValue]>): Map<string, OtlpValue> => new Map(entries);

test('current GenAI messages given as structured values (not JSON text), with tool call responses and tool definitions', () => {
  const n = normaliseSpan(
    span([
      ['gen_ai.operation.name', 'chat'],
      ['gen_ai.input.messages', [
        kv([['role', 'user'], ['parts', [kv([['type', 'text'], ['content', 'weather?']])]]]),
        kv([['role', 'tool'], ['parts', [kv([['type', 'tool_call_response'], ['id', 'c1'], ['response', kv([['temp', 21]])]])]]]),
      ]],
      ['gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: 'It is ' }, { type: 'text', content: '21.' }], finish_reason: 'length' }])],
      ['gen_ai.tool.definitions', JSON.stringify([{ name: 'weather' }])],
    ]),
  );
  assert.equal(n.record.kind, 'llm');
  assert.deepEqual(JSON.parse(String(n.record.attributes[Attr.inputMessages])), [
    { role: 'user', content: 'weather?' },
    { role: 'tool', content: '{"temp":21}', tool_call_id: 'c1' },
  ]);
  assert.deepEqual(JSON.parse(String(n.record.attributes[Attr.outputMessages])), [{ role: 'assistant', content: 'It is 21.' }]);
  assert.deepEqual(n.record.attributes[Attr.finishReasons], ['length']);
  assert.equal(n.record.attributes[Attr.truncated], true);
  assert.equal(n.record.attributes['gen_ai.request.tools'], '[{"name":"weather"}]');
  assert.equal(typeof n.record.attributes[Attr.inputMessages], 'string');
});

test('per-message GenAI events and gen_ai.choice become the messages; the events are not kept twice', () => {
  const n = normaliseSpan(
    span([['gen_ai.system', 'openai'], ['gen_ai.request.model', 'gpt-4o']], {
      events: [
        { name: 'gen_ai.system.message', timeMs: 1, attributes: kv([['content', 'Be kind.']]) },
        { name: 'gen_ai.user.message', timeMs: 1, attributes: kv([['content', 'Hi']]) },
        { name: 'gen_ai.choice', timeMs: 2, attributes: kv([['finish_reason', 'tool_calls'], ['message', JSON.stringify({ content: '', tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }] })]]) },
        { name: 'exception', timeMs: 2, attributes: kv([['exception.message', 'boom']]) },
      ],
    }),
  );
  assert.equal(n.record.kind, 'llm', 'a span with a model and no operation is a model call');
  assert.equal(n.record.attributes[Attr.providerName], 'openai');
  assert.deepEqual(JSON.parse(String(n.record.attributes[Attr.inputMessages])), [
    { role: 'system', content: 'Be kind.' },
    { role: 'user', content: 'Hi' },
  ]);
  assert.deepEqual(JSON.parse(String(n.record.attributes[Attr.outputMessages])), [{ role: 'assistant', content: '', tool_calls: [{ id: 't', name: 'f', arguments: '{}' }] }]);
  assert.deepEqual(n.record.attributes[Attr.finishReasons], ['tool_calls']);
  assert.deepEqual(JSON.parse(String(n.record.attributes['rollout_lab.otlp.events'])).map((e: { name: string }) => e.name), ['exception']);
});

test('evaluations from events and from an evaluation span; attribute values that are not flat become JSON; the status maps', () => {
  const n = normaliseSpan(
    span([['gen_ai.evaluation.name', 'relevance'], ['gen_ai.evaluation.score.value', 0.5], ['nested', kv([['a', [1, 'x']]])], ['list', ['a', 'b']], ['raw', new Uint8Array([1, 2])]], {
      parentSpanId: null,
      status: { code: 2, message: 'bad' },
      events: [{ name: 'gen_ai.evaluation.result', timeMs: 1, attributes: kv([['gen_ai.evaluation.name', 'reward'], ['gen_ai.evaluation.score.value', 0.9]]) }],
    }),
  );
  assert.deepEqual(n.evaluations, [{ name: 'reward', score: 0.9 }, { name: 'relevance', score: 0.5 }]);
  assert.equal(n.record.attributes.nested, '{"a":[1,"x"]}');
  assert.deepEqual(n.record.attributes.list, ['a', 'b']);
  assert.equal(n.record.attributes.raw, 'AQI=');
  assert.deepEqual([n.record.status, n.record.statusMessage, n.record.kind], ['error', 'bad', 'node']);
  assert.equal(n.record.attributes['rollout_lab.otlp.events'], undefined);
});

test("the agent name: gen_ai.agent.name, an invoke_agent span's name, an OpenInference AGENT span's name", () => {
  assert.equal(normaliseSpan(span([['gen_ai.operation.name', 'invoke_agent']], { name: 'invoke_agent Critic' })).record.attributes[Attr.agentName], 'Critic');
  const oi = normaliseSpan(span([['openinference.span.kind', 'AGENT']], { name: 'Router' }));
  assert.deepEqual([oi.isAgentSpan, oi.record.attributes[Attr.agentName], oi.record.attributes[Attr.nodeName], oi.record.attributes[Attr.operationName]], [true, 'Router', 'Router', 'invoke_agent']);
  // A retriever is a call out for documents, as a tool call is: its query and documents are the tool's arguments and result.
  const retriever = normaliseSpan(span([['openinference.span.kind', 'RETRIEVER'], ['input.value', 'APOE4'], ['output.value', '[{"page_content":"doc"}]']], { name: 'VectorStoreRetriever' })).record;
  assert.deepEqual([retriever.kind, retriever.attributes[Attr.toolName], retriever.attributes[Attr.toolArguments], retriever.attributes[Attr.toolResult]], ['tool', 'VectorStoreRetriever', 'APOE4', '[{"page_content":"doc"}]']);
  assert.equal(normaliseSpan(span([['openinference.span.kind', 'CHAIN']])).record.kind, 'node');
  assert.equal(normaliseSpan(span([['rollout_lab.span.kind', 'reward']])).record.kind, 'reward');
  assert.equal(normaliseSpan(span([['rollout_lab.span.kind', 'reward']])).record.attributes['rollout_lab.span.kind'], undefined);
});

test('older GenAI conventions carry the tool round trip a training row needs: the assistant tool call and the tool result, as indexed attributes or as events', () => {
  const want = [
    { role: 'user', content: 'Look up C-17' },
    { role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'lookup_customer', arguments: '{"id":"C-17"}' }] },
    { role: 'tool', content: '{"plan":"pro"}', tool_call_id: 'c1' },
  ];
  const indexed = normaliseSpan(
    span([
      ['gen_ai.system', 'openai'],
      ['gen_ai.prompt.0.role', 'user'],
      ['gen_ai.prompt.0.content', 'Look up C-17'],
      ['gen_ai.prompt.1.role', 'assistant'],
      ['gen_ai.prompt.1.tool_calls.0.id', 'c1'],
      ['gen_ai.prompt.1.tool_calls.0.name', 'lookup_customer'],
      ['gen_ai.prompt.1.tool_calls.0.arguments', '{"id":"C-17"}'],
      ['gen_ai.prompt.2.role', 'tool'],
      ['gen_ai.prompt.2.content', '{"plan":"pro"}'],
      ['gen_ai.prompt.2.tool_call_id', 'c1'],
      ['gen_ai.completion.0.role', 'assistant'],
      ['gen_ai.completion.0.content', 'Plan pro.'],
    ]),
  ).record;
  assert.equal(indexed.kind, 'llm');
  assert.deepEqual(JSON.parse(String(indexed.attributes[Attr.inputMessages])), want);
  assert.deepEqual(JSON.parse(String(indexed.attributes[Attr.outputMessages])), [{ role: 'assistant', content: 'Plan pro.' }]);

  const events = normaliseSpan(
    span([['gen_ai.operation.name', 'chat']], {
      events: [
        { name: 'gen_ai.user.message', timeMs: 1, attributes: kv([['content', 'Look up C-17']]) },
        { name: 'gen_ai.assistant.message', timeMs: 1, attributes: kv([['tool_calls', JSON.stringify([{ id: 'c1', type: 'function', function: { name: 'lookup_customer', arguments: '{"id":"C-17"}' } }])]]) },
        { name: 'gen_ai.tool.message', timeMs: 1, attributes: kv([['content', '{"plan":"pro"}'], ['id', 'c1']]) },
        { name: 'gen_ai.choice', timeMs: 2, attributes: kv([['finish_reason', 'stop'], ['message', JSON.stringify({ content: 'Plan pro.' })]]) },
      ],
    }),
  ).record;
  assert.deepEqual(JSON.parse(String(events.attributes[Attr.inputMessages])), want);
  assert.deepEqual(JSON.parse(String(events.attributes[Attr.outputMessages])), [{ role: 'assistant', content: 'Plan pro.' }]);
  assert.deepEqual(events.attributes[Attr.finishReasons], ['stop']);
});
