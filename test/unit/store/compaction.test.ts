import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { FrameType, JOURNAL_FORMAT_VERSION, encodeJsonFrame } from '../../../src/core/store/journalFrame';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { SpanRecord } from '../../../src/core/trace/span';
import { killHard, startChild } from './helpers/childProcess';
import { makeAgent, makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

/** Everything a user can read from the store, for before/after comparisons. */
function snapshot(store: TraceStore): unknown {
  const rollouts = store.listRollouts({ sort: 'startTime', order: 'asc' }).rollouts;
  return {
    rollouts,
    spans: rollouts.map((r) => store.getSpans(r.id)),
    runs: store.listRuns(),
    prompts: store.listPromptVersions(),
    aggregates: store.aggregateByAgent(),
    keys: store.listRuns().map((r) => [...store.finishedKeys(r.id)].sort()),
    counts: { rollouts: store.stats().rollouts, spans: store.stats().spans },
  };
}

async function writeSession(dir: string, runId: string, n: number, rotate = 64 << 20): Promise<void> {
  const store = await TraceStore.open(dir, { journalRotateBytes: rotate });
  store.startRun(makeRun(runId));
  store.putPromptVersion({ hash: `p-${runId}`, agent: 'Geneticist', text: `prompt of ${runId}`, firstSeen: 1 });
  // Two rollouts at a time, so their span frames interleave in the journal.
  for (let i = 0; i < n; i += 2) {
    const pair = [0, 1].map((k) =>
      makeRollout({ runId, taskId: `t${i + k}`, sample: 0, startTime: 1000 + i + k, finalReward: ((i + k) % 7) / 7, agents: [makeAgent('Geneticist', { promptVersion: `p-${runId}` })] }),
    );
    const spans = pair.map((r) => makeSpans(r.id, 12, r.startTime));
    for (const r of pair) store.startRollout({ ...r, status: 'running', endTime: null });
    for (let s = 0; s < 12; s++) for (let k = 0; k < 2; k++) store.writeSpan(spans[k]![s]!);
    for (const r of pair) store.finishRollout(r);
  }
  store.updateRun(runId, { status: 'done', endTime: 5000 });
  await store.close();
}

describe('TraceStore.compact', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let storeDir: string;
  beforeEach(() => {
    ws = tempWorkspace();
    storeDir = join(ws.dir, '.rollout-lab/store');
  });
  afterEach(() => ws.cleanup());

  it('moves finished journals into segments without changing what the store returns', async () => {
    await writeSession(ws.dir, 'run-a', 20, 30_000);
    await writeSession(ws.dir, 'run-b', 10);
    // A writer killed mid-rollout: its interrupted rollout and run must stay interrupted after compaction.
    const child = startChild(['hang', ws.dir, 'run-k', '10', '3']);
    await child.waitFor((l) => l.some((x) => x.startsWith('ready ')));
    await killHard(child);

    const store = await TraceStore.open(ws.dir);
    const before = snapshot(store);
    const journalsBefore = readdirSync(join(storeDir, 'journal')).length;
    const result = await store.compact();
    assert.equal(result.skipped, undefined);
    assert.equal(result.journalsRetired, journalsBefore);
    assert.equal(result.spans, 20 * 12 + 10 * 12 + 3 * 10 + 5);
    assert.ok(result.bytesAfter < result.bytesBefore / 2, `compressed ${result.bytesBefore} -> ${result.bytesAfter}`);
    assert.deepEqual(readdirSync(join(storeDir, 'journal')), []);
    assert.deepEqual(snapshot(store), before);
    assert.equal(store.stats().journals, 0);
    assert.equal((await store.compact()).skipped, 'nothing');
    await store.close();

    const reopened = await TraceStore.open(ws.dir);
    assert.deepEqual(snapshot(reopened), before);
    await reopened.close();
    rmSync(join(storeDir, 'catalog.sqlite'));
    const rebuilt = await TraceStore.open(ws.dir);
    assert.deepEqual(snapshot(rebuilt), before, 'segments alone rebuild the same catalog');
    await rebuilt.close();
  });

  it('leaves a live writer alone and keeps readers opened before it working', async () => {
    await writeSession(ws.dir, 'run-a', 10);
    const live = await TraceStore.open(ws.dir);
    live.startRun(makeRun('run-live'));
    const lr = makeRollout({ runId: 'run-live', status: 'running', endTime: null });
    live.startRollout(lr);
    for (const s of makeSpans(lr.id, 4)) live.writeSpan(s);

    // One reader has read every span (its descriptors are open), the other none yet.
    const early = await TraceStore.open(ws.dir, { readOnly: true });
    const before = snapshot(early);
    const cold = await TraceStore.open(ws.dir, { readOnly: true });
    const untouched = cold.listRollouts({ runId: 'run-a' }).rollouts.at(-1)!.id;

    const compactor = await TraceStore.open(ws.dir);
    const result = await compactor.compact();
    assert.equal(result.journalsRetired, 1, 'only the closed session');
    assert.equal(readdirSync(join(storeDir, 'journal')).length, 1, "the live writer's journal stays");
    await compactor.close();

    // The cold reader's catalog points at the deleted journal: it finds the segment through the saved catalog.
    assert.equal(cold.getSpans(untouched).length, 12);
    assert.deepEqual(snapshot(cold), before);
    await cold.close();
    assert.deepEqual(snapshot(early), before);
    assert.equal(await early.refresh(), true);
    assert.deepEqual(snapshot(early), before);
    assert.equal(early.getRollout(lr.id)?.status, 'running');

    for (const s of makeSpans(lr.id, 4)) live.writeSpan(s);
    live.finishRollout({ ...lr, status: 'succeeded', endTime: lr.startTime + 1 });
    await early.refresh();
    assert.equal(early.getSpans(lr.id).length, 8);
    await early.close();
    await live.close();
  });

  it('recovers from a compaction that crashed before its catalog was saved, or before deleting journals', async () => {
    await writeSession(ws.dir, 'run-a', 10);
    const journals = readdirSync(join(storeDir, 'journal'));
    // Crash after the segment was renamed into place but before the checkpoint: an orphan (here, a bogus one).
    const orphan = join(storeDir, 'segments', '1-deadbeef.seg');
    writeFileSync(orphan, encodeJsonFrame(FrameType.header, { v: JOURNAL_FORMAT_VERSION, kind: 'segment', supersedes: journals, createdAt: 1 }));
    const store = await TraceStore.open(ws.dir);
    const before = snapshot(store);
    assert.equal(store.listRollouts().total, 10, 'the journals are still the truth');
    // A stale lock of a dead compactor does not block.
    writeFileSync(join(storeDir, 'compact.lock'), `999999999 ${hostname()}\n`);
    const result = await store.compact();
    assert.equal(result.journalsRetired, 1);
    assert.ok(!readdirSync(join(storeDir, 'segments')).includes('1-deadbeef.seg'), 'the orphan was removed');
    assert.deepEqual(snapshot(store), before);
    await store.close();

    // Crash after the checkpoint but before the journals were deleted: they come back, and must not count twice.
    mkdirSync(join(ws.dir, 'saved'));
    await writeSession(ws.dir, 'run-b', 4);
    const second = readdirSync(join(storeDir, 'journal'));
    for (const j of second) copyFileSync(join(storeDir, 'journal', j), join(ws.dir, 'saved', j));
    const s2 = await TraceStore.open(ws.dir);
    const before2 = snapshot(s2);
    await s2.compact();
    for (const j of second) copyFileSync(join(ws.dir, 'saved', j), join(storeDir, 'journal', j));
    await s2.close();
    const s3 = await TraceStore.open(ws.dir);
    assert.deepEqual(snapshot(s3), before2);
    await s3.compact();
    assert.deepEqual(readdirSync(join(storeDir, 'journal')), [], 'the leftover journals were deleted');
    assert.deepEqual(snapshot(s3), before2);
    await s3.close();
  });

  it('a span written again with a higher revision (a merged model call) is the one copy read, wherever compaction moved the first', async () => {
    const first = await TraceStore.open(ws.dir);
    first.startRun(makeRun('run-m'));
    const r = makeRollout({ runId: 'run-m', taskId: 't0', sample: 0, startTime: 1000 });
    const spans = makeSpans(r.id, 4, r.startTime);
    const call = spans.find((sp) => sp.kind === 'llm')!;
    first.startRollout({ ...r, status: 'running', endTime: null });
    for (const sp of spans) first.writeSpan(sp);
    first.finishRollout(r);
    await first.close();
    // A later session rewrites the call (a framework's late span merged into it): its journal stays open while the first is compacted.
    const store = await TraceStore.open(ws.dir);
    store.writeSpan({ ...call, name: 'ChatOpenAI', attributes: { ...call.attributes, 'rollout_lab.span.revision': 1 } });
    const read = (): SpanRecord[] => store.getSpans(r.id).filter((sp) => sp.spanId === call.spanId);
    assert.deepEqual(read().map((sp) => sp.name), ['ChatOpenAI']);
    await store.compact();
    assert.deepEqual(read().map((sp) => sp.name), ['ChatOpenAI'], 'after compaction too');
    assert.equal(store.getSpans(r.id).length, spans.length);
    await store.close();
    const again = await TraceStore.open(ws.dir, { readOnly: true });
    assert.deepEqual(again.getSpans(r.id).filter((sp) => sp.spanId === call.spanId).map((sp) => sp.name), ['ChatOpenAI']);
    await again.close();
  });

  it('lets the store keep writing while it compacts, and close waits for it', async () => {
    await writeSession(ws.dir, 'run-a', 40);
    const store = await TraceStore.open(ws.dir);
    const before = snapshot(store) as { rollouts: unknown[] };
    const compacting = store.compact();
    const second = store.compact();
    const r = makeRollout({ runId: 'run-a', taskId: 'during' });
    store.startRollout(r);
    for (const s of makeSpans(r.id, 6)) store.writeSpan(s);
    store.finishRollout(r);
    await store.close();
    assert.equal((await compacting).journalsRetired, 1);
    assert.deepEqual(await second, await compacting, 'one compaction at a time: a second call joins the first');
    const after = await TraceStore.open(ws.dir);
    assert.equal(after.listRollouts().total, before.rollouts.length + 1);
    assert.equal(after.getSpans(r.id).length, 6);
    assert.equal(after.stats().journals, 1, 'only the journal written during compaction');
    await after.close();
  });

  it('does not run while another live process holds the lock', async () => {
    await writeSession(ws.dir, 'run-a', 2);
    writeFileSync(join(storeDir, 'compact.lock'), `${process.ppid} ${hostname()}\n`);
    const store = await TraceStore.open(ws.dir);
    assert.equal((await store.compact()).skipped, 'busy');
    assert.equal(readdirSync(join(storeDir, 'journal')).length, 1);
    await store.close();
  });
});
