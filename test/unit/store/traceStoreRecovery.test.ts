import assert from 'node:assert/strict';
import { appendFileSync, closeSync, existsSync, openSync, readdirSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import type { SpanRecord } from '../../../src/core/trace/span';
import { makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

interface Written {
  rollouts: RolloutRecord[];
  spans: Map<string, SpanRecord[]>;
}

async function fill(dir: string, n: number, opts: Parameters<typeof TraceStore.open>[1] = {}): Promise<Written> {
  const store = await TraceStore.open(dir, opts);
  store.startRun(makeRun('run-a'));
  store.putPromptVersion({ hash: 'h1', agent: 'Geneticist', text: 'prompt', firstSeen: 1 });
  const out: Written = { rollouts: [], spans: new Map() };
  for (let i = 0; i < n; i++) {
    const r = makeRollout({ runId: 'run-a', taskId: `t${i}`, startTime: 1000 + i, finalReward: i / n });
    const spans = makeSpans(r.id, 30, r.startTime);
    store.startRollout({ ...r, status: 'running', endTime: null });
    for (const s of spans) store.writeSpan(s);
    store.finishRollout(r);
    out.rollouts.push({ ...r, spanCount: 30 });
    out.spans.set(r.id, spans);
  }
  store.updateRun('run-a', { status: 'done', endTime: 9999 });
  await store.close();
  return out;
}

async function assertHolds(dir: string, w: Written): Promise<TraceStore> {
  const store = await TraceStore.open(dir);
  assert.equal(store.listRollouts().total, w.rollouts.length);
  for (const r of w.rollouts) {
    assert.deepEqual(store.getRollout(r.id), r);
    assert.deepEqual(store.getSpans(r.id), w.spans.get(r.id));
  }
  assert.equal(store.getRun('run-a')?.status, 'done');
  assert.equal(store.getPromptVersion('h1')?.text, 'prompt');
  return store;
}

describe('TraceStore: reopening and recovery', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  beforeEach(() => {
    ws = tempWorkspace();
  });
  afterEach(() => ws.cleanup());

  it('reopens after close from the checkpointed catalog', async () => {
    const w = await fill(ws.dir, 20);
    const store = await assertHolds(ws.dir, w);
    assert.equal(store.openedFrom, 'loaded');
    assert.equal(store.stats().spans, 600);
    await store.close();
  });

  it('rebuilds a deleted catalog from the journals', async () => {
    const w = await fill(ws.dir, 20);
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const store = await assertHolds(ws.dir, w);
    assert.equal(store.openedFrom, 'created');
    await store.close();
    const again = await assertHolds(ws.dir, w);
    assert.equal(again.openedFrom, 'loaded', 'the rebuilt catalog was checkpointed');
    await again.close();
  });

  it('rebuilds a corrupted catalog from the journals', async () => {
    const w = await fill(ws.dir, 20);
    writeFileSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'), Buffer.from('this is not an sqlite database at all, sorry'.repeat(100)));
    const store = await assertHolds(ws.dir, w);
    assert.equal(store.openedFrom, 'corrupt');
    await store.close();
  });

  it('keeps rollouts whole across journal rotation', async () => {
    const w = await fill(ws.dir, 25, { journalRotateBytes: 20_000, checkpointEvery: 4 });
    const journals = readdirSync(join(ws.dir, '.rollout-lab/store/journal'));
    assert.ok(journals.length > 5, `rotated into ${journals.length} files`);
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const store = await assertHolds(ws.dir, w);
    assert.equal(store.stats().journals, journals.length);
    await store.close();
  });

  it('catches up on journal writes the last checkpoint does not cover', async () => {
    const w = await fill(ws.dir, 10);
    const catalog = join(ws.dir, '.rollout-lab/store/catalog.sqlite');
    const before = statSync(catalog).mtimeMs;
    // A second session whose catalog checkpoint never happens (as if killed): its journal is still read.
    const store = await TraceStore.open(ws.dir, { checkpointEvery: 1_000_000 });
    const r = makeRollout({ runId: 'run-a', taskId: 'late' });
    store.startRollout(r);
    for (const s of makeSpans(r.id, 30)) store.writeSpan(s);
    store.finishRollout(r);
    assert.equal(statSync(catalog).mtimeMs, before, 'no checkpoint per rollout or span');
    const reader = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(reader.getRollout(r.id)?.status, 'succeeded');
    assert.equal(reader.getSpans(r.id).length, 30);
    await reader.close();
    await store.close();
    assert.ok(w.rollouts.length === 10);
  });

  it('removes old checkpoint temp files of dead processes, and only those', async () => {
    await fill(ws.dir, 2);
    const root = join(ws.dir, '.rollout-lab/store');
    const old = join(root, 'catalog.sqlite.999999999-0a0b0c0d.tmp');
    const recent = join(root, 'catalog.sqlite.999999998-0a0b0c0d.tmp');
    const alive = join(root, `catalog.sqlite.${process.ppid}-0a0b0c0d.tmp`);
    for (const p of [old, recent, alive]) writeFileSync(p, 'partial');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(old, hourAgo, hourAgo);
    utimesSync(alive, hourAgo, hourAgo);
    const store = await TraceStore.open(ws.dir);
    assert.deepEqual([existsSync(old), existsSync(recent), existsSync(alive)], [false, true, true]);
    await store.close();
  });

  it('ignores a torn or garbage journal tail and keeps everything before it', async () => {
    const w = await fill(ws.dir, 10);
    const dir = join(ws.dir, '.rollout-lab/store/journal');
    const [journal] = readdirSync(dir);
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    // The close frame and the run update are at the end: cut into them, then add garbage.
    const path = join(dir, journal!);
    truncateSync(path, statSync(path).size - 60);
    appendFileSync(path, Buffer.from([0xff, 0xff, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7]));
    const store = await TraceStore.open(ws.dir);
    assert.equal(store.listRollouts().total, 10);
    for (const r of w.rollouts) assert.deepEqual(store.getSpans(r.id), w.spans.get(r.id));
    // The run's 'done' update was torn off, and the writer is gone: the run reads as interrupted.
    assert.equal(store.getRun('run-a')?.status, 'interrupted');
    await store.close();

    // A frame whose bytes were damaged in place (CRC mismatch) ends the readable part just the same.
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const size = statSync(path).size;
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.from('XXXX'), 0, 4, Math.floor(size / 2));
    closeSync(fd);
    const damaged = await TraceStore.open(ws.dir);
    const intact = damaged.listRollouts({ status: 'succeeded' });
    assert.ok(intact.total > 0 && intact.total < 10, `rollouts before the damage survive (${intact.total})`);
    for (const r of intact.rollouts) assert.deepEqual(damaged.getSpans(r.id), w.spans.get(r.id));
    for (const r of damaged.listRollouts({ status: 'running' }).rollouts) assert.fail(`rollout ${r.id} still running after its writer is gone`);
    await damaged.close();
  });
});
