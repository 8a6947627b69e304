import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { summariseAgents } from '../../../src/core/store/agentSummary';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { exportStoredRollouts, parseOtlpHeaders, tracesUrl, type OtlpProtocol } from '../../../src/core/otlp/otlpExporter';
import { decodeProtobufRequest } from '../../../src/core/otlp/otlpDecodeProtobuf';
import { encodeResponse, encodeRpcStatus } from '../../../src/core/otlp/otlpEncode';
import type { OtlpSpan } from '../../../src/core/otlp/otlpModel';
import { OI_INPUT_VALUE, OI_SPAN_KIND } from '../../../src/core/otlp/openInferenceExport';
import { rolloutToOtlp } from '../../../src/core/otlp/rolloutToOtlp';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { tempWorkspace } from '../store/helpers/storeFixtures';
import { receiverFixture, type ReceiverFixture } from './helpers';

const FAST = { baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 5 };

/** A rollout as the lab records one: root, an agent node, a model call with a tool call, the tool, the judge's reward span. */
function labRollout(store: TraceStore): RolloutRecord {
  const id = newTraceId();
  const tracer = new RolloutTracer(id, store);
  const t0 = 1_700_000_000_000;
  store.startRun({ id: 'run-lab', startTime: t0, endTime: null, status: 'running', params: {}, simulated: false, planned: 1 });
  const running: RolloutRecord = {
    id, runId: 'run-lab', taskId: 'pqa-17', split: 'train', sample: 1, status: 'running', failure: null, finalReward: null, criteria: null,
    judgeFailed: false, decision: null, expectedDecision: 'yes', turns: null, error: null, simulated: false, startTime: t0, endTime: null, spanCount: 0, agents: [],
  };
  store.startRollout(running);
  const root = tracer.start('rollout', 'rollout', null, { [Attr.runId]: 'run-lab', [Attr.taskId]: 'pqa-17' }, t0);
  const node = tracer.start('Geneticist', 'node', root, { [Attr.nodeName]: 'Geneticist', [Attr.agentName]: 'Geneticist', [Attr.nodeStep]: 1 }, t0 + 1);
  const llm = tracer.start('chat qwen', 'llm', node, {
    [Attr.operationName]: 'chat',
    [Attr.agentName]: 'Geneticist',
    [Attr.requestModel]: 'qwen',
    [Attr.inputMessages]: JSON.stringify([
      { role: 'system', content: 'You are the Geneticist.' },
      { role: 'user', content: 'Hypothesis?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_a', name: 'pubmed_search', arguments: '{"query":"apoe4"}' }] },
      { role: 'tool', content: '2 papers', tool_call_id: 'call_a', name: 'pubmed_search' },
    ]),
  }, t0 + 2);
  Object.assign(llm.attributes, {
    [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: '{"hypothesis":"x"}' }]),
    [Attr.inputTokens]: 200,
    [Attr.outputTokens]: 40,
    [Attr.finishReasons]: ['stop'],
    [Attr.logprobs]: [-0.5, -0.25],
    // A value the server did not give: the attribute stays, as null.
    [Attr.responseModel]: null,
  });
  tracer.end(llm, 'ok', undefined, t0 + 10);
  const tool = tracer.start('execute_tool pubmed_search', 'tool', node, { [Attr.operationName]: 'execute_tool', [Attr.toolName]: 'pubmed_search', [Attr.toolArguments]: '{"query":"apoe4"}', [Attr.agentName]: 'Geneticist' }, t0 + 11);
  tool.attributes[Attr.toolResult] = '2 papers';
  tracer.end(tool, 'error', 'timeout', t0 + 12);
  tracer.end(node, 'ok', undefined, t0 + 13);
  const reward = tracer.start('reward judge', 'reward', root, { [Attr.rewardValue]: 0.7, [Attr.rewardBreakdown]: JSON.stringify({ novelty: 0.8, feasibility: 0.6 }) }, t0 + 14);
  tracer.end(reward, 'ok', undefined, t0 + 15);
  Object.assign(root.attributes, { [Attr.decision]: 'GO', [Attr.rewardValue]: 0.7 });
  tracer.end(root, 'ok', undefined, t0 + 16);
  const done: RolloutRecord = { ...running, status: 'succeeded', finalReward: 0.7, criteria: { novelty: 0.8, feasibility: 0.6 }, decision: 'GO', endTime: t0 + 16, spanCount: 5, agents: summariseAgents(tracer.spans()) };
  store.finishRollout(done);
  return done;
}

const tree = (spans: SpanRecord[]): Array<[string, string | null, string, string, string]> =>
  spans.map((s) => [s.spanId, s.parentSpanId, s.name, s.kind, s.status] as [string, string | null, string, string, string]).sort((a, b) => a[0].localeCompare(b[0]));

