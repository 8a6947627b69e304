import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forEachBounded } from '../../../src/core/rollout/pool';

test('bounded pool never exceeds its limit and visits every item once', async () => {
  let inFlight = 0;
  let peak = 0;
  const seen: number[] = [];
  await forEachBounded(Array.from({ length: 50 }, (_, i) => i), 4, async (i) => {
    inFlight++;
    peak = Math.max(peak, inFlight);
    await new Promise((r) => setImmediate(r));
    seen.push(i);
    inFlight--;
  });
  assert.equal(peak, 4);
  assert.deepEqual([...seen].sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i));
});

test('an aborted signal stops new items from starting', async () => {
  const controller = new AbortController();
  const started: number[] = [];
  await forEachBounded(Array.from({ length: 20 }, (_, i) => i), 2, async (i) => {
    started.push(i);
    if (i === 3) controller.abort();
    await new Promise((r) => setImmediate(r));
  }, controller.signal);
  assert.ok(started.length <= 5, `started ${started.length}`);
  assert.ok(started.includes(3));
});
