import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ExportTraceServiceRequest, ExportTraceServiceResponse, RpcStatus } from '../../../src/core/otlp/otlpProto';
import { receiverFixture, type ReceiverFixture } from './helpers';

const TRACE = 'a'.repeat(32);
const SPAN = 'b'.repeat(16);

function jsonSpan(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { traceId: TRACE, spanId: SPAN, name: 'root', startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000001000000000', ...over };
}
function jsonRequest(spans: unknown[], resource: unknown[] = []): string {
  return JSON.stringify({ resourceSpans: [{ resource: { attributes: resource }, scopeSpans: [{ scope: { name: 't' }, spans }] }] });
}
function deepValue(depth: number): unknown {
  let v: unknown = { stringValue: 'leaf' };
  for (let i = 0; i < depth; i++) v = { arrayValue: { values: [v] } };
  return v;
}

describe('OTLP receiver: bad, oversized and hostile requests', () => {
  let fx: ReceiverFixture;
  beforeEach(async () => {
    fx = await receiverFixture({ maxBodyBytes: 64 * 1024 });
  });
  afterEach(async () => {
    await fx.close();
  });

  const post = (body: Uint8Array | string, headers: Record<string, string>, path = '/v1/traces', method = 'POST'): Promise<Response> =>
    fetch(`${fx.receiver.url}${path}`, { method, headers, body: method === 'POST' ? (body as unknown as BodyInit) : undefined });
  const nothingStored = (): void => {
    assert.equal(fx.store.listRollouts().total, 0);
    assert.equal(fx.store.listRuns().length, 0);
    assert.equal(fx.store.stats().spans, 0);
  };
  const statusMessage = async (res: Response): Promise<string> => {
    const body = new Uint8Array(await res.arrayBuffer());
    if (res.headers.get('content-type') === 'application/json') return (JSON.parse(Buffer.from(body).toString()) as { message: string }).message;
    return (RpcStatus.toObject(RpcStatus.decode(body)) as { message: string }).message;
  };
  /** The receiver still takes a good request after the bad one. */
  const stillServes = async (): Promise<void> => {
    const ok = await post(jsonRequest([jsonSpan()]), { 'content-type': 'application/json' });
    assert.equal(ok.status, 200);
    assert.equal(fx.store.listRollouts().total, 1);
  };

  it('answers malformed protobuf with 400 and a google.rpc.Status, logs one line and stores nothing', async () => {
    const res = await post(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]), { 'content-type': 'application/x-protobuf' });
    assert.equal(res.status, 400);
    assert.match(await statusMessage(res), /not a protobuf ExportTraceServiceRequest/);
    assert.equal(fx.logs.length, 1);
    nothingStored();
    await stillServes();
  });

  it('answers bad JSON, wrong content type and encoding, unknown paths and methods', async () => {
    const bad = await post('{"resourceSpans": [', { 'content-type': 'application/json' });
    assert.equal(bad.status, 400);
    assert.match(await statusMessage(bad), /not JSON/);
    assert.equal((await post('x', { 'content-type': 'text/plain' })).status, 415);
    assert.equal((await post(jsonRequest([jsonSpan()]), { 'content-type': 'application/json', 'content-encoding': 'br' })).status, 415);
    assert.equal((await post('{}', { 'content-type': 'application/json' }, '/v1/metrics')).status, 404);
    const get = await post('', {}, '/v1/traces', 'GET');
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    const notGzip = await post('plain', { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    assert.equal(notGzip.status, 400);
    nothingStored();
    await stillServes();
  });

  it('refuses an oversized body (413) and a gzip bomb (413) without storing anything', async () => {
    const big = jsonRequest([jsonSpan({ attributes: [{ key: 'x', value: { stringValue: 'y'.repeat(100 * 1024) } }] })]);
    assert.equal((await post(big, { 'content-type': 'application/json' })).status, 413);
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
    assert.ok(bomb.length < 64 * 1024);
    const res = await post(bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    assert.equal(res.status, 413);
    assert.match(await statusMessage(res), /decompresses to more than/);
    nothingStored();
    await stillServes();
  });

  it('refuses the whole request when one span is hostile: bad ids, deep nesting, __proto__ keys, NaN times', async () => {
    const cases: Array<[string, unknown[], RegExp]> = [
      ['short trace id', [jsonSpan(), jsonSpan({ spanId: 'c'.repeat(16), traceId: 'abc' })], /traceId is "abc"; OTLP\/JSON ids are 32 hex/],
      ['non-hex span id', [jsonSpan({ spanId: 'zz'.repeat(8) })], /spanId/],
      ['deep nesting', [jsonSpan({ attributes: [{ key: 'deep', value: deepValue(40) }] })], /deeper than 16 levels/],
      ['__proto__ key', [jsonSpan({ attributes: [{ key: '__proto__', value: { stringValue: 'polluted' } }] })], /"__proto__"/],
      ['nested __proto__ key', [jsonSpan({ attributes: [{ key: 'm', value: { kvlistValue: { values: [{ key: '__proto__', value: { boolValue: true } }] } } }] })], /"__proto__"/],
      ['NaN time', [jsonSpan({ startTimeUnixNano: 'NaN' })], /startTimeUnixNano/],
      ['fractional time', [jsonSpan({ endTimeUnixNano: 1.5 })], /endTimeUnixNano/],
      ['spans not an array', [{ ...jsonSpan(), events: 'x' }], /events is not a JSON array/],
    ];
    for (const [what, spans, message] of cases) {
      const res = await post(jsonRequest(spans), { 'content-type': 'application/json' });
      assert.equal(res.status, 400, what);
      assert.match(await statusMessage(res), message, what);
    }
    const wrongLength = ExportTraceServiceRequest.encode(
      ExportTraceServiceRequest.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: randomBytes(16), spanId: randomBytes(8) }, { traceId: randomBytes(15), spanId: randomBytes(8) }] }] }] }),
    ).finish();
    const pb = await post(wrongLength, { 'content-type': 'application/x-protobuf' });
    assert.equal(pb.status, 400);
    assert.match(await statusMessage(pb), /traceId has 15 bytes/);
    assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
    nothingStored();
    await stillServes();
  });

  it('answers 200 with partial_success when some spans have all-zero ids, and stores the others', async () => {
    const body = ExportTraceServiceRequest.encode(
      ExportTraceServiceRequest.fromObject({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  { traceId: Buffer.from(TRACE, 'hex'), spanId: Buffer.from(SPAN, 'hex'), name: 'kept', startTimeUnixNano: 1, endTimeUnixNano: 2 },
                  { traceId: Buffer.alloc(16), spanId: Buffer.from(SPAN, 'hex'), name: 'zero trace' },
                ],
              },
            ],
          },
        ],
      }),
    ).finish();
    const res = await post(body, { 'content-type': 'application/x-protobuf' });
    assert.equal(res.status, 200);
    const answer = ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(new Uint8Array(await res.arrayBuffer())), { longs: Number }) as {
      partialSuccess?: { rejectedSpans: number; errorMessage: string };
    };
    assert.equal(answer.partialSuccess?.rejectedSpans, 1);
    assert.match(answer.partialSuccess?.errorMessage ?? '', /all-zero/);
    assert.equal(fx.store.listRollouts().total, 1);
  });

  it("stores a span that arrives after its trace's root as a late span, the rollout left as it finished", async () => {
    assert.equal((await post(jsonRequest([jsonSpan()]), { 'content-type': 'application/json' })).status, 200);
    assert.equal(fx.store.getRollout(TRACE)?.status, 'succeeded');
    const late = jsonSpan({ spanId: 'e'.repeat(16), parentSpanId: SPAN, name: 'late' });
    assert.equal((await post(jsonRequest([late]), { 'content-type': 'application/json' })).status, 200);
    assert.deepEqual(fx.store.getSpans(TRACE).map((s) => s.name).sort(), ['late', 'root']);
    assert.deepEqual([fx.store.getRollout(TRACE)?.status, fx.store.listRollouts().total], ['succeeded', 1]);
  });
});
