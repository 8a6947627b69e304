import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { chatCompletion } from '../../../src/core/llm/client';
import { LlmCallError } from '../../../src/core/llm/llmErrors';
import { listenForRetries, type RetryNotice } from '../../../src/core/llm/retryNotices';
import { classifyThrown } from '../../../src/core/reward/failureClassification';
import { startOpenAIStub } from '../../fakes/openaiStub';
import type { ResolvedModel } from '../../../src/core/llm/routing';
import type { SimFaultHook } from '../../../src/core/sim/simFaults';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';

// Tiny backoff so that only a server's Retry-After can make a retry wait long.
const FAST = { baseDelayMs: 1, maxDelayMs: 5 };
const messages = [
  { role: 'system' as const, content: '[agent: PeerReviewer]\nReview.' },
  { role: 'user' as const, content: 'Research question: Does X help?\n\nContext:\nX helped in 40 patients.' },
];

function model(baseUrl: string, over: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    logical: 'senior',
    baseUrl,
    model: 'test-model',
    apiKey: 'not-needed',
    timeoutMs: 10_000,
    maxRetries: 4,
    logprobs: false,
    tokenIds: false,
    version: null,
    simulated: true,
    ...over,
  };
}

async function withSim(faults: SimFaultHook, fn: (sim: SimServer) => Promise<void>): Promise<void> {
  const sim = await startSimServer({ faults });
  try {
    await fn(sim);
  } finally {
    await sim.close();
  }
}

