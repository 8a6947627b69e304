import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import { storePaths } from '../../../src/core/store/storePaths';
import { makeRollout, makeRun, tempWorkspace } from './helpers/storeFixtures';

/** Per task and sample, the ids of the run's current attempts. */
function current(store: TraceStore, runId: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const r of store.listRollouts({ runId, superseded: false, sort: 'startTime', order: 'asc' }).rollouts) (out[`${r.taskId}#${r.sample}`] ??= []).push(r.id);
  return out;
}

/*
 * Two writers (two workers of a sharded run given the same slice, or a worker
 * presumed dead and its restart) each run an attempt of the same key, neither
 * naming the other: the store keeps one current attempt per key, the same one
 * in every process and after a rebuild from the journals.
 */
test('two attempts of one key that ran at once resolve to one current attempt, the first success', async () => {
  const ws = tempWorkspace();
  try {
    const a = await TraceStore.open(ws.dir);
    const b = await TraceStore.open(ws.dir);
    a.startRun(makeRun('run-1'));
    await b.refresh();
    const id = (s: string): string => s.padEnd(32, '0');
    // both succeed: the one that ended first stands
    const a1 = makeRollout({ id: id('a1'), runId: 'run-1', taskId: 't1', status: 'running', startTime: 1000, endTime: null });
    const b1 = makeRollout({ id: id('b1'), runId: 'run-1', taskId: 't1', status: 'running', startTime: 1100, endTime: null });
    // a transport failure that ended first loses to a later success
    const a2 = makeRollout({ id: id('a2'), runId: 'run-1', taskId: 't2', status: 'failed', failure: 'connection', finalReward: null, startTime: 1000, endTime: 1500 });
    const b2 = makeRollout({ id: id('b2'), runId: 'run-1', taskId: 't2', status: 'succeeded', startTime: 1000, endTime: 2500 });
    // one still running beside a finished success is superseded by it, and stays so when it ends later
    const a3 = makeRollout({ id: id('a3'), runId: 'run-1', taskId: 't3', status: 'running', startTime: 1000, endTime: null });
    const b3 = makeRollout({ id: id('b3'), runId: 'run-1', taskId: 't3', status: 'succeeded', startTime: 1000, endTime: 2000 });
    // a key run once is untouched
    const a4 = makeRollout({ id: id('a4'), runId: 'run-1', taskId: 't4', status: 'succeeded' });
    a.startRollout(a1);
    b.startRollout(b1);
    assert.equal(current(a, 'run-1')['t1#0']!.length, 1, 'a writer sees only its own attempt before it catches up');
    await a.refresh();
    assert.deepEqual(current(a, 'run-1')['t1#0'], [a1.id, b1.id], 'both running: both current until one ends');
    b.finishRollout({ ...b1, status: 'succeeded', endTime: 2000 });
    a.finishRollout({ ...a1, status: 'succeeded', endTime: 3000 });
    a.startRollout(a2);
    a.finishRollout(a2);
    b.startRollout(b2);
    b.finishRollout(b2);
    a.startRollout(a3);
    b.startRollout(b3);
    b.finishRollout(b3);
    a.startRollout(a4);
    a.finishRollout(a4);
    await a.refresh();
    await b.refresh();
    const want = { 't1#0': [b1.id], 't2#0': [b2.id], 't3#0': [b3.id], 't4#0': [a4.id] };
    assert.deepEqual(current(a, 'run-1'), want, 'writer a');
    assert.deepEqual(current(b, 'run-1'), want, 'writer b: the same, though it read the journals in another order');
    assert.equal(a.getRollout(a1.id)?.supersededBy, b1.id);
    assert.equal(a.getRollout(a3.id)?.supersededBy, b3.id, 'the attempt still running is superseded by the finished success');
    a.finishRollout({ ...a3, status: 'succeeded', endTime: 4000 });
    await b.refresh();
    assert.deepEqual(current(b, 'run-1')['t3#0'], [b3.id], 'the one that ended later stays superseded');
    await a.close();
    await b.close();

    rmSync(storePaths(ws.dir).catalog);
    const rebuilt = await TraceStore.open(ws.dir, { readOnly: true });
    assert.deepEqual(current(rebuilt, 'run-1'), want, 'rebuilt from the journals');
    assert.equal(rebuilt.listRollouts({ runId: 'run-1', superseded: true }).total, 3);
    await rebuilt.close();
  } finally {
    ws.cleanup();
  }
});

test('an attempt a resume named stays superseded by it, whatever the outcomes; the tie-break applies only to attempts no resume replaced', async () => {
  const ws = tempWorkspace();
  try {
    const s = await TraceStore.open(ws.dir);
    s.startRun(makeRun('run-2'));
    const old = makeRollout({ id: 'c1'.padEnd(32, '0'), runId: 'run-2', taskId: 't', status: 'failed', failure: 'timeout', finalReward: null, endTime: 1500 });
    s.startRollout(old);
    s.finishRollout(old);
    const redo = { ...makeRollout({ id: 'c2'.padEnd(32, '0'), runId: 'run-2', taskId: 't', status: 'failed', failure: 'connection', finalReward: null, startTime: 2000, endTime: 2500 }), supersedes: [old.id] };
    s.startRollout(redo);
    s.finishRollout(redo);
    assert.deepEqual(current(s, 'run-2'), { 't#0': [redo.id] });
    assert.equal(s.getRollout(old.id)?.supersededBy, redo.id);
    await s.close();
  } finally {
    ws.cleanup();
  }
});
