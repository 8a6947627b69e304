import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrameType, encodeJsonFrame, encodeSpanFrame, frameJson, frameTraceId, scanFrames, spanFromFrame } from '../../../src/core/store/journalFrame';
import { appendLoc, decodeLocs, encodeLocs } from '../../../src/core/store/spanLocations';
import { makeSpans, traceId } from './helpers/storeFixtures';

describe('journal frames', () => {
  const id = traceId();
  const spans = makeSpans(id, 3);
  const frames = [encodeJsonFrame(FrameType.run, { at: 1, run: { id: 'r' } }), ...spans.map(encodeSpanFrame)];
  const bytes = Buffer.concat(frames);

  it('round-trips JSON and span frames with their offsets', () => {
    const scan = scanFrames(bytes, 1000);
    assert.equal(scan.stop, 'end');
    assert.equal(scan.end, 1000 + bytes.length);
    assert.deepEqual(
      scan.frames.map((f) => [f.type, f.offset, f.length]),
      frames.map((f, i) => [i === 0 ? FrameType.run : FrameType.span, 1000 + frames.slice(0, i).reduce((n, x) => n + x.length, 0), f.length]),
    );
    assert.deepEqual(frameJson(scan.frames[0]!), { at: 1, run: { id: 'r' } });
    assert.equal(frameTraceId(scan.frames[1]!), id);
    assert.deepEqual(scan.frames.slice(1).map(spanFromFrame), spans);
  });

  it('stops at a torn frame and says how many bytes it needs', () => {
    const cut = bytes.length - 5;
    const scan = scanFrames(bytes.subarray(0, cut), 0);
    assert.equal(scan.stop, 'incomplete');
    assert.equal(scan.frames.length, 3);
    assert.equal(scan.needed, frames[3]!.length);
    assert.equal(scanFrames(bytes.subarray(0, 4), 0).stop, 'incomplete');
  });

  it('stops at a frame whose bytes were damaged', () => {
    const damaged = Buffer.from(bytes);
    damaged[frames[0]!.length + frames[1]!.length + 20] ^= 0x01;
    const scan = scanFrames(damaged, 0);
    assert.equal(scan.stop, 'corrupt');
    assert.equal(scan.frames.length, 2);
    assert.equal(scan.end, frames[0]!.length + frames[1]!.length);
    const absurd = Buffer.alloc(16, 0xff);
    assert.equal(scanFrames(absurd, 0).stop, 'corrupt', 'an impossible length is corruption, not a frame to wait for');
  });

  it('merges adjacent span locations and round-trips them as a blob', () => {
    const locs: number[] = [];
    appendLoc(locs, 1, 100, 50);
    appendLoc(locs, 1, 150, 30);
    appendLoc(locs, 1, 400, 10);
    appendLoc(locs, 2, 410, 10);
    assert.deepEqual(locs, [1, 100, 80, 1, 400, 10, 2, 410, 10]);
    const big = [3, 2 ** 40, 7];
    assert.deepEqual(decodeLocs(encodeLocs([...locs, ...big])), [...locs, ...big]);
  });
});
