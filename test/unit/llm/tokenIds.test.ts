import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage, SystemMessage, type AIMessage } from '@langchain/core/messages';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import type { RoutedResponseMetadata } from '../../../src/core/llm/responseMetadata';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, tokenId, tokensOf, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt, traced } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

const ask = [new SystemMessage('[agent: Geneticist]\nAnswer.'), new HumanMessage('Does APOE4 raise amyloid-beta?')];
const answer = 'APOE4 carriers show more amyloid-beta, as the cohort data suggest.';

describe('token ids and logprobs wherever the server gives them', () => {
  it('llama.cpp: ignores return_token_ids but puts each id in logprobs.content[].id — they are stored, one per logprob', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: [{ content: answer }] });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true, tokenIds: true }) });
    const { output, llm } = await traced(model, ask);
    const span = llm[0]!;
    const tokens = tokensOf(answer);
    assert.deepEqual(span.attributes[Attr.tokenIds], tokens.map(tokenId));
    assert.equal((span.attributes[Attr.logprobs] as number[]).length, tokens.length);
    assert.deepEqual(span.attributes[Attr.logprobTokens], tokens);
    assert.equal(stub.requests[0]!.body.return_token_ids, true);
    assert.deepEqual((output as AIMessage).response_metadata.token_ids, tokens.map(tokenId));
  });

  it('llama.cpp: sends top_logprobs so it returns the sampled tokens without 20 alternatives each, and keeps no alternatives', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: [{ content: answer }] });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true }) });
    const { output } = await traced(model, ask);
    assert.equal(stub.requests[0]!.body.logprobs, true);
    assert.equal(stub.requests[0]!.body.top_logprobs, 1, 'left out, llama.cpp sends 20 alternatives; 0 makes it send no logprobs at all');
    const meta = (output as AIMessage).response_metadata as unknown as RoutedResponseMetadata;
    assert.equal(meta.logprobs?.content.length, tokensOf(answer).length);
    for (const t of meta.logprobs!.content) assert.deepEqual(Object.keys(t).sort(), ['logprob', 'token'], 'the token and its logprob, nothing else');
  });

  it('sends the configured top_logprobs (models.<name>.topLogprobs)', async () => {
    stub = await startOpenAIStub({ server: 'vllm', replies: [{ content: answer }] });
    await new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true, topLogprobs: 0 }) }).invoke(ask);
    assert.equal(stub.requests[0]!.body.top_logprobs, 0);
  });

  it('vLLM: reads choices[].token_ids and the prompt_token_ids next to them', async () => {
    stub = await startOpenAIStub({ server: 'vllm', replies: [{ content: answer }] });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true, tokenIds: true }) });
    const { llm } = await traced(model, ask);
    const span = llm[0]!;
    assert.deepEqual(span.attributes[Attr.tokenIds], tokensOf(answer).map(tokenId));
    const promptIds = span.attributes[Attr.promptTokenIds] as number[];
    assert.ok(Array.isArray(promptIds) && promptIds.length > 10 && promptIds.every(Number.isInteger));
  });

  it('a server without ids stores none, and without logprobs asked none are sent', async () => {
    stub = await startOpenAIStub({ server: 'ollama', replies: [{ content: answer }, { content: answer }] });
    const { llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true, tokenIds: true }) }), ask);
    assert.equal(llm[0]!.attributes[Attr.tokenIds], undefined);
    assert.ok(Array.isArray(llm[0]!.attributes[Attr.logprobs]));
    await new RoutedChatModel({ resolved: resolvedAt(stub.url) }).invoke(ask);
    assert.equal(stub.requests[1]!.body.logprobs, undefined);
    assert.equal(stub.requests[1]!.body.top_logprobs, undefined);
  });

  it('OpenAI: refuses return_token_ids with HTTP 400 — the call is asked again without it, and later calls to that endpoint leave it out', async () => {
    stub = await startOpenAIStub({ server: 'openai', replies: () => ({ content: answer }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { logprobs: true, tokenIds: true }) });
    const first = await traced(model, ask);
    assert.equal((first.output as AIMessage).content, answer);
    assert.equal(stub.requests.length, 2, 'refused once, then answered');
    assert.equal(stub.requests[0]!.body.return_token_ids, true);
    assert.equal('return_token_ids' in stub.requests[1]!.body, false);
    assert.equal(first.llm[0]!.status, 'ok');
    await traced(model, ask);
    assert.equal(stub.requests.length, 3, 'the endpoint is remembered: no second refusal');
    assert.equal('return_token_ids' in stub.requests[2]!.body, false);
    assert.equal(stub.requests[2]!.body.logprobs, true, 'logprobs are still asked for');
  });
});
