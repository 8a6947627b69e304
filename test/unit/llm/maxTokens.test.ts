import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { LabConfigSchema } from '../../../src/core/config/schema';
import { chatCompletion } from '../../../src/core/llm/client';
import { LlmCallError } from '../../../src/core/llm/llmErrors';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { ModelRouter } from '../../../src/core/llm/routing';
import { judgeOutput } from '../../../src/core/reward/judge';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt, traced } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

const ask = [new SystemMessage('[agent: Geneticist]\nAnswer.'), new HumanMessage('Does APOE4 raise amyloid?')];

function routerFor(url: string): ModelRouter {
  const config = LabConfigSchema.parse({
    models: { small: { baseUrl: url, model: 'qwen' }, strong: { baseUrl: url, model: 'judge-model' } },
    agents: { Geneticist: { model: 'small' }, ProtocolDesigner: { model: 'small', maxTokens: 3000 } },
    reward: { judge: { model: 'strong' } },
  });
  return new ModelRouter(config, { env: {} });
}

describe('max_tokens on every call', () => {
  it('sends the model default when lab.json sets none, an agent override, and records the value on the llm span', async () => {
    stub = await startOpenAIStub({ replies: () => ({ content: 'ok' }) });
    const router = routerFor(stub.url);
    const { llm } = await traced(new RoutedChatModel({ resolved: router.forAgent('Geneticist'), agent: 'Geneticist' }), ask);
    await new RoutedChatModel({ resolved: router.forAgent('ProtocolDesigner'), agent: 'ProtocolDesigner' }).invoke(ask);
    assert.deepEqual(stub.requests.map((r) => r.body.max_tokens), [2048, 3000]);
    assert.equal(llm[0]!.attributes[Attr.requestMaxTokens], 2048);
  });

  it('a client call without a model limit still sends one', async () => {
    stub = await startOpenAIStub({ replies: () => ({ content: 'ok' }) });
    const { maxTokens: _none, ...unbounded } = resolvedAt(stub.url);
    await chatCompletion(unbounded, { messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(stub.requests[0]!.body.max_tokens, 2048);
  });

  it("the judge asks for its scores' schema and sends its own short limit (reward.judge.maxTokens), not its model's", async () => {
    stub = await startOpenAIStub({ replies: () => ({ json: { novelty: 5, clarity: 7, rationale: 'fine' } }) });
    const judge = new RoutedChatModel({ resolved: routerFor(stub.url).forJudge(), agent: 'Judge' });
    const verdict = await judgeOutput(judge, {
      goal: 'Does X help?',
      context: 'X helped.',
      output: '{"title": "t"}',
      criteria: { novelty: { description: 'new' }, clarity: { description: 'clear' } },
    });
    assert.equal(verdict.failed, false, verdict.error);
    assert.equal(stub.requests[0]!.body.max_tokens, 512);
    const format = stub.requests[0]!.body.response_format;
    assert.equal(format.type, 'json_schema');
    assert.deepEqual(format.json_schema.schema.required, ['novelty', 'clarity', 'rationale']);
  });

  it('a timeout says the model may be generating up to max_tokens and names the setting as well as timeoutMs', { timeout: 10_000 }, async () => {
    stub = await startOpenAIStub({ replies: () => ({ hang: true }) });
    const resolved = resolvedAt(stub.url, { timeoutMs: 100, maxTokens: 3000, maxTokensSetting: 'agents.ProtocolDesigner.maxTokens' });
    await assert.rejects(chatCompletion(resolved, { messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof LlmCallError);
      assert.match(err.message, /timed out after 100 ms — the model may be generating up to max_tokens \(3000\) tokens: lower agents\.ProtocolDesigner\.maxTokens, .*raise models\.small\.timeoutMs/);
      return true;
    });
  });
});
