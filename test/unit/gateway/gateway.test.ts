import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import OpenAI from 'openai';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { newTraceId } from '../../../src/core/trace/ids';
import { LangChainTracer } from '../../../src/core/trace/langchainTracer';
import { Attr } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { tokenId, tokensOf } from '../../fakes/openaiStub';
import { gatewaySetup, until, type GatewaySetup } from './gatewayHarness';

let setup: GatewaySetup | null = null;
afterEach(async () => {
  await setup?.close();
  setup = null;
});

const SYSTEM = '[agent: Geneticist]\nAnswer.';
const QUESTION = 'Does APOE4 raise amyloid-beta?';
const ANSWER = 'APOE4 carriers show more amyloid-beta, as the cohort data suggest.';
const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
  { role: 'system', content: SYSTEM },
  { role: 'user', content: QUESTION },
];

describe('recording gateway: calls through the real openai client', () => {
  it('forwards a call to the agent named in the header and records it as an llm span under the rollout root (vLLM: token ids, logprobs, prompt ids)', async () => {
    setup = await gatewaySetup({ server: 'vllm', replies: [{ content: ANSWER }] }, { logprobs: true, tokenIds: true });
    const client = setup.client({ headers: { 'x-rollout-lab-agent': 'Geneticist' } });
    const c = await client.chat.completions.create({ model: 'whatever-the-sdk-defaults-to', messages });
    assert.equal(c.choices[0]!.message.content, ANSWER);
    const sent = setup.stub.requests[0]!.body;
    assert.equal(sent.model, 'small-model', 'the routed model id, not what the client named');
    assert.equal(sent.seed, 4242, "the rollout's seed when the agent sends none");
    assert.equal(sent.temperature, 0.3, "the agent's own temperature");
    assert.equal(sent.return_token_ids, true);
    const [span] = setup.llmSpans();
    assert.ok(span);
    assert.equal(span.status, 'ok');
    assert.equal(span.parentSpanId, setup.rollout.root.spanId);
    assert.equal(span.traceId, setup.rollout.id);
    const a = span.attributes;
    assert.equal(a[Attr.agentName], 'Geneticist');
    assert.equal(a[Attr.promptVersion], 'pv-Geneticist');
    assert.equal(a[Attr.logicalModel], 'small');
    assert.equal(a[Attr.requestModel], 'small-model');
    assert.equal(a[Attr.requestTemperature], 0.3);
    assert.deepEqual(JSON.parse(a[Attr.inputMessages] as string), [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: QUESTION },
    ]);
    assert.deepEqual(JSON.parse(a[Attr.outputMessages] as string), [{ role: 'assistant', content: ANSWER }]);
    assert.deepEqual(a[Attr.tokenIds], tokensOf(ANSWER).map(tokenId));
    assert.equal((a[Attr.logprobs] as number[]).length, tokensOf(ANSWER).length);
    assert.ok((a[Attr.promptTokenIds] as number[]).length > 5);
    assert.equal(a[Attr.responseId], c.id);
    assert.deepEqual(a[Attr.finishReasons], ['stop']);
    assert.equal(a[Attr.outputTokens], tokensOf(ANSWER).length);
    assert.equal(a[Attr.retries], 0);
    assert.equal(typeof a[Attr.latencyMs], 'number');
    assert.equal(a[Attr.serverAddress], setup.stub.url);
    assert.equal(a[Attr.simulated], undefined);
  });

  it("honours traceparent: the call's span hangs under the caller's current span; a header that is no trace context is ignored", async () => {
    setup = await gatewaySetup({ server: 'vllm', replies: () => ({ content: ANSWER }) });
    const caller = '00f067aa0ba902b7';
    await setup.client({ agent: 'Geneticist', headers: { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${caller}-01` } }).chat.completions.create({ model: 'm', messages });
    await setup.client({ agent: 'Geneticist', headers: { traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${'0'.repeat(16)}-01` } }).chat.completions.create({ model: 'm', messages });
    await setup.client({ agent: 'Geneticist', headers: { traceparent: 'not-a-trace-context' } }).chat.completions.create({ model: 'm', messages });
    const [under, zero, bad] = setup.llmSpans();
    assert.equal(under!.parentSpanId, caller);
    assert.equal(under!.attributes[Attr.callerSpanId], caller);
    for (const s of [zero!, bad!]) {
      assert.equal(s.parentSpanId, setup.rollout.root.spanId);
      assert.equal(s.attributes[Attr.callerSpanId], undefined);
    }
  });

  it('records the same attributes an in-process call through RoutedChatModel and LangChainTracer records', async () => {
    setup = await gatewaySetup({ server: 'llama.cpp', replies: () => ({ content: ANSWER }) }, { logprobs: true, tokenIds: true });
    await setup.client({ agent: 'Geneticist' }).chat.completions.create({ model: 'm', messages });
    const tracer = new RolloutTracer(newTraceId(), null);
    const root = tracer.start('rollout', 'rollout', null);
    const model = new RoutedChatModel({ resolved: setup.router.forAgent('Geneticist'), agent: 'Geneticist' });
    await model.invoke([new SystemMessage(SYSTEM), new HumanMessage(QUESTION)], { callbacks: [new LangChainTracer(tracer, root, setup.versions)] });
    const inProcess = tracer.spans().find((s) => s.kind === 'llm')!;
    const viaGateway = setup.llmSpans()[0]!;
    const comparable = (attrs: Record<string, unknown>): Record<string, unknown> => {
      // The gateway marks its records as its own (a framework's span of the same call is merged into them).
      const { [Attr.latencyMs]: _l, [Attr.responseId]: _id, [Attr.callSource]: source, ...rest } = attrs;
      assert.ok(source === undefined || source === 'gateway');
      return rest;
    };
    assert.deepEqual(comparable(viaGateway.attributes), comparable(inProcess.attributes));
    assert.equal(viaGateway.name, inProcess.name);
    assert.ok(viaGateway.attributes[Attr.tokenIds], 'llama.cpp ids from logprobs.content[].id');
  });

  it('llama.cpp tool calls with empty ids: the agent gets ids unique in its conversation, and the span has the call and the original ids', async () => {
    setup = await gatewaySetup({ server: 'llama.cpp', replies: [{ toolCalls: [{ name: 'search', arguments: { q: 'APOE4' } }] }] });
    const tools: OpenAI.Chat.ChatCompletionFunctionTool[] = [
      { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
    ];
    const c = await setup.client({ agent: 'Geneticist' }).chat.completions.create({ model: 'm', messages, tools });
    const call = c.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    assert.match(call.id, /^[0-9a-f]{9}$/);
    assert.equal(call.function.name, 'search');
    assert.deepEqual(JSON.parse(call.function.arguments), { q: 'APOE4' });
    assert.equal(c.choices[0]!.finish_reason, 'tool_calls');
    const a = setup.llmSpans()[0]!.attributes;
    assert.deepEqual(a[Attr.toolCallOriginalIds], ['']);
    assert.deepEqual(JSON.parse(a[Attr.outputMessages] as string), [
      { role: 'assistant', content: '', tool_calls: [{ id: call.id, name: 'search', arguments: '{"q":"APOE4"}' }] },
    ]);
    assert.equal(a['gen_ai.request.tools'], JSON.stringify(tools));
  });

  it('an answer cut at max_tokens comes back with finish_reason length and the span marked truncated', async () => {
    setup = await gatewaySetup({ replies: [{ content: ANSWER }] });
    const c = await setup.client({ agent: 'Geneticist' }).chat.completions.create({ model: 'm', messages, max_tokens: 3 });
    assert.equal(c.choices[0]!.finish_reason, 'length');
    const a = setup.llmSpans()[0]!.attributes;
    assert.equal(a[Attr.truncated], true);
    assert.equal(a[Attr.requestMaxTokens], 3);
    assert.equal(setup.stub.requests[0]!.body.max_tokens, 3);
  });

  it('retries a 503 as in-process calls do, and records the retry', async () => {
    setup = await gatewaySetup({ replies: [{ error: { status: 503, message: 'loading model' } }, { content: ANSWER }] });
    const c = await setup.client({ agent: 'Geneticist' }).chat.completions.create({ model: 'm', messages });
    assert.equal(c.choices[0]!.message.content, ANSWER);
    assert.equal(setup.stub.requests.length, 2);
    assert.equal(setup.llmSpans()[0]!.attributes[Attr.retries], 1);
  });

  it('an upstream failure answers with its status and a message that says what failed; the span is an error', async () => {
    setup = await gatewaySetup({ replies: () => ({ error: { status: 503, message: 'overloaded' } }) });
    const err = await setup
      .client({ agent: 'Geneticist' })
      .chat.completions.create({ model: 'm', messages })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError, String(err));
    assert.equal(err.status, 503);
    assert.match(err.message, /model 'small' at .*HTTP 503 after 2 retries/);
    assert.equal((err.error as { code?: string }).code, 'upstream_error');
    const [span] = setup.llmSpans();
    assert.equal(span!.status, 'error');
    assert.equal(span!.attributes[Attr.errorType], '503');
    assert.equal(span!.attributes[Attr.retries], 2);
  });

  it('a server that is gone is a 502', async () => {
    setup = await gatewaySetup({ replies: [] }, { baseUrl: 'http://127.0.0.1:9/v1', maxRetries: 0 });
    const err = await setup
      .client({ agent: 'Geneticist' })
      .chat.completions.create({ model: 'm', messages })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 502);
    assert.match(err.message, /connection failed/);
    assert.equal(setup.llmSpans()[0]!.status, 'error');
  });
});

