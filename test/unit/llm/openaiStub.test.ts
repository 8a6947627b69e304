import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import OpenAI from 'openai';
import { startOpenAIStub, tokensOf, type OpenAIStub } from '../../fakes/openaiStub';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

// The double itself, as other suites use it: the real openai client reads what it sends.
describe('the OpenAI-compatible stub', () => {
  it('streams SSE chunks the openai client assembles into one completion, tool calls and usage included', async () => {
    stub = await startOpenAIStub({ replies: [{ content: 'APOE4 raises amyloid.' }, { toolCalls: [{ name: 'lookup', arguments: { q: 'tau' } }] }] });
    const client = new OpenAI({ baseURL: stub.url, apiKey: 'x', maxRetries: 0 });
    const text = await client.chat.completions
      .stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } })
      .finalChatCompletion();
    assert.equal(text.choices[0]!.message.content, 'APOE4 raises amyloid.');
    assert.equal(text.usage?.completion_tokens, tokensOf('APOE4 raises amyloid.').length);
    const calls = await client.chat.completions.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }).finalChatCompletion();
    const call = calls.choices[0]!.message.tool_calls![0]!;
    assert.equal(call.type === 'function' && call.function.arguments, '{"q":"tau"}');
    assert.equal(calls.choices[0]!.finish_reason, 'tool_calls');
    assert.equal(stub.requests[0]!.body.stream, true);
  });

  it('answers an unscripted request with a 500 that says so', async () => {
    stub = await startOpenAIStub({ replies: [] });
    const client = new OpenAI({ baseURL: stub.url, apiKey: 'x', maxRetries: 0 });
    await assert.rejects(client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }), /no scripted reply for request 0/);
  });
});
