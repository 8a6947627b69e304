import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { OtlpSpan, OtlpValue } from '../../../src/core/otlp/otlpModel';
import { labAgentStep } from '../../../src/core/otlp/openInferenceSpans';
import { normaliseSpan } from '../../../src/core/otlp/spanNormalise';
import { Attr } from '../../../src/core/trace/span';

function span(name: string, attrs: Array<[string, OtlpValue]>): OtlpSpan {
  return {
    traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), parentSpanId: 'c'.repeat(16), name, kind: 1, startMs: 1, endMs: 2,
    attributes: new Map(attrs), events: [], links: [], status: { code: 0, message: '' },
  };
}

// The shapes below are what @arizeai/openinference-instrumentation-langchain 4.1 and -openai-agents 0.2 write.
const lcMessage = (type: string, kwargs: Record<string, unknown>): Record<string, unknown> => ({ lc: 1, type: 'constructor', id: ['langchain_core', 'messages', type], kwargs });

test("LangChain's LLM span: the response id from the AIMessage in output.value, so the gateway's record of the call is found by it", () => {
  const output = { generations: [[{ text: '', message: lcMessage('AIMessage', { id: 'chatcmpl-7', content: '', tool_calls: [] }) }]] };
  const n = normaliseSpan(span('ChatOpenAI', [['openinference.span.kind', 'LLM'], ['output.value', JSON.stringify(output)], ['llm.input_messages.0.message.role', 'user'], ['llm.input_messages.0.message.content', 'hi']])).record;
  assert.equal(n.kind, 'llm');
  assert.equal(n.attributes[Attr.responseId], 'chatcmpl-7');
  assert.deepEqual(JSON.parse(String(n.attributes[Attr.inputMessages])), [{ role: 'user', content: 'hi' }]);
});

test("Python's LangChain: the completion's id from response_metadata, never the message's own run id", () => {
  const output = { generations: [[{ text: '', message: lcMessage('AIMessage', { id: 'lc_run--01a2-0', content: '', response_metadata: { id: 'chatcmpl-8', model_name: 'm' } }) }]] };
  assert.equal(normaliseSpan(span('ChatOpenAI', [['openinference.span.kind', 'LLM'], ['output.value', JSON.stringify(output)]])).record.attributes[Attr.responseId], 'chatcmpl-8');
  const runIdOnly = { generations: [[{ text: '', message: lcMessage('AIMessage', { id: 'run-5f1c', content: '' }) }]] };
  assert.equal(normaliseSpan(span('ChatOpenAI', [['openinference.span.kind', 'LLM'], ['output.value', JSON.stringify(runIdOnly)]])).record.attributes[Attr.responseId], undefined);
});

test("the Agents SDK's generation span: the response id from the raw chat completion in output.value", () => {
  const output = [{ id: 'chatcmpl-9', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }] }];
  assert.equal(normaliseSpan(span('generation', [['openinference.span.kind', 'LLM'], ['output.value', JSON.stringify(output)]])).record.attributes[Attr.responseId], 'chatcmpl-9');
  // A span that names its own response id keeps it.
  assert.equal(normaliseSpan(span('generation', [['openinference.span.kind', 'LLM'], ['gen_ai.response.id', 'own'], ['output.value', JSON.stringify(output)]])).record.attributes[Attr.responseId], 'own');
});

test("LangChain's tool span: call id, result and error from the ToolMessage in output.value (not the tool's input as its arguments' id)", () => {
  const ok = { output: lcMessage('ToolMessage', { status: 'success', content: '{"plan":"pro"}', tool_call_id: 'call_0', name: 'lookup_customer' }) };
  const n = normaliseSpan(span('lookup_customer', [['openinference.span.kind', 'TOOL'], ['input.value', 'C-17'], ['output.value', JSON.stringify(ok)], ['tool.name', 'lookup_customer']])).record;
  assert.equal(n.kind, 'tool');
  assert.equal(n.attributes[Attr.toolCallId], 'call_0');
  assert.equal(n.attributes[Attr.toolResult], '{"plan":"pro"}');
  assert.equal(n.status, 'unset');
  // Python's LangChain writes the message as message_to_dict does.
  const py = { type: 'tool', data: { content: '{"plan": "pro"}', type: 'tool', name: 'lookup_customer', id: null, tool_call_id: 'call_0', status: 'success' } };
  const p = normaliseSpan(span('lookup_customer', [['openinference.span.kind', 'TOOL'], ['input.value', 'C-17'], ['output.value', JSON.stringify(py)]])).record;
  assert.deepEqual([p.attributes[Attr.toolCallId], p.attributes[Attr.toolResult]], ['call_0', '{"plan": "pro"}']);
  const failed = { output: lcMessage('ToolMessage', { status: 'error', content: 'no such customer', tool_call_id: 'call_1' }) };
  const e = normaliseSpan(span('lookup_customer', [['openinference.span.kind', 'TOOL'], ['output.value', JSON.stringify(failed)]])).record;
  assert.deepEqual([e.status, e.attributes[Attr.toolName], e.attributes[Attr.toolResult]], ['error', 'lookup_customer', 'no such customer']);
});

