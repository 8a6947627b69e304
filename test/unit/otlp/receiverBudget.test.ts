import assert from 'node:assert/strict';
import { request } from 'node:http';
import { afterEach, describe, it } from 'node:test';
import { RpcStatus } from '../../../src/core/otlp/otlpProto';
import { receiverFixture, type ReceiverFixture } from './helpers';
import { nestedEmptyArraysRequest } from './hostilePayloads';

let fx: ReceiverFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

interface Answer {
  status: number;
  body: Buffer;
  /** performance.now() when the answer was complete. */
  at: number;
}

/** A POST with node:http, resolving `sent` once the whole body is handed to the socket. */
function post(url: string, body: Buffer | string, contentType: string): { sent: Promise<void>; answer: Promise<Answer> } {
  let sent!: () => void;
  const sentP = new Promise<void>((r) => (sent = r));
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = request(`${url}/v1/traces`, { method: 'POST', headers: { 'content-type': contentType, 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), at: performance.now() }));
    });
    req.on('error', reject);
    req.end(body, () => sent());
  });
  return { sent: sentP, answer };
}

const probeSpan = (traceId: string): string =>
  JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId, spanId: '1'.repeat(16), name: 'probe', startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000001000000000' }] }] }] });

const statusMessage = (a: Answer, json: boolean): string =>
  json ? (JSON.parse(a.body.toString()) as { message: string }).message : (RpcStatus.toObject(RpcStatus.decode(a.body)) as { message: string }).message;

describe('OTLP receiver: what one request may cost', () => {
  it('refuses 99,999 × 80 nested empty arrays (16.6 MB) with 413 naming the limit and its value, and stores nothing', async () => {
    fx = await receiverFixture();
    const big = nestedEmptyArraysRequest();
    assert.ok(big.length > 16_500_000 && big.length < 16 << 20, `${big.length} bytes: under the body limit`);
    const a = await post(fx.receiver.url, big, 'application/x-protobuf').answer;
    assert.equal(a.status, 413);
    assert.match(statusMessage(a, false), /more than 1000000 values .*maxValuesPerRequest/);
    assert.equal(fx.store.stats().spans, 0);
    assert.equal(fx.store.listRollouts().total, 0);
    const ok = await post(fx.receiver.url, probeSpan('c'.repeat(32)), 'application/json').answer;
    assert.equal(ok.status, 200);
  });

  it('OTLP/JSON: a body of nested empty arrays is refused (413) before it is parsed, and stores nothing', async () => {
    fx = await receiverFixture();
    const middle = `{"arrayValue":{"values":[${Array<string>(240).fill('{}').join(',')}]}}`;
    const value = `{"arrayValue":{"values":[${Array<string>(20_000).fill(middle).join(',')}]}}`;
    const doc = JSON.parse(probeSpan('d'.repeat(32))) as { resourceSpans: [{ scopeSpans: [{ spans: [Record<string, unknown>] }] }] };
    doc.resourceSpans[0].scopeSpans[0].spans[0].attributes = [{ key: 'hostile', value: '@' }];
    const body = JSON.stringify(doc).replace('"@"', value);
    assert.ok(body.length > 14_000_000 && body.length < 16 << 20, `${body.length} bytes: under the body limit`);
    const a = await post(fx.receiver.url, body, 'application/json').answer;
    assert.equal(a.status, 413);
    assert.match(statusMessage(a, true), /more than 250000 JSON objects and arrays \(the limit maxJsonNodesPerRequest, counted before it is parsed\)/);
    assert.equal(fx.store.stats().spans, 0);
  });

  it('OTLP/JSON counts values against the same budget as protobuf', async () => {
    fx = await receiverFixture({ maxValuesPerRequest: 1000 });
    const doc = JSON.parse(probeSpan('f'.repeat(32))) as { resourceSpans: [{ scopeSpans: [{ spans: [Record<string, unknown>] }] }] };
    doc.resourceSpans[0].scopeSpans[0].spans[0].attributes = [{ key: 'ids', value: { arrayValue: { values: Array.from({ length: 300 }, (_, i) => ({ intValue: String(i) })) } } }];
    assert.equal((await post(fx.receiver.url, JSON.stringify(doc), 'application/json').answer).status, 200);
    assert.equal(fx.store.getSpans('f'.repeat(32))[0]!.attributes.ids!.toString(), Array.from({ length: 300 }, (_, i) => i).toString());
    doc.resourceSpans[0].scopeSpans[0].spans[0].attributes = [{ key: 'ids', value: { arrayValue: { values: Array.from({ length: 1200 }, (_, i) => ({ intValue: String(i) })) } } }];
    const over = await post(fx.receiver.url, JSON.stringify({ ...doc, resourceSpans: [{ scopeSpans: [{ spans: [{ ...doc.resourceSpans[0].scopeSpans[0].spans[0], traceId: '9'.repeat(32) }] }] }] }), 'application/json').answer;
    assert.equal(over.status, 413);
    assert.match(statusMessage(over, true), /more than 1000 values .*maxValuesPerRequest.*attribute "ids"/);
    assert.equal(fx.store.getRollout('9'.repeat(32)), null);
  });

  it('answers another client while it decodes a huge request: the probe is answered before the huge one', async () => {
    // A budget high enough that the huge request is decoded for long before it is refused.
    fx = await receiverFixture({ maxValuesPerRequest: 6_000_000 });
    const big = post(fx.receiver.url, nestedEmptyArraysRequest(), 'application/x-protobuf');
    await big.sent;
    // Let the receiver take the body and start on it (not a pass/fail bound: the order below is what is checked).
    await new Promise((r) => setTimeout(r, 200));
    const probeStart = performance.now();
    const probe = await post(fx.receiver.url, probeSpan('e'.repeat(32)), 'application/json').answer;
    const huge = await big.answer;
    assert.equal(probe.status, 200);
    assert.equal(huge.status, 413);
    assert.ok(probe.at < huge.at, `the probe (${Math.round(probe.at - probeStart)} ms) was answered ${Math.round(probe.at - huge.at)} ms after the huge request`);
    process.stderr.write(`probe answered in ${Math.round(probe.at - probeStart)} ms, ${Math.round(huge.at - probe.at)} ms before the huge request\n`);
  });
});
