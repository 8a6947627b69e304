import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { TIME_CLAMPED_ATTR } from '../../../src/core/otlp/spanTimes';
import { receiverFixture, type ReceiverFixture } from './helpers';

let fx: ReceiverFixture | null = null;
afterEach(async () => {
  await fx?.close();
  fx = null;
});

const U64_MAX = '18446744073709551615';
const post = (spans: unknown[]): Promise<Response> =>
  fetch(`${fx!.receiver.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans }] }] }) });

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`gave up waiting for ${what}`);
}

describe('OTLP receiver: span times out of range, traces without a root', () => {
  it('clamps u64-max and pre-2000 times and ends before starts, keeps the originals on the span and logs it', async () => {
    fx = await receiverFixture();
    const before = Date.now();
    const res = await post([
      { traceId: 'a'.repeat(32), spanId: '1'.repeat(16), name: 'far future', startTimeUnixNano: U64_MAX, endTimeUnixNano: U64_MAX },
      { traceId: 'b'.repeat(32), spanId: '2'.repeat(16), name: 'backwards', startTimeUnixNano: '1700000001000000000', endTimeUnixNano: '1700000000000000000' },
      { traceId: 'c'.repeat(32), spanId: '3'.repeat(16), name: 'epoch zero', startTimeUnixNano: '0', endTimeUnixNano: '1700000000000000000' },
    ]);
    assert.equal(res.status, 200);
    const after = Date.now();
    const [future] = fx.store.getSpans('a'.repeat(32));
    assert.ok(future!.startTime >= before && future!.startTime <= after, 'the time it was received');
    assert.equal(future!.endTime, future!.startTime);
    const original = JSON.parse(future!.attributes[TIME_CLAMPED_ATTR] as string) as { startTime: number; endTime: number };
    assert.ok(original.startTime > 1.8e13 && original.endTime > 1.8e13, 'u64-max nanoseconds, as milliseconds');
    const rollout = fx.store.getRollout('a'.repeat(32))!;
    assert.ok(rollout.startTime <= after, 'the rollout no longer sorts first forever');
    const [backwards] = fx.store.getSpans('b'.repeat(32));
    assert.equal(backwards!.startTime, 1700000001000);
    assert.equal(backwards!.endTime, 1700000001000, 'no negative duration');
    assert.deepEqual(JSON.parse(backwards!.attributes[TIME_CLAMPED_ATTR] as string), { endTime: 1700000000000 });
    const [zero] = fx.store.getSpans('c'.repeat(32));
    assert.equal(zero!.startTime, 1700000000000, 'a start of 0 takes the sane end');
    assert.ok(fx.logs.some((l) => /3 spans had times .* stored clamped/.test(l)), fx.logs.join('\n'));
  });

  it('a trace whose root never arrives ends incomplete after the idle time, its spans kept', async () => {
    fx = await receiverFixture({ idleEndMs: 100 });
    const res = await post([{ traceId: 'd'.repeat(32), spanId: '4'.repeat(16), parentSpanId: '5'.repeat(16), name: 'child', startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000001000000000' }]);
    assert.equal(res.status, 200);
    assert.equal(fx.store.getRollout('d'.repeat(32))!.status, 'running');
    await until(() => fx!.store.getRollout('d'.repeat(32))!.status !== 'running', 'the idle end');
    const r = fx.store.getRollout('d'.repeat(32))!;
    assert.equal(r.status, 'failed');
    assert.equal(r.failure, 'interrupted');
    assert.match(r.error ?? '', /no root span arrived/);
    assert.equal(r.spanCount, 1);
    assert.ok(fx.logs.some((l) => /1 trace ended incomplete: no root span arrived/.test(l)), fx.logs.join('\n'));

    // The root comes after all (a long step with nothing exported meanwhile): the rollout is finished from it.
    const late = await post([{ traceId: 'd'.repeat(32), spanId: '5'.repeat(16), name: 'root', startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000002000000000' }]);
    assert.equal(late.status, 200);
    const finished = fx.store.getRollout('d'.repeat(32))!;
    assert.equal(finished.status, 'succeeded');
    assert.equal(finished.error, null);
    assert.equal(finished.spanCount, 2);
  });
});