describe('recording gateway: which agent is calling', () => {
  it('by path: the agent base URL', async () => {
    setup = await gatewaySetup({ replies: () => ({ content: 'ok' }) });
    assert.equal(setup.gateway.baseUrl('r1', 'Supervisor'), `${setup.gateway.url}/rollouts/r1/agents/Supervisor/v1`);
    await setup.client({ agent: 'Supervisor' }).chat.completions.create({ model: 'gpt-4o', messages });
    assert.equal(setup.llmSpans()[0]!.attributes[Attr.agentName], 'Supervisor');
    assert.equal(setup.stub.requests[0]!.body.max_tokens, 256, "the agent's own maxTokens");
  });

  it("by the request's model naming an agent", async () => {
    setup = await gatewaySetup({ replies: () => ({ content: 'ok' }) });
    await setup.client().chat.completions.create({ model: 'Supervisor', messages });
    assert.equal(setup.llmSpans()[0]!.attributes[Attr.agentName], 'Supervisor');
    assert.equal(setup.stub.requests[0]!.body.model, 'small-model');
  });

  it("a model naming a logical model of lab.json goes to that model, with its version", async () => {
    setup = await gatewaySetup({ replies: () => ({ content: 'ok' }) });
    await setup.client().chat.completions.create({ model: 'big', messages });
    const a = setup.llmSpans()[0]!.attributes;
    assert.equal(setup.stub.requests[0]!.body.model, 'big-model');
    assert.equal(a[Attr.logicalModel], 'big');
    assert.equal(a[Attr.modelVersion], 'v2');
    assert.equal(a[Attr.agentName], undefined);
  });

  it('no agent named in a lab with two agents: a 400 that says how to name one', async () => {
    setup = await gatewaySetup({ replies: () => ({ content: 'ok' }) });
    const err = await setup
      .client()
      .chat.completions.create({ model: 'gpt-4o', messages })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.match(err.message, /agents\/NAME\/v1/);
    assert.match(err.message, /x-rollout-lab-agent/);
    assert.match(err.message, /Geneticist, Supervisor/);
    assert.equal(setup.stub.requests.length, 0);
    assert.equal(setup.llmSpans().length, 0);
  });

  it('an unknown agent in the path is a 400 naming the known ones', async () => {
    setup = await gatewaySetup({ replies: () => ({ content: 'ok' }) });
    const err = await setup
      .client({ agent: 'Nobody' })
      .chat.completions.create({ model: 'm', messages })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.BadRequestError);
    assert.match(err.message, /agent "Nobody" is not defined/);
  });

  it('GET /v1/models lists the agents and models a request may name', async () => {
    setup = await gatewaySetup({ replies: [] });
    const ids: string[] = [];
    for await (const m of setup.client().models.list()) ids.push(m.id);
    assert.deepEqual(ids, ['Geneticist', 'Supervisor', 'small', 'big']);
  });
});

