/**
 * OTLP ingest benchmark, beside its baseline in the same run:
 * - otlp.ingest: spans/s received over OTLP/HTTP protobuf (POSTed in batches
 *   of 512, as the SDK's BatchSpanProcessor sends them, from a worker thread
 *   standing in for the agent's process) by the receiver into a fresh store:
 *   HTTP, decoding, normalising and storing included.
 * - baseline store.ingest: the same spans written straight into a fresh store
 *   with startRollout / writeSpan / finishRollout.
 * The requests are encoded once, before timing. Target ratio ≥ 0.5.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { seededRandom } from '../src/core/data/seededRandom';
import { encodeProtobufRequest } from '../src/core/otlp/otlpEncode';
import type { OtlpSpan, OtlpValue } from '../src/core/otlp/otlpModel';
import { startOtlpReceiver } from '../src/core/otlp/otlpReceiver';
import { normaliseSpan } from '../src/core/otlp/spanNormalise';
import { summariseAgents } from '../src/core/store/agentSummary';
import { TraceStore } from '../src/core/store/traceStore';
import type { SpanRecord } from '../src/core/trace/span';
import type { RolloutRecord } from '../src/core/store/types';
import { median, result, type Bench } from './harness';

const ROLLOUTS = 200;
const SPANS_PER_ROLLOUT = 100;
const BATCH = 512;
const REPEATS = 3;
const AGENTS = ['Planner', 'Researcher', 'Critic', 'Writer'];
const WORDS = 'amyloid tau apoe4 microglia synaptic receptor agonist trial cohort placebo dose biomarker plasma imaging hippocampus pathway variant assay protocol endpoint'.split(' ');

function hex(r: () => number, chars: number): string {
  let s = '';
  while (s.length < chars) s += Math.floor(r() * 0x100000000).toString(16).padStart(8, '0');
  return s.slice(0, chars);
}

/** One agent trace in OTLP's shape, GenAI current conventions: invoke_agent root, chat spans with KBs of messages, tool spans; the root ends last. */
export function agentTrace(index: number): OtlpSpan[] {
  const r = seededRandom(index + 1);
  const text = (n: number): string => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
  const traceId = hex(r, 32);
  const t0 = 1_700_000_000_000 + index * 60_000;
  const root: OtlpSpan = {
    traceId, spanId: hex(r, 16), parentSpanId: null, name: 'invoke_agent Planner', kind: 1, startMs: t0, endMs: t0 + SPANS_PER_ROLLOUT * 100,
    attributes: new Map<string, OtlpValue>([['gen_ai.operation.name', 'invoke_agent'], ['gen_ai.agent.name', 'Planner']]), events: [], links: [], status: { code: 1, message: '' },
  };
  const spans: OtlpSpan[] = [];
  for (let i = 1; i < SPANS_PER_ROLLOUT; i++) {
    const start = t0 + i * 100;
    const isTool = i % 3 === 0;
    const attributes = new Map<string, OtlpValue>(
      isTool
        ? [['gen_ai.operation.name', 'execute_tool'], ['gen_ai.tool.name', 'pubmed_search'], ['gen_ai.tool.call.arguments', JSON.stringify({ query: text(6) })], ['gen_ai.tool.call.result', text(120)]]
        : [
            ['gen_ai.operation.name', 'chat'],
            ['gen_ai.request.model', 'qwen2.5-1.5b-instruct'],
            ['gen_ai.agent.name', AGENTS[i % AGENTS.length]!],
            ['gen_ai.input.messages', JSON.stringify([{ role: 'system', parts: [{ type: 'text', content: text(80) }] }, { role: 'user', parts: [{ type: 'text', content: text(200) }] }])],
            ['gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: text(60) }], finish_reason: 'stop' }])],
            ['gen_ai.usage.input_tokens', 800 + Math.floor(r() * 400)],
            ['gen_ai.usage.output_tokens', 100 + Math.floor(r() * 200)],
          ],
    );
    spans.push({ traceId, spanId: hex(r, 16), parentSpanId: root.spanId, name: isTool ? 'execute_tool pubmed_search' : 'chat qwen', kind: isTool ? 1 : 3, startMs: start, endMs: start + 90, attributes, events: [], links: [], status: { code: 0, message: '' } });
  }
  spans.push(root);
  return spans;
}

/**
 * The exporter's side, in a worker thread as an agent's exporter is in its own
 * process: POSTs the bodies over two keep-alive connections, two requests in
 * flight (the SDK's OTLP exporter sends concurrent exports too), and answers
 * the seconds from the first POST to the last answer.
 */
const SENDER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
const post = (body) => new Promise((resolve, reject) => {
  const req = http.request({ host: '127.0.0.1', port: workerData.port, path: '/v1/traces', method: 'POST', agent,
    headers: { 'content-type': 'application/x-protobuf', 'content-length': body.length } }, (res) => {
    res.resume();
    res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error('receiver answered ' + res.statusCode))));
  });
  req.on('error', reject);
  req.end(body);
});
(async () => {
  const bodies = workerData.bodies.map((b) => Buffer.from(b));
  const t0 = performance.now();
  // Two requests in flight: the next body is on its way while the receiver stores the last.
  let next = 0;
  const lane = async () => { while (next < bodies.length) await post(bodies[next++]); };
  await Promise.all([lane(), lane()]);
  parentPort.postMessage((performance.now() - t0) / 1000);
  agent.destroy();
})().catch((e) => parentPort.postMessage(String(e)));
`;

export function sendAll(port: number, bodies: Uint8Array[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(SENDER, { eval: true, workerData: { port, bodies } });
    worker.once('message', (m: number | string) => (typeof m === 'number' ? resolve(m) : reject(new Error(m))));
    worker.once('error', reject);
  });
}

async function withStore<T>(fn: (store: TraceStore) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-otlp-bench-'));
  const store = await TraceStore.open(dir);
  try {
    return await fn(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The bench's agent traces (ROLLOUTS of SPANS_PER_ROLLOUT spans) and the OTLP/HTTP protobuf bodies that carry them, BATCH spans each. */
export function ingestRequests(rollouts = ROLLOUTS): { all: OtlpSpan[]; bodies: Uint8Array[] } {
  const all = Array.from({ length: rollouts }, (_, i) => agentTrace(i)).flat();
  const bodies: Uint8Array[] = [];
  for (let i = 0; i < all.length; i += BATCH) bodies.push(encodeProtobufRequest({ resourceSpans: [{ resource: new Map([['service.name', 'bench']]), scopeSpans: [{ scope: { name: 'bench', version: '1' }, spans: all.slice(i, i + BATCH) }] }] }));
  return { all, bodies };
}

export const bench: Bench = {
  names: ['otlp.ingest'],
  async run() {
    const { all, bodies } = ingestRequests();
    // The baseline writes what the receiver stores: the normalised spans and the finished rollout records (per-agent facts included), grouped by rollout.
    const byTrace = new Map<string, SpanRecord[]>();
    for (const s of all) {
      const rec = normaliseSpan(s).record;
      (byTrace.get(rec.traceId) ?? byTrace.set(rec.traceId, []).get(rec.traceId)!).push(rec);
    }
    const agentsOf = new Map([...byTrace].map(([id, spans]) => [id, summariseAgents(spans)]));

    const received: number[] = [];
    const direct: number[] = [];
    for (let rep = 0; rep < REPEATS; rep++) {
      received.push(
        await withStore(async (store) => {
          const receiver = await startOtlpReceiver({ store, port: 0 });
          try {
            const secs = await sendAll(receiver.port, bodies);
            if (store.listRollouts({ status: 'succeeded' }).total !== ROLLOUTS) throw new Error('the receiver did not finish every rollout');
            return all.length / secs;
          } finally {
            await receiver.close();
          }
        }),
      );
      direct.push(
        await withStore(async (store) => {
          store.startRun({ id: 'bench', startTime: 0, endTime: null, status: 'running', params: {}, simulated: false, planned: 0 });
          const t0 = performance.now();
          for (const [id, spans] of byTrace) {
            const record: RolloutRecord = {
              id, runId: 'bench', taskId: id, split: null, sample: 0, status: 'running', failure: null, finalReward: null, criteria: null, judgeFailed: false,
              decision: null, expectedDecision: null, turns: null, error: null, simulated: false, startTime: spans[0]!.startTime, endTime: null, spanCount: 0, agents: [],
            };
            store.startRollout(record);
            for (const s of spans) store.writeSpan(s);
            store.finishRollout({ ...record, status: 'succeeded', endTime: spans[spans.length - 1]!.endTime, spanCount: spans.length, agents: agentsOf.get(id)! });
          }
          return all.length / ((performance.now() - t0) / 1000);
        }),
      );
    }
    return [result('otlp.ingest', 'spans/s', median(received), median(direct), 'baseline: the same spans written straight into the store (store.ingest); target ratio ≥ 0.5')];
  },
};
