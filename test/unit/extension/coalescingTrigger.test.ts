import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoalescingTrigger } from '../../../src/extension/coalescingTrigger';

describe('coalescing trigger', () => {
  it('runs once for a burst of triggers', async () => {
    let runs = 0;
    const t = new CoalescingTrigger(async () => void runs++, 5);
    for (let i = 0; i < 20; i++) t.trigger();
    await t.flush();
    assert.equal(runs, 1);
    t.dispose();
  });

  it('never runs the task twice at once, and runs again after a trigger that came during a run', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const t = new CoalescingTrigger(async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      runs++;
      if (runs === 1) await gate;
      active--;
    }, 1);
    const first = t.flush();
    t.trigger();
    t.trigger();
    release();
    await first;
    // The trigger that arrived during the first run schedules exactly one more.
    for (let i = 0; i < 100 && runs < 2; i++) await sleep(5);
    await t.flush();
    assert.equal(maxActive, 1);
    assert.ok(runs >= 2);
    t.dispose();
  });

  it('keeps going after a task that throws', async () => {
    let runs = 0;
    const t = new CoalescingTrigger(async () => {
      runs++;
      throw new Error('boom');
    }, 1);
    await t.flush();
    await t.flush();
    assert.equal(runs, 2);
    t.dispose();
  });

  it('does nothing after dispose', async () => {
    let runs = 0;
    const t = new CoalescingTrigger(async () => void runs++, 1);
    t.dispose();
    t.trigger();
    await t.flush();
    await sleep(10);
    assert.equal(runs, 0);
  });
});