describe('chatCompletion', () => {
  it('returns the completion with latency and no retries on success', async () => {
    await withSim(
      () => null,
      async (sim) => {
        const r = await chatCompletion(model(sim.url), { messages, temperature: 0 });
        assert.equal(r.retries, 0);
        assert.ok(r.latencyMs >= 0);
        assert.equal(r.completion.model, 'test-model');
        assert.equal(r.completion.choices[0]!.logprobs, null);
      },
    );
  });

  it('asks for logprobs when the model is configured for them', async () => {
    await withSim(
      () => null,
      async (sim) => {
        const r = await chatCompletion(model(sim.url, { logprobs: true }), { messages });
        assert.ok((r.completion.choices[0]!.logprobs?.content?.length ?? 0) > 0);
      },
    );
  });

  it('honours Retry-After in seconds on 429 and counts the retry', { timeout: 15_000 }, async () => {
    await withSim(
      ({ index }) => (index === 0 ? { kind: 'rate-limit', retryAfterSeconds: 1 } : null),
      async (sim) => {
        const r = await chatCompletion(model(sim.url), { messages }, { backoff: FAST });
        assert.equal(r.retries, 1);
        assert.equal(sim.requests.length, 2);
        const gap = sim.requests[1]!.receivedAt - sim.requests[0]!.receivedAt;
        // The client waited for the server's 1 s, not its own 1 ms backoff (timer rounding allowance 5 ms).
        assert.ok(gap >= 995, `second request came ${gap.toFixed(1)} ms after the first`);
      },
    );
  });

  it('honours retry-after-ms', { timeout: 15_000 }, async () => {
    await withSim(
      ({ index }) => (index < 2 ? { kind: 'rate-limit', retryAfterMs: 300 } : null),
      async (sim) => {
        const r = await chatCompletion(model(sim.url), { messages }, { backoff: FAST });
        assert.equal(r.retries, 2);
        const times = sim.requests.map((q) => q.receivedAt);
        assert.ok(times[1]! - times[0]! >= 295 && times[2]! - times[1]! >= 295, `gaps ${times.join(', ')}`);
      },
    );
  });

  it('caps a huge Retry-After', { timeout: 15_000 }, async () => {
    await withSim(
      ({ index }) => (index === 0 ? { kind: 'rate-limit', retryAfterSeconds: 3600 } : null),
      async (sim) => {
        const r = await chatCompletion(model(sim.url), { messages }, { backoff: { ...FAST, maxRetryAfterMs: 50 } });
        assert.equal(r.retries, 1);
      },
    );
  });

  it('retries a 500 and then succeeds', async () => {
    await withSim(
      ({ index }) => (index === 0 ? { kind: 'server-error' } : null),
      async (sim) => {
        const r = await chatCompletion(model(sim.url), { messages }, { backoff: FAST });
        assert.equal(r.retries, 1);
        assert.equal(sim.requests.length, 2);
      },
    );
  });

  it('gives up on a persistent 500 after maxRetries with an actionable error', async () => {
    await withSim(
      () => ({ kind: 'server-error' }),
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url, { maxRetries: 3 }), { messages }, { backoff: FAST }), (err: unknown) => {
          assert.ok(err instanceof LlmCallError);
          assert.equal(err.status, 500);
          assert.equal(err.retries, 3);
          assert.equal(err.exitCode, 1);
          assert.match(err.message, /^model 'senior' at http:\/\/127\.0\.0\.1:\d+\/v1: HTTP 500 after 3 retries — .*models\.senior\.maxRetries/);
          return true;
        });
        assert.equal(sim.requests.length, 4);
      },
    );
  });

  it('does not retry a 400', async () => {
    await withSim(
      () => ({ kind: 'server-error', status: 400 }),
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url), { messages }, { backoff: FAST }), (err: unknown) => {
          assert.ok(err instanceof LlmCallError);
          assert.equal(err.status, 400);
          assert.equal(err.retries, 0);
          return true;
        });
        assert.equal(sim.requests.length, 1);
      },
    );
  });

  it('times out a hanging call, says so as it retries it, then fails with a timeout error', { timeout: 15_000 }, async () => {
    const heard: RetryNotice[] = [];
    const stop = listenForRetries((n) => heard.push(n));
    after(stop);
    await withSim(
      () => ({ kind: 'hang' }),
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url, { timeoutMs: 150, maxRetries: 1 }), { messages }, { backoff: FAST, agent: 'Drafter' }), (err: unknown) => {
          assert.ok(err instanceof LlmCallError);
          assert.equal(err.retries, 1);
          assert.match(err.message, /timed out after 150 ms after 1 retry — .*timeoutMs/);
          return true;
        });
        assert.equal(sim.requests.length, 2);
        // The stall is told as it happens, not only once the retries ran out.
        assert.deepEqual(
          heard.map((n) => n.message),
          [`Drafter: no answer from ${sim.url} within 0.15 s (models.senior.timeoutMs); retrying 1/1`],
        );
      },
    );
  });

  it('recovers when only the first call hangs', { timeout: 15_000 }, async () => {
    await withSim(
      ({ index }) => (index === 0 ? { kind: 'hang' } : null),
      async (sim) => {
        const r = await chatCompletion(model(sim.url, { timeoutMs: 150 }), { messages }, { backoff: FAST });
        assert.equal(r.retries, 1);
      },
    );
  });

  it('stops at once on abort, with an AbortError and no further requests', { timeout: 15_000 }, async () => {
    const controller = new AbortController();
    await withSim(
      () => {
        setImmediate(() => controller.abort());
        return { kind: 'hang' };
      },
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url), { messages }, { signal: controller.signal, backoff: FAST }), { name: 'AbortError' });
        // Give a wrongly scheduled retry every chance to arrive before counting.
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(sim.requests.length, 1);
      },
    );
  });

  it('stops on abort while waiting to retry', { timeout: 15_000 }, async () => {
    const controller = new AbortController();
    await withSim(
      () => {
        setTimeout(() => controller.abort(), 50);
        return { kind: 'rate-limit', retryAfterSeconds: 30 };
      },
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url), { messages }, { signal: controller.signal, backoff: FAST }), { name: 'AbortError' });
        assert.equal(sim.requests.length, 1);
      },
    );
  });

  it('rejects an already aborted signal without calling the server', async () => {
    await withSim(
      () => null,
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url), { messages }, { signal: AbortSignal.abort() }), { name: 'AbortError' });
        assert.equal(sim.requests.length, 0);
      },
    );
  });

  it('retries a 200 whose body is not JSON like a reset, then fails as a broken body (a transport fault), never as the answer', async () => {
    await withSim(
      () => ({ kind: 'malformed-body' }),
      async (sim) => {
        await assert.rejects(chatCompletion(model(sim.url, { maxRetries: 2 }), { messages }, { backoff: FAST }), (err: unknown) => {
          assert.ok(err instanceof LlmCallError);
          assert.match(err.message, /broken response body: the 200 answer was cut off or is not JSON \(.+\) after 2 retries — the server or a proxy in between dropped the answer mid-body/);
          assert.equal(err.retries, 2);
          assert.equal(err.retryReasons.length, 2);
          assert.equal(classifyThrown(err, err.message), 'connection');
          return true;
        });
        assert.equal(sim.requests.length, 3);
      },
    );
  });

  for (const kind of ['cut', 'cut-socket', 'unparsable'] as const) {
    it(`recovers from a 200 body broken on the wire (${kind}) by retrying, and says why it retried`, async () => {
      const stub = await startOpenAIStub({ replies: [{ content: 'APOE4 raises amyloid load.', brokenBody: kind }, { content: 'APOE4 raises amyloid load.' }] });
      const heard: RetryNotice[] = [];
      const stop = listenForRetries((n) => heard.push(n));
      try {
        const r = await chatCompletion(model(stub.url, { simulated: false }), { messages }, { backoff: FAST, agent: 'Drafter' });
        assert.equal(r.completion.choices[0]!.message.content, 'APOE4 raises amyloid load.');
        assert.equal(r.retries, 1);
        assert.match(r.retryReasons[0]!, /^broken response body: the 200 answer was cut off or is not JSON/);
        assert.deepEqual(stub.broken, [{ index: 0, kind }]);
        assert.equal(heard.length, 1);
        assert.equal(heard[0]!.kind, 'broken_body');
        assert.match(heard[0]!.message, new RegExp(`^Drafter: broken response body: .* from ${stub.url.replace(/[./]/g, '\\$&')}; retrying 1/4 in `));
      } finally {
        stop();
        await stub.close();
      }
    });
  }

  it('fails clearly on JSON that is not a chat completion', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ hello: 'world' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      await assert.rejects(chatCompletion(model(url), { messages }, { backoff: FAST }), (err: unknown) => {
        assert.ok(err instanceof LlmCallError);
        assert.match(err.message, /not a chat completion/);
        return true;
      });
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('retries refused connections, then names the endpoint', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await new Promise((r) => server.close(r));
    await assert.rejects(chatCompletion(model(`http://127.0.0.1:${port}/v1`, { maxRetries: 2 }), { messages }, { backoff: FAST }), (err: unknown) => {
      assert.ok(err instanceof LlmCallError);
      assert.equal(err.retries, 2);
      assert.equal(err.status, undefined);
      assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}/v1: connection failed`));
      return true;
    });
  });

  it('a served registry version nobody serves any more fails at once, with the commands that fix it', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    await new Promise((r) => server.close(r));
    const served = model(`http://127.0.0.1:${port}/v1`, { maxRetries: 4, simulated: false, version: 'grpo-1', served: { version: 'grpo-1', job: 'grpo-1' } });
    await assert.rejects(chatCompletion(served, { messages }, { backoff: { baseDelayMs: 60_000, maxDelayMs: 60_000 } }), (err: unknown) => {
      assert.ok(err instanceof LlmCallError);
      assert.equal(err.retries, 0, 'no retry loop: nothing will start serving on its own');
      assert.match(err.message, /connection failed \(ECONNREFUSED\) — nothing serves version grpo-1 of model 'senior' there any more — serve it again with `rollout-lab jobs serve grpo-1`, or go back to the version before it with `rollout-lab pipeline rollback senior`/);
      return true;
    });
  });
});
