import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type OpenAI from 'openai';
import { Attr } from '../../../src/core/trace/span';
import { tokenId, tokensOf } from '../../fakes/openaiStub';
import { gatewaySetup, type GatewaySetup } from './gatewayHarness';

let setup: GatewaySetup | null = null;
afterEach(async () => {
  await setup?.close();
  setup = null;
});

const ANSWER = 'APOE4 carriers show more amyloid-beta.';
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Does APOE4 raise amyloid-beta?' }];

describe('recording gateway: stream: true', () => {
  it('streams the recorded answer in chunks: role, content, finish, usage, [DONE]; the upstream call is recorded once', async () => {
    setup = await gatewaySetup({ server: 'vllm', replies: [{ content: ANSWER }] }, { logprobs: true, tokenIds: true });
    const stream = await setup
      .client({ agent: 'Geneticist' })
      .chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks[0]!.choices[0]!.delta.role, 'assistant');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), ANSWER);
    assert.equal(chunks.at(-2)!.choices[0]!.finish_reason, 'stop');
    assert.deepEqual(chunks.at(-1)!.choices, []);
    assert.equal(chunks.at(-1)!.usage!.completion_tokens, tokensOf(ANSWER).length);
    assert.equal(setup.stub.requests[0]!.body.stream, undefined, 'upstream is asked without streaming');
    const [span] = setup.llmSpans();
    assert.equal(span!.status, 'ok');
    assert.deepEqual(span!.attributes[Attr.tokenIds], tokensOf(ANSWER).map(tokenId));
  });

  it('streams tool calls with index, id, name and arguments; the stream helper assembles them', async () => {
    setup = await gatewaySetup({ server: 'llama.cpp', replies: [{ toolCalls: [{ name: 'search', arguments: { q: 'APOE4' } }, { name: 'fetch', arguments: { id: 7 } }] }] });
    const tools: OpenAI.Chat.ChatCompletionFunctionTool[] = ['search', 'fetch'].map((name) => ({
      type: 'function',
      function: { name, parameters: { type: 'object', properties: {} } },
    }));
    const final = await setup.client({ agent: 'Geneticist' }).chat.completions.stream({ model: 'm', messages, tools }).finalChatCompletion();
    const calls = final.choices[0]!.message.tool_calls as OpenAI.Chat.ChatCompletionMessageFunctionToolCall[];
    assert.deepEqual(
      calls.map((c) => [c.function.name, JSON.parse(c.function.arguments)]),
      [
        ['search', { q: 'APOE4' }],
        ['fetch', { id: 7 }],
      ],
    );
    assert.ok(calls.every((c) => /^[0-9a-f]{9}$/.test(c.id)), 'unique ids, not the empty ones llama.cpp sent');
    assert.equal(final.choices[0]!.finish_reason, 'tool_calls');
    const recorded = JSON.parse(setup.llmSpans()[0]!.attributes[Attr.outputMessages] as string) as Array<{ tool_calls: Array<{ id: string }> }>;
    assert.deepEqual(
      recorded[0]!.tool_calls.map((c) => c.id),
      calls.map((c) => c.id),
    );
  });

  it('an answer cut at max_tokens streams finish_reason length', async () => {
    setup = await gatewaySetup({ replies: [{ content: ANSWER }] });
    const final = await setup.client({ agent: 'Geneticist' }).chat.completions.stream({ model: 'm', messages, max_tokens: 2 }).finalChatCompletion();
    assert.equal(final.choices[0]!.finish_reason, 'length');
    assert.equal(setup.llmSpans()[0]!.attributes[Attr.truncated], true);
  });
});
