import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { makeAgent, makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

describe('TraceStore: write and read', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let store: TraceStore;

  beforeEach(async () => {
    ws = tempWorkspace();
    store = await TraceStore.open(ws.dir);
  });
  afterEach(async () => {
    await store.close();
    ws.cleanup();
  });

  /** Writes a finished rollout with its spans, as the runner does. */
  function put(r: RolloutRecord, spans = 5): RolloutRecord {
    store.startRollout({ ...r, status: 'running', endTime: null, finalReward: null, agents: [] });
    for (const s of makeSpans(r.id, spans, r.startTime)) store.writeSpan(s);
    store.finishRollout(r);
    return r;
  }

  it('round-trips runs, rollouts and the span tree, and keeps the store under .rollout-lab/store', () => {
    assert.ok(store.dir.endsWith('/.rollout-lab/store'));
    store.startRun(makeRun('run-a'));
    const r = makeRollout({ runId: 'run-a', finalReward: 0.84 });
    const spans = makeSpans(r.id, 40);
    store.startRollout({ ...r, status: 'running', endTime: null });
    // Children end before their parents: the store must not depend on write order.
    for (const s of [...spans].reverse()) store.writeSpan(s);
    store.finishRollout(r);

    assert.deepEqual(store.getRollout(r.id), { ...r, spanCount: 40 });
    assert.deepEqual(store.getSpans(r.id), spans);
    assert.deepEqual(store.getRun('run-a'), makeRun('run-a'));
    assert.deepEqual(store.listRuns().map((x) => x.id), ['run-a']);
    assert.equal(store.getRollout('0'.repeat(32)), null);
    assert.deepEqual(store.getSpans('0'.repeat(32)), []);
    assert.deepEqual(store.stats().rollouts, 1);
    assert.deepEqual(store.stats().spans, 40);
    assert.ok(readdirSync(`${store.dir}/journal`).length >= 1);
  });

  it('shows a running rollout and the spans it has so far', () => {
    store.startRun(makeRun('run-a'));
    const r = makeRollout({ runId: 'run-a', status: 'running', endTime: null, finalReward: null });
    store.startRollout(r);
    const spans = makeSpans(r.id, 10);
    for (const s of spans.slice(0, 4)) store.writeSpan(s);
    assert.equal(store.getRollout(r.id)?.status, 'running');
    assert.equal(store.getRollout(r.id)?.spanCount, 4);
    assert.equal(store.getSpans(r.id).length, 4);
    for (const s of spans.slice(4)) store.writeSpan(s);
    store.finishRollout({ ...r, status: 'succeeded', endTime: r.startTime + 10 });
    assert.deepEqual(store.getSpans(r.id), spans);
  });

  it('filters, sorts and pages rollouts, with the total before paging', () => {
    store.startRun(makeRun('run-a'));
    store.startRun(makeRun('run-b'));
    const made: RolloutRecord[] = [];
    for (let i = 0; i < 12; i++) {
      made.push(
        put(
          makeRollout({
            runId: i < 8 ? 'run-a' : 'run-b',
            taskId: `t${i % 4}`,
            sample: i,
            split: i % 3 === 0 ? 'val' : 'train',
            status: i === 5 ? 'failed' : i === 6 ? 'cancelled' : 'succeeded',
            finalReward: i === 5 ? null : i / 10,
            startTime: 1000 + i * 10,
            endTime: 1000 + i * 10 + (i % 4) * 100,
            agents: [makeAgent('Geneticist', { promptVersion: i % 2 ? 'g-odd' : 'g-even' }), makeAgent('Supervisor', { promptVersion: 's1' })],
          }),
        ),
      );
    }
    const ids = (q: Parameters<TraceStore['listRollouts']>[0]): string[] => store.listRollouts(q).rollouts.map((r) => r.id);
    const expect = (pred: (r: RolloutRecord, i: number) => boolean): string[] =>
      made.filter(pred).sort((x, y) => y.startTime - x.startTime).map((r) => r.id);

    assert.equal(store.listRollouts().total, 12);
    assert.deepEqual(ids({}), expect(() => true), 'default: newest first');
    assert.deepEqual(ids({ runId: 'run-b' }), expect((r) => r.runId === 'run-b'));
    assert.deepEqual(ids({ status: 'failed' }), [made[5]!.id]);
    assert.deepEqual(ids({ status: ['failed', 'cancelled'] }), [made[6]!.id, made[5]!.id]);
    assert.deepEqual(ids({ split: 'val' }), expect((r) => r.split === 'val'));
    assert.deepEqual(ids({ minReward: 0.3, maxReward: 0.7 }), expect((r) => r.finalReward !== null && r.finalReward >= 0.3 && r.finalReward <= 0.7));
    assert.deepEqual(ids({ taskId: 't1' }), expect((r) => r.taskId === 't1'));
    assert.deepEqual(ids({ promptVersion: 'g-odd' }), expect((_r, i) => i % 2 === 1));
    assert.deepEqual(ids({ promptVersion: 's1', agent: 'Geneticist' }), [], 'the version must belong to that agent');
    assert.deepEqual(ids({ promptVersion: 's1', agent: 'Supervisor' }).length, 12);
    assert.deepEqual(ids({ agent: 'PeerReviewer' }), []);

    const byReward = store.listRollouts({ sort: 'finalReward', order: 'asc' }).rollouts;
    assert.deepEqual(
      byReward.map((r) => r.finalReward),
      [0, 0.1, 0.2, 0.3, 0.4, 0.6, 0.7, 0.8, 0.9, 1, 1.1, null],
      'ascending, no reward last',
    );
    const byDuration = store.listRollouts({ sort: 'duration', order: 'desc' }).rollouts.map((r) => r.endTime! - r.startTime);
    assert.deepEqual(byDuration, [...byDuration].sort((x, y) => y - x));

    const page1 = store.listRollouts({ runId: 'run-a', sort: 'startTime', order: 'asc', limit: 3, offset: 0 });
    const page2 = store.listRollouts({ runId: 'run-a', sort: 'startTime', order: 'asc', limit: 3, offset: 3 });
    const page3 = store.listRollouts({ runId: 'run-a', sort: 'startTime', order: 'asc', limit: 3, offset: 6 });
    assert.equal(page1.total, 8);
    assert.equal(page3.total, 8);
    assert.deepEqual(
      [...page1.rollouts, ...page2.rollouts, ...page3.rollouts].map((r) => r.id),
      made.slice(0, 8).map((r) => r.id),
    );
    assert.deepEqual(page1.rollouts[0], { ...made[0]!, spanCount: 5 });
  });

  it('aggregates per agent and prompt version over rollouts that ended', () => {
    store.startRun(makeRun('run-a'));
    store.startRun(makeRun('run-b'));
    put(makeRollout({ runId: 'run-a', finalReward: 0.2, agents: [makeAgent('Geneticist', { promptVersion: 'g1', latencyMs: 100, llmCalls: 1 })] }));
    put(makeRollout({ runId: 'run-a', finalReward: 0.6, agents: [makeAgent('Geneticist', { promptVersion: 'g1', latencyMs: 300, llmCalls: 3 })] }));
    put(makeRollout({ runId: 'run-a', finalReward: 0.9, agents: [makeAgent('Geneticist', { promptVersion: 'g2' }), makeAgent('Supervisor', { promptVersion: null })] }));
    put(makeRollout({ runId: 'run-b', finalReward: null, agents: [makeAgent('Geneticist', { promptVersion: 'g2', errors: 2 })] }));
    store.startRollout(makeRollout({ runId: 'run-a', status: 'running', agents: [makeAgent('Geneticist', { promptVersion: 'g1' })] }));

    const all = store.aggregateByAgent();
    assert.deepEqual(
      all.map((a) => [a.agent, a.promptVersion, a.rollouts]),
      [
        ['Geneticist', 'g1', 2],
        ['Geneticist', 'g2', 2],
        ['Supervisor', null, 1],
      ],
    );
    const g1 = all[0]!;
    assert.ok(Math.abs(g1.meanReward! - 0.4) < 1e-9);
    assert.equal(g1.llmCalls, 4);
    assert.equal(g1.meanLatencyMs, 200);
    assert.equal(g1.inputTokens, 200);
    assert.equal(all[1]!.meanReward, 0.9, 'a rollout without reward does not count toward the mean');
    assert.equal(all[1]!.errors, 2);
    assert.deepEqual(
      store.aggregateByAgent({ runId: 'run-b' }).map((a) => [a.agent, a.promptVersion]),
      [['Geneticist', 'g2']],
    );
    assert.deepEqual(
      store.aggregateByAgent({ agent: 'Supervisor' }).map((a) => a.agent),
      ['Supervisor'],
    );
  });

  it('stores each prompt version once, by hash', () => {
    store.putPromptVersion({ hash: 'h1', agent: 'Geneticist', text: 'You are a geneticist.', firstSeen: 5 });
    const journalBytes = store.stats().bytes;
    store.putPromptVersion({ hash: 'h1', agent: 'Geneticist', text: 'You are a geneticist.', firstSeen: 9 });
    assert.equal(store.stats().bytes, journalBytes, 'a known hash writes nothing');
    store.putPromptVersion({ hash: 'h2', agent: 'Geneticist', text: 'You are a careful geneticist.', firstSeen: 7 });
    store.putPromptVersion({ hash: 'h3', agent: 'Supervisor', text: 'Pick one.', firstSeen: 6 });
    assert.deepEqual(store.getPromptVersion('h1'), { hash: 'h1', agent: 'Geneticist', text: 'You are a geneticist.', firstSeen: 5 });
    assert.deepEqual(store.listPromptVersions('Geneticist').map((p) => p.hash), ['h1', 'h2']);
    assert.deepEqual(store.listPromptVersions().map((p) => p.hash), ['h1', 'h3', 'h2']);
    assert.equal(store.getPromptVersion('nope'), null);
  });

  it('updates runs and lists finished keys for resume', () => {
    store.startRun(makeRun('run-a'));
    store.updateRun('run-a', { status: 'done', endTime: 2000 });
    assert.deepEqual(store.getRun('run-a'), makeRun('run-a', { status: 'done', endTime: 2000 }));
    assert.throws(() => store.updateRun('nope', { status: 'done' }), /run nope is not in the trace store/);
    put(makeRollout({ runId: 'run-a', taskId: 't1', sample: 0, status: 'succeeded' }));
    put(makeRollout({ runId: 'run-a', taskId: 't1', sample: 1, status: 'failed' }));
    put(makeRollout({ runId: 'run-a', taskId: 't2', sample: 0, status: 'cancelled' }));
    store.startRollout(makeRollout({ runId: 'run-a', taskId: 't2', sample: 1, status: 'running' }));
    assert.deepEqual([...store.finishedKeys('run-a')].sort(), ['t1#0', 't1#1']);
    assert.deepEqual([...store.finishedKeys('run-b')], []);
  });

  it('rejects writes when read-only and calls after close', async () => {
    store.startRun(makeRun('run-a'));
    const ro = await TraceStore.open(ws.dir, { readOnly: true });
    assert.throws(() => ro.startRun(makeRun('run-b')), /read-only/);
    assert.throws(() => ro.writeSpan(makeSpans('a'.repeat(32), 1)[0]!), /read-only/);
    assert.deepEqual(ro.listRuns().map((r) => r.id), ['run-a'], 'sees what the writer wrote so far');
    await ro.close();
    await assert.rejects(ro.refresh(), /closed/);
    assert.throws(() => store.writeSpan({ ...makeSpans('a'.repeat(32), 1)[0]!, traceId: 'not-hex' }), /32 lowercase hex/);
  });
});