describe('OTLP export', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let source: TraceStore;
  let fx: ReceiverFixture;
  beforeEach(async () => {
    ws = tempWorkspace();
    source = await TraceStore.open(ws.dir);
    fx = await receiverFixture();
  });
  afterEach(async () => {
    await fx.close();
    await source.close();
    ws.cleanup();
  });

  for (const protocol of ['http/protobuf', 'http/json'] as OtlpProtocol[]) {
    it(`round-trips a lab rollout through the receiver (${protocol}): the same tree, messages, rewards, ids and null values`, async () => {
      const original = labRollout(source);
      const sent = await exportStoredRollouts(source, { endpoint: fx.receiver.url, protocol }, { runId: 'run-lab' });
      assert.deepEqual(sent, { rollouts: 1, spans: 5, rejectedSpans: 0 });

      const back = fx.store.getRollout(original.id);
      assert.ok(back);
      assert.deepEqual(
        [back.runId, back.taskId, back.split, back.sample, back.status, back.finalReward, back.criteria, back.decision, back.spanCount],
        ['run-lab', 'pqa-17', 'train', 1, 'succeeded', 0.7, { novelty: 0.8, feasibility: 0.6 }, 'GO', 5],
      );
      assert.deepEqual(back.agents, original.agents);
      const before = source.getSpans(original.id);
      const after = fx.store.getSpans(original.id);
      assert.deepEqual(tree(after), tree(before));
      for (const s of before) {
        const t = after.find((x) => x.spanId === s.spanId)!;
        assert.deepEqual([t.startTime, t.endTime, t.statusMessage], [s.startTime, s.endTime, s.statusMessage], s.name);
        for (const [k, v] of Object.entries(s.attributes)) {
          if (k === Attr.inputMessages || k === Attr.outputMessages) assert.deepEqual(JSON.parse(String(t.attributes[k])), JSON.parse(String(v)), `${s.name} ${k}`);
          else assert.deepEqual(t.attributes[k], v, `${s.name} ${k}`);
        }
      }
    });
  }

  it('writes what OpenInference viewers read beside the GenAI attributes (kinds, finish reasons, tool input) and a round trip through the receiver drops it again', async () => {
    const original = labRollout(source);
    const wire = rolloutToOtlp(original, source.getSpans(original.id)).scopeSpans[0]!.spans;
    const byName = (name: string): OtlpSpan => wire.find((s) => s.name === name)!;
    assert.deepEqual(
      wire.map((s) => [s.name, s.attributes.get(OI_SPAN_KIND)]),
      [['rollout', 'CHAIN'], ['Geneticist', 'AGENT'], ['chat qwen', 'LLM'], ['execute_tool pubmed_search', 'TOOL'], ['reward judge', 'EVALUATOR']],
    );
    assert.deepEqual(JSON.parse(String(byName('chat qwen').attributes.get(Attr.outputMessages))), [{ role: 'assistant', parts: [{ type: 'text', content: '{"hypothesis":"x"}' }], finish_reason: 'stop' }], 'an output message carries its finish reason, as the GenAI schema requires');
    assert.ok(!String(byName('chat qwen').attributes.get(Attr.inputMessages)).includes('finish_reason'), 'input messages have none');
    assert.equal(byName('execute_tool pubmed_search').attributes.get(OI_INPUT_VALUE), '{"query":"apoe4"}');

    await exportStoredRollouts(source, { endpoint: fx.receiver.url }, { runId: 'run-lab' });
    for (const s of fx.store.getSpans(original.id)) {
      assert.ok(!(OI_SPAN_KIND in s.attributes) && !(OI_INPUT_VALUE in s.attributes), `${s.name}: nothing the source lacks`);
    }
  });

  it('retries a 503 and sends the headers; a 401 is a clear error that never shows the header values', async () => {
    labRollout(source);
    const answers = [503, 200, 401];
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push(req.headers);
        const status = answers.shift()!;
        if (status === 200) {
          assert.equal(decodeProtobufRequest(Buffer.concat(chunks)).resourceSpans[0]!.scopeSpans[0]!.spans.length, 5);
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(encodeResponse(null, false));
        } else {
          res.writeHead(status, { 'content-type': 'application/x-protobuf', ...(status === 503 ? { 'retry-after': '0' } : {}) }).end(encodeRpcStatus(status === 401 ? 16 : 14, status === 401 ? 'bad key' : 'busy', false));
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const headers = parseOtlpHeaders('x-api-key=s3cr%3Dt, x-team = lab');
      assert.deepEqual(headers, { 'x-api-key': 's3cr=t', 'x-team': 'lab' });
      const sent = await exportStoredRollouts(source, { endpoint, headers, backoff: FAST });
      assert.equal(sent.rollouts, 1);
      assert.equal(seen.length, 2);
      assert.equal(seen[1]!['x-api-key'], 's3cr=t');
      await assert.rejects(
        exportStoredRollouts(source, { endpoint, headers, backoff: FAST }),
        (err: Error) => /answered 401: bad key; check the credentials/.test(err.message) && !err.message.includes('s3cr'),
      );
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('says what is wrong with a bad URL, an unreachable collector and bad headers', async () => {
    assert.equal(tracesUrl('http://localhost:4318'), 'http://localhost:4318/v1/traces');
    assert.equal(tracesUrl('https://x.example/api/public/otel/v1/traces'), 'https://x.example/api/public/otel/v1/traces');
    assert.throws(() => tracesUrl('localhost:4318'), /not an http\(s\) URL|not a URL/);
    assert.throws(() => parseOtlpHeaders('novalue'), /K=V/);
    labRollout(source);
    await assert.rejects(exportStoredRollouts(source, { endpoint: 'http://127.0.0.1:1', backoff: FAST, maxAttempts: 2 }), /cannot reach the OTLP collector at http:\/\/127.0.0.1:1\/v1\/traces/);
    await assert.rejects(exportStoredRollouts(source, { endpoint: fx.receiver.url }, { rolloutId: 'f'.repeat(32) }), /not in the store/);
  });
});
