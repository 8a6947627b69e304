import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import { killHard, startChild, type Child } from './helpers/childProcess';
import { tempWorkspace } from './helpers/storeFixtures';

const SPANS = 24;

function finishedIds(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith('finished ')).map((l) => l.slice('finished '.length));
}

/** Every stored rollout that claims success has its whole, intact span tree. */
function assertConsistent(store: TraceStore): void {
  for (const r of store.listRollouts().rollouts) {
    assert.notEqual(r.status, 'running', `rollout ${r.id} still running after its writer died`);
    const spans = store.getSpans(r.id);
    if (r.status === 'succeeded') {
      assert.equal(spans.length, SPANS, `succeeded rollout ${r.id} has all its spans`);
      assert.ok(spans.every((s) => s.traceId === r.id));
      assert.equal(new Set(spans.map((s) => s.spanId)).size, SPANS);
    } else {
      assert.equal(r.error, 'interrupted');
    }
  }
}

describe('TraceStore: a writer killed with SIGKILL', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let child: Child | null = null;
  beforeEach(() => {
    ws = tempWorkspace();
  });
  afterEach(async () => {
    if (child && child.proc.exitCode === null && child.proc.signalCode === null) await killHard(child);
    child = null;
    ws.cleanup();
  });

  it('keeps every rollout it finished, fails the one in flight, and resume redoes it', async () => {
    child = startChild(['hang', ws.dir, 'run-k', String(SPANS), '12']);
    await child.waitFor((l) => l.some((x) => x.startsWith('ready ')));
    const inflight = child.lines.find((l) => l.startsWith('ready '))!.slice('ready '.length);
    const finished = finishedIds(child.lines);
    await killHard(child);

    const store = await TraceStore.open(ws.dir);
    assert.equal(store.listRollouts({ runId: 'run-k' }).total, 13);
    for (const id of finished) assert.equal(store.getRollout(id)?.status, 'succeeded');
    const r = store.getRollout(inflight)!;
    assert.equal(r.status, 'failed');
    assert.equal(r.error, 'interrupted');
    assert.equal(r.failure, 'interrupted', 'its category says why it failed');
    assert.equal(store.getSpans(inflight).length, SPANS / 2, 'the spans it wrote before dying are readable');
    assert.equal(store.getRun('run-k')?.status, 'interrupted');
    const keys = store.finishedKeys('run-k');
    assert.equal(keys.size, 12);
    assert.ok(!keys.has(`${r.taskId}#${r.sample}`), 'resume redoes the interrupted rollout');
    assertConsistent(store);
    await store.close();
  });

  it('survives a kill at an arbitrary point of a write loop, and a torn or garbage journal tail', async () => {
    child = startChild(['loop', ws.dir, 'run-k', String(SPANS)]);
    await child.waitFor((l) => finishedIds(l).length >= 40);
    await killHard(child);
    const finished = finishedIds(child.lines);

    const reader = await TraceStore.open(ws.dir, { readOnly: true });
    for (const id of finished) assert.equal(reader.getRollout(id)?.status, 'succeeded', `finished rollout ${id} is stored`);
    assert.ok(reader.listRollouts().total >= finished.length);
    assertConsistent(reader);
    await reader.close();

    // As if the kill had torn the last frame mid-write, and the disk then held garbage after it.
    const dir = join(ws.dir, '.rollout-lab/store/journal');
    const last = join(dir, readdirSync(dir).sort().at(-1)!);
    truncateSync(last, Math.max(0, statSync(last).size - 37));
    appendFileSync(last, Buffer.alloc(3000, 0xab));
    const reopened = await TraceStore.open(ws.dir);
    assertConsistent(reopened);
    const kept = finished.filter((id) => reopened.getRollout(id)?.status === 'succeeded');
    assert.ok(kept.length >= finished.length - 1, 'at most the rollout whose frame was torn is lost');
    await reopened.close();
  });
});