describe('recording gateway: errors and cancellation', () => {
  it('an unknown rollout is a 404 in OpenAI error shape', async () => {
    setup = await gatewaySetup({ replies: [] });
    const err = await setup
      .client({ rolloutId: 'not-running' })
      .chat.completions.create({ model: 'Geneticist', messages })
      .catch((e: unknown) => e);
    assert.ok(err instanceof OpenAI.NotFoundError);
    assert.equal((err.error as { code?: string }).code, 'rollout_not_found');
    assert.match(err.message, /rollout "not-running" is not running/);
  });

  it('a body that is not JSON is a 400', async () => {
    setup = await gatewaySetup({ replies: [] });
    const res = await fetch(`${setup.gateway.baseUrl(setup.rollout.id, 'Geneticist')}/chat/completions`, { method: 'POST', body: '{"messages": [' });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { message: string; type: string; code: string } };
    assert.equal(body.error.code, 'invalid_json');
    assert.equal(body.error.type, 'invalid_request_error');
    assert.match(body.error.message, /not valid JSON/);
  });

  it("cancelling the rollout stops the forwarded call: the agent gets a 410 and the span is an error", async () => {
    setup = await gatewaySetup({ replies: [{ hang: true }] });
    const s = setup;
    const pending = s
      .client({ agent: 'Geneticist' })
      .chat.completions.create({ model: 'm', messages })
      .catch((e: unknown) => e);
    await until(() => s.stub.requests.length === 1, 'the call to reach the model server');
    s.cancel.abort();
    const err = await pending;
    assert.ok(err instanceof OpenAI.APIError);
    assert.equal(err.status, 410);
    assert.equal((err.error as { code?: string }).code, 'rollout_cancelled');
    const [span] = s.llmSpans();
    assert.equal(span!.status, 'error');
    assert.equal(span!.attributes[Attr.errorType], 'AbortError');
  });

  it('an agent that hangs up cancels the forwarded call, recorded as an error span', async () => {
    setup = await gatewaySetup({ replies: [{ hang: true }] });
    const s = setup;
    const hangUp = new AbortController();
    const pending = s
      .client({ agent: 'Geneticist' })
      .chat.completions.create({ model: 'm', messages }, { signal: hangUp.signal })
      .catch((e: unknown) => e);
    await until(() => s.stub.requests.length === 1, 'the call to reach the model server');
    hangUp.abort();
    assert.ok((await pending) instanceof OpenAI.APIUserAbortError);
    await until(() => s.llmSpans().length === 1, 'the span of the abandoned call');
    assert.equal(s.llmSpans()[0]!.status, 'error');
    assert.equal(s.llmSpans()[0]!.attributes[Attr.errorType], 'AbortError');
  });
});
