import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import { killHard, startChild, type Child } from './helpers/childProcess';
import { makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

const SPANS = 20;

function finishedIds(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith('finished ')).map((l) => l.slice('finished '.length));
}

describe('TraceStore: several processes on one workspace', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  const children: Child[] = [];
  beforeEach(() => {
    ws = tempWorkspace();
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.proc.exitCode === null && c.proc.signalCode === null) await killHard(c);
    ws.cleanup();
  });

  it('loses nothing when two processes write at once, and a reader sees their writes after refresh()', async () => {
    const reader = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(reader.listRollouts().total, 0);
    const a = startChild(['write', ws.dir, 'run-a', String(SPANS), '60']);
    const b = startChild(['write', ws.dir, 'run-b', String(SPANS), '60']);
    children.push(a, b);

    // While both write (and checkpoint their catalogs over each other's), the reader follows along.
    await a.waitFor((l) => finishedIds(l).length >= 10);
    const seenId = finishedIds(a.lines)[0]!;
    assert.equal(await reader.refresh(), true);
    assert.equal(reader.getRollout(seenId)?.status, 'succeeded');
    assert.equal(reader.getSpans(seenId).length, SPANS);

    const [codeA, codeB] = await Promise.all([a.exited, b.exited]);
    assert.deepEqual([codeA, codeB], [0, 0]);
    const ids = [...finishedIds(a.lines), ...finishedIds(b.lines)];
    assert.equal(ids.length, 120);

    await reader.refresh();
    assert.equal(await reader.refresh(), false, 'nothing changed since the last refresh');
    assert.equal(reader.listRollouts().total, 120);
    for (const id of ids) {
      assert.equal(reader.getRollout(id)?.status, 'succeeded');
      assert.equal(reader.getSpans(id).length, SPANS);
    }
    assert.equal(reader.getRun('run-a')?.status, 'done');
    assert.equal(reader.getRun('run-b')?.status, 'done');
    await reader.close();

    // The catalog on disk was written by whichever process checkpointed last; with the journals it holds everything.
    const fresh = await TraceStore.open(ws.dir);
    assert.equal(fresh.listRollouts().total, 120);
    assert.equal(fresh.stats().spans, 120 * SPANS);
    await fresh.close();
  });

  it('shows another process its running rollout live, and its end', async () => {
    const writer = await TraceStore.open(ws.dir);
    writer.startRun(makeRun('run-live'));
    const r = makeRollout({ runId: 'run-live', status: 'running', endTime: null, finalReward: null });
    writer.startRollout(r);
    const spans = makeSpans(r.id, SPANS);
    for (const s of spans.slice(0, 5)) writer.writeSpan(s);

    const watcher = startChild(['watch', ws.dir, r.id]);
    children.push(watcher);
    const other = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(other.getRollout(r.id)?.status, 'running', 'a live writer in another store is not taken for dead');
    assert.equal(other.getSpans(r.id).length, 5);
    for (const s of spans.slice(5)) writer.writeSpan(s);
    assert.equal(await other.refresh(), true);
    assert.equal(other.getSpans(r.id).length, SPANS);
    writer.finishRollout({ ...r, status: 'succeeded', endTime: r.startTime + 1, finalReward: 1 });
    await watcher.waitFor((l) => l.some((x) => x.startsWith('seen ')));
    assert.equal(watcher.lines.find((x) => x.startsWith('seen ')), `seen succeeded ${SPANS}`);
    await other.refresh();
    assert.equal(other.getRollout(r.id)?.finalReward, 1);
    await other.close();
    await writer.close();
  });
});
