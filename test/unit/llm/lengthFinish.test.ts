import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage, SystemMessage, type AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { maxTokensCutOf, TRUNCATED_AT_MAX_TOKENS } from '../../../src/core/llm/maxTokensCut';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { judgeOutput } from '../../../src/core/reward/judge';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt, traced } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

const ask = [new SystemMessage('[agent: ProtocolDesigner]\nWrite the protocol as JSON.'), new HumanMessage('Does APOE4 raise amyloid?')];
const longText = Array.from({ length: 60 }, (_, i) => `step ${i} of the protocol`).join(', ');

describe('finish_reason "length"', () => {
  it('marks the llm span truncated, keeps the call ok, and tells readers the limit and its setting', async () => {
    stub = await startOpenAIStub({ replies: [{ content: longText }] });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { maxTokens: 20, maxTokensSetting: 'agents.ProtocolDesigner.maxTokens' }) });
    const { output, llm } = await traced(model, ask);
    const span = llm[0]!;
    assert.equal(span.status, 'ok');
    assert.equal(span.attributes[Attr.truncated], true);
    assert.deepEqual(span.attributes[Attr.finishReasons], ['length']);
    assert.equal(span.attributes[Attr.outputTokens], 20);
    assert.deepEqual(maxTokensCutOf(output as AIMessage), { maxTokens: 20, setting: 'agents.ProtocolDesigner.maxTokens' });
  });

  it('leaves an answer that finished on its own unmarked', async () => {
    stub = await startOpenAIStub({ replies: [{ content: 'short' }] });
    const { output, llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }), ask);
    assert.equal(llm[0]!.attributes[Attr.truncated], undefined);
    assert.equal(maxTokensCutOf(output as AIMessage), null);
  });

  it('a tool call cut mid-arguments is an invalid call, never one that runs, and the span says truncated', async () => {
    stub = await startOpenAIStub({ replies: [{ toolCalls: [{ name: 'pubmed_search', arguments: { query: longText } }] }] });
    const search = tool(async () => '[]', { name: 'pubmed_search', description: 'Search.', schema: z.object({ query: z.string() }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { maxTokens: 12 }) });
    const { output, llm } = await traced(model.bindTools([search]), ask);
    const msg = output as AIMessage;
    assert.equal(msg.tool_calls?.length ?? 0, 0);
    assert.equal(msg.invalid_tool_calls?.[0]?.name, 'pubmed_search');
    assert.equal(llm[0]!.attributes[Attr.truncated], true);
  });

  it("the judge's error starts with the truncation prefix and names reward.judge.maxTokens; its repair asks for a shorter answer", async () => {
    const cutScores = { rationale: longText, novelty: 0.5, clarity: 0.5 };
    stub = await startOpenAIStub({ replies: [{ json: cutScores }, { json: cutScores }] });
    const judge = new RoutedChatModel({ resolved: resolvedAt(stub.url, { maxTokens: 25, maxTokensSetting: 'reward.judge.maxTokens' }), agent: 'Judge' });
    const verdict = await judgeOutput(judge, {
      goal: 'Does X help?',
      context: 'X helped.',
      output: 'protocol',
      criteria: { novelty: { description: 'new' }, clarity: { description: 'clear' } },
    });
    assert.equal(verdict.failed, true);
    assert.ok(verdict.error?.startsWith(`${TRUNCATED_AT_MAX_TOKENS} (25)`), verdict.error);
    assert.match(verdict.error!, /raise reward\.judge\.maxTokens/);
    const repair = stub.requests[1]!.body.messages.at(-1) as { content: string };
    assert.match(repair.content, /cut off at the limit of 25 tokens.*shorter/s);
  });
});
