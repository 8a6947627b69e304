import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { ProtocolOutput } from '../../../src/core/graph/researchLab/outputs';
import { parseStructured } from '../../../src/core/llm/structuredOutput';
import { SIM_FINGERPRINT } from '../../../src/core/sim/simCompletion';
import { SIM_HEADER, startSimServer, type SimServer } from '../../../src/core/sim/simServer';
import { agentMessages, LAB_TOOLS, pubmedqaTasks, taskBlock } from './labFixtures';

const task = pubmedqaTasks(5)[4]!;
const designer = agentMessages('ProtocolDesigner', `${taskBlock(task)}\n\nRefined hypothesis: x.\n\nDesign the experimental protocol.`) as OpenAI.Chat.ChatCompletionMessageParam[];

describe('simulated endpoint: OpenAI protocol', () => {
  let sim: SimServer;
  let client: OpenAI;
  before(async () => {
    sim = await startSimServer({ seed: 1 });
    client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
  });
  after(() => sim.close());

  it('listens on 127.0.0.1 with an ephemeral port and a /v1 base URL', () => {
    assert.match(sim.url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    assert.ok(sim.port > 0);
  });

  it('marks responses as simulated and echoes the requested model', async () => {
    const { data, response } = await client.chat.completions.create({ model: 'qwen-test', messages: designer }).withResponse();
    assert.equal(response.headers.get(SIM_HEADER), '1');
    assert.equal(data.system_fingerprint, SIM_FINGERPRINT);
    assert.equal(data.model, 'qwen-test');
    assert.equal(data.object, 'chat.completion');
    assert.ok(data.usage && data.usage.prompt_tokens > 0 && data.usage.completion_tokens > 0);
    assert.equal(data.usage.total_tokens, data.usage.prompt_tokens + data.usage.completion_tokens);
  });

  it('serves /health and /v1/models', async () => {
    const health = await fetch(sim.url.replace(/\/v1$/, '/health'));
    assert.equal(health.status, 200);
    assert.equal(health.headers.get(SIM_HEADER), '1');
    assert.deepEqual(await health.json(), { status: 'ok', simulated: true });
    const models = await client.models.list();
    assert.ok(models.data.some((m) => m.id === 'qwen-test'));
  });

  it('rejects a bad request with 400 and an OpenAI-style error body', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'm', messages: [] }),
      (err: unknown) => err instanceof OpenAI.BadRequestError && /messages/.test(err.message),
    );
    const res = await fetch(`${sim.url}/chat/completions`, { method: 'POST', body: '{not json', headers: { 'content-type': 'application/json' } });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { message: string; type: string } };
    assert.equal(body.error.type, 'invalid_request_error');
    const missing = await fetch(`${sim.url}/nope`);
    assert.equal(missing.status, 404);
  });

  it('streams the same answer as SSE chunks, ending with usage', async () => {
    const whole = await client.chat.completions.create({ model: 'm', messages: designer });
    const stream = await client.chat.completions.create({ model: 'm', messages: designer, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(chunks > 3);
    assert.equal(text, whole.choices[0]!.message.content);
    assert.equal(finish, 'stop');
    assert.deepEqual(usage, whole.usage);
    assert.ok((await parseStructured(ProtocolOutput, text)).ok);
  });

  it('streams tool calls that the openai helper assembles', async () => {
    const runner = client.chat.completions.stream({ model: 'm', messages: designer, tools: LAB_TOOLS, tool_choice: 'required' });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0]!.message.tool_calls?.[0];
    assert.ok(call && call.type === 'function');
    assert.ok(LAB_TOOLS.some((t) => t.function.name === call.function.name));
    assert.equal(typeof JSON.parse(call.function.arguments), 'object');
  });

  it('returns token logprobs when asked, covering the whole answer', async () => {
    const r = await client.chat.completions.create({ model: 'm', messages: designer, logprobs: true, top_logprobs: 2 });
    const lp = r.choices[0]!.logprobs?.content;
    assert.ok(lp && lp.length > 5);
    assert.equal(lp.map((t) => t.token).join(''), r.choices[0]!.message.content);
    for (const t of lp) {
      assert.ok(t.logprob <= 0);
      assert.equal(t.top_logprobs.length, 2);
    }
    const plain = await client.chat.completions.create({ model: 'm', messages: designer });
    assert.equal(plain.choices[0]!.logprobs, null);
  });

  it('streams logprobs with the content chunks', async () => {
    const stream = await client.chat.completions.create({ model: 'm', messages: designer, stream: true, logprobs: true });
    const tokens: string[] = [];
    let text = '';
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      for (const t of chunk.choices[0]?.logprobs?.content ?? []) tokens.push(t.token);
    }
    assert.equal(tokens.join(''), text);
  });
});