test('a CHAIN or AGENT span named after an agent of the lab is its visit; a wrapper that names no lab agent is no agent', () => {
  const agents = new Set(['Support']);
  const chain = normaliseSpan(span('Support', [['openinference.span.kind', 'CHAIN']])).record;
  labAgentStep(chain, agents);
  assert.deepEqual([chain.attributes[Attr.agentName], chain.attributes[Attr.nodeName], chain.attributes[Attr.operationName]], ['Support', 'Support', 'invoke_agent']);
  const workflow = normaliseSpan(span('Agent workflow', [['openinference.span.kind', 'AGENT']])).record;
  labAgentStep(workflow, agents);
  assert.deepEqual([workflow.attributes[Attr.agentName], workflow.attributes[Attr.nodeName], workflow.attributes['rollout_lab.framework.agent'], workflow.attributes[Attr.frameworkStep]], [undefined, undefined, 'Agent workflow', true]);
  assert.equal(chain.attributes[Attr.frameworkStep], undefined);
  // A GenAI agent span of a lab agent stays its step.
  const genAi = normaliseSpan(span('invoke_agent Support', [['gen_ai.operation.name', 'invoke_agent'], ['gen_ai.agent.name', 'Support']])).record;
  labAgentStep(genAi, agents);
  assert.deepEqual([genAi.attributes[Attr.agentName], genAi.attributes[Attr.nodeName], genAi.attributes[Attr.frameworkStep]], ['Support', 'Support', undefined]);
  // The SDK's turn spans name their agent: they stay its (not visits: their node is "turn").
  const turn = normaliseSpan(span('turn', [['openinference.span.kind', 'CHAIN'], ['gen_ai.agent.name', 'Support']])).record;
  labAgentStep(turn, agents);
  assert.deepEqual([turn.attributes[Attr.agentName], turn.attributes[Attr.operationName], turn.attributes[Attr.frameworkStep]], ['Support', undefined, true]);
  // A chain named after no agent is left as it is.
  const other = normaliseSpan(span('RunnableSequence', [['openinference.span.kind', 'CHAIN']])).record;
  labAgentStep(other, agents);
  assert.equal(other.attributes[Attr.agentName], undefined);
});

test('without indexed messages, the prompt and answer come from input.value and output.value as the instrumentations write them', () => {
  const input = { messages: [[lcMessage('SystemMessage', { content: 'You are Support.' }), lcMessage('HumanMessage', { content: 'C-17 is locked out' })]] };
  const output = { generations: [[{ text: '', message: lcMessage('AIMessage', { id: 'chatcmpl-3', content: '', tool_calls: [{ name: 'lookup_customer', args: { id: 'C-17' }, id: 'call_0', type: 'tool_call' }] }) }]] };
  const lc = normaliseSpan(span('ChatOpenAI', [['openinference.span.kind', 'LLM'], ['input.value', JSON.stringify(input)], ['output.value', JSON.stringify(output)]])).record;
  assert.deepEqual(JSON.parse(String(lc.attributes[Attr.inputMessages])), [{ role: 'system', content: 'You are Support.' }, { role: 'user', content: 'C-17 is locked out' }]);
  assert.deepEqual(JSON.parse(String(lc.attributes[Attr.outputMessages])), [{ role: 'assistant', content: '', tool_calls: [{ id: 'call_0', name: 'lookup_customer', arguments: '{"id":"C-17"}' }] }]);
  const sdkIn = [{ role: 'system', content: 'You are Support.' }, { role: 'tool', tool_call_id: 'call_0', content: '{"plan":"pro"}' }];
  const sdkOut = [{ id: 'chatcmpl-4', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: '{"queue":"tech"}' } }] }];
  const sdk = normaliseSpan(span('generation', [['openinference.span.kind', 'LLM'], ['input.value', JSON.stringify(sdkIn)], ['output.value', JSON.stringify(sdkOut)]])).record;
  assert.deepEqual(JSON.parse(String(sdk.attributes[Attr.inputMessages])), [{ role: 'system', content: 'You are Support.' }, { role: 'tool', content: '{"plan":"pro"}', tool_call_id: 'call_0' }]);
  assert.deepEqual(JSON.parse(String(sdk.attributes[Attr.outputMessages])), [{ role: 'assistant', content: '{"queue":"tech"}' }]);
  // Plain text stays what the generic mapping made of it.
  const text = normaliseSpan(span('llm', [['openinference.span.kind', 'LLM'], ['input.value', 'hello'], ['output.value', 'hi']])).record;
  assert.deepEqual([JSON.parse(String(text.attributes[Attr.inputMessages])), JSON.parse(String(text.attributes[Attr.outputMessages]))], [[{ role: 'user', content: 'hello' }], [{ role: 'assistant', content: 'hi' }]]);
});