describe('simulated endpoint: options and faults', () => {
  it('records requests in order with monotonic arrival times', async () => {
    const sim = await startSimServer({ latencyMs: 20 });
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 });
      await client.chat.completions.create({ model: 'a', messages: designer });
      await client.chat.completions.create({ model: 'b', messages: designer });
      assert.deepEqual(
        sim.requests.map((r) => [r.index, r.model, r.agent]),
        [
          [0, 'a', 'ProtocolDesigner'],
          [1, 'b', 'ProtocolDesigner'],
        ],
      );
      assert.ok(sim.requests[1]!.receivedAt >= sim.requests[0]!.receivedAt);
    } finally {
      await sim.close();
    }
  });

  it('injects 429, 500 and malformed output as the hook says', async () => {
    const sim = await startSimServer({
      faults: ({ index }) =>
        [{ kind: 'rate-limit', retryAfterSeconds: 3 } as const, { kind: 'server-error', status: 503 } as const, { kind: 'malformed-json' } as const, { kind: 'malformed-body' } as const][index],
    });
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 });
      await assert.rejects(client.chat.completions.create({ model: 'm', messages: designer }), (err: unknown) => {
        assert.ok(err instanceof OpenAI.RateLimitError);
        assert.equal(err.headers?.get('retry-after'), '3');
        return true;
      });
      await assert.rejects(client.chat.completions.create({ model: 'm', messages: designer }), (err: unknown) => err instanceof OpenAI.APIError && err.status === 503);
      const broken = await client.chat.completions.create({ model: 'm', messages: designer });
      assert.throws(() => JSON.parse(broken.choices[0]!.message.content ?? ''));
      await assert.rejects(client.chat.completions.create({ model: 'm', messages: designer }), SyntaxError);
      const fine = await client.chat.completions.create({ model: 'm', messages: designer });
      assert.ok((await parseStructured(ProtocolOutput, fine.choices[0]!.message.content ?? '')).ok);
    } finally {
      await sim.close();
    }
  });

  it('closes promptly while a request hangs', { timeout: 10_000 }, async () => {
    const sim = await startSimServer({ faults: () => ({ kind: 'hang' }) });
    const client = new OpenAI({ baseURL: sim.url, apiKey: 'x', maxRetries: 0 });
    const pending = client.chat.completions.create({ model: 'm', messages: designer });
    while (sim.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    await sim.close();
    await assert.rejects(pending, OpenAI.APIConnectionError);
  });
});

describe('simulator under load', () => {
  it('answers 16 requests at once without a listener-leak warning (each request stops listening when it ends)', async () => {
    const server = await startSimServer({ seed: 2, latencyMs: 30 });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      const client = new OpenAI({ baseURL: server.url, apiKey: 'sk-sim', maxRetries: 0 });
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_x, i) => client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: `question ${i}` }] })),
      );
      assert.equal(replies.filter((r) => r.choices[0]?.message.content).length, 16);
      // Warnings are emitted on the next tick.
      await new Promise((ok) => setImmediate(ok));
      assert.deepEqual(warnings.filter((w) => /MaxListeners/.test(w)), []);
    } finally {
      process.off('warning', onWarning);
      await server.close();
    }
  });
});
