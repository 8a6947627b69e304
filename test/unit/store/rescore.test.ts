import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SCHEMA_VERSION, schemaVersionOf } from '../../../src/core/store/catalogSchema';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RescoreRecord } from '../../../src/core/store/types';
import { makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

const TRACE_STORE = resolve(__dirname, '../../../src/core/store/traceStore.ts');
const W1 = { novelty: { weight: 1 }, clarity: { weight: 0 } };
const W2 = { novelty: { weight: 0 }, clarity: { weight: 1 } };

/** Three finished rollouts (rewards 0.2, 0.5, 0.8), written by a store that is then closed. */
async function fill(dir: string): Promise<{ ids: string[] }> {
  const store = await TraceStore.open(dir);
  store.startRun(makeRun('run-a'));
  const ids: string[] = [];
  for (const [i, reward] of [0.2, 0.5, 0.8].entries()) {
    const r = makeRollout({ runId: 'run-a', taskId: `t${i}`, startTime: 1000 + i, finalReward: reward });
    store.startRollout({ ...r, status: 'running', endTime: null, finalReward: null });
    for (const s of makeSpans(r.id, 4, r.startTime)) store.writeSpan(s);
    store.finishRollout(r);
    ids.push(r.id);
  }
  await store.close();
  return { ids };
}

function rescoreOf(id: string, at: number, criteria: RescoreRecord['criteria'], rewards: Array<[string, number | null, number]>, note?: string): RescoreRecord {
  const r: RescoreRecord = { id, at, criteria, rewards: rewards.map(([rolloutId, before, after]) => ({ rolloutId, before, after })) };
  if (note !== undefined) r.note = note;
  return r;
}

/** All a user can read about rewards, for before/after comparisons. */
function rewards(store: TraceStore): unknown {
  const rollouts = store.listRollouts({ status: 'succeeded', sort: 'finalReward', order: 'desc' }).rollouts;
  return {
    order: rollouts.map((r) => [r.id, r.finalReward]),
    history: rollouts.map((r) => store.rewardHistory(r.id)),
    rescores: store.listRescores(),
    mean: store.aggregateByAgent({ agent: 'Supervisor' }).map((a) => a.meanReward),
  };
}

function journalBytes(dir: string): number {
  const jd = join(dir, '.rollout-lab/store/journal');
  return readdirSync(jd).reduce((n, f) => n + statSync(join(jd, f)).size, 0);
}

/** Runs code in a separate Node process against the store (CommonJS, with `TraceStore` in scope). */
function inChild(code: string): Promise<{ code: number | null; stderr: string }> {
  const script = `const { TraceStore } = require(${JSON.stringify(TRACE_STORE)});\n(async () => {\n${code}\n})().catch((e) => { console.error(e); process.exit(1); });`;
  const proc = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((res) => proc.on('exit', (c) => res({ code: c, stderr })));
}

describe('TraceStore re-scores', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let catalogPath: string;
  beforeEach(() => {
    ws = tempWorkspace();
    catalogPath = join(ws.dir, '.rollout-lab/store/catalog.sqlite');
  });
  afterEach(() => ws.cleanup());

  it('puts the new rewards in force for every query and keeps the old ones as history', async () => {
    const { ids } = await fill(ws.dir);
    const [low, mid, high] = ids as [string, string, string];
    const store = await TraceStore.open(ws.dir);
    assert.deepEqual(store.listRescores(), []);
    assert.deepEqual(store.rewardHistory(mid), [{ rolloutId: mid, rescoreId: null, at: 1501, reward: 0.5, criteria: null }]);

    store.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[low, 0.2, 0.9], [high, 0.8, 0.1]], 'novelty only'));
    assert.equal(store.getRollout(low)!.finalReward, 0.9);
    assert.equal(store.getRollout(mid)!.finalReward, 0.5, 'a rollout the re-score leaves out keeps its reward');
    assert.equal(store.getRollout(high)!.finalReward, 0.1);
    assert.deepEqual(
      store.listRollouts({ sort: 'finalReward', order: 'desc' }).rollouts.map((r) => r.id).filter((id) => ids.includes(id)),
      [low, mid, high],
      'sorting uses the new rewards',
    );
    assert.deepEqual(store.listRollouts({ minReward: 0.85 }).rollouts.map((r) => r.id), [low], 'filters use the new rewards');
    const mean = store.aggregateByAgent({ agent: 'Geneticist' })[0]!.meanReward!;
    assert.ok(Math.abs(mean - (0.9 + 0.5 + 0.1) / 3) < 1e-12, `aggregates use the new rewards (${mean})`);

    store.applyRescore(rescoreOf('rs_000000000002', 6000, W2, [[low, 0.9, 0.4]]));
    assert.equal(store.getRollout(low)!.finalReward, 0.4);
    assert.deepEqual(store.rewardHistory(low), [
      { rolloutId: low, rescoreId: null, at: 1500, reward: 0.2, criteria: null },
      { rolloutId: low, rescoreId: 'rs_000000000001', at: 5000, reward: 0.9, criteria: W1 },
      { rolloutId: low, rescoreId: 'rs_000000000002', at: 6000, reward: 0.4, criteria: W2 },
    ]);
    assert.deepEqual(store.listRescores(), [
      { id: 'rs_000000000002', at: 6000, criteria: W2, rollouts: 1 },
      { id: 'rs_000000000001', at: 5000, criteria: W1, note: 'novelty only', rollouts: 2 },
    ]);
    assert.deepEqual(store.rewardHistory('f'.repeat(32)), [], 'no history for a rollout the store does not have');
    await store.close();
  });

  it('refuses a re-score of a rollout that is not stored, or still running, and writes nothing', async () => {
    const { ids } = await fill(ws.dir);
    const store = await TraceStore.open(ws.dir);
    const running = makeRollout({ runId: 'run-a', taskId: 't9', startTime: 2000, status: 'running', endTime: null, finalReward: null }).id;
    store.startRollout(makeRollout({ id: running, runId: 'run-a', taskId: 't9', startTime: 2000, status: 'running', endTime: null, finalReward: null }));
    store.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[ids[0]!, 0.2, 0.3]]));
    const before = rewards(store);
    const bytes = journalBytes(ws.dir);
    const unknown = 'a'.repeat(32);
    assert.throws(
      () => store.applyRescore(rescoreOf('rs_000000000002', 6000, W1, [[ids[1]!, 0.5, 0.6], [unknown, 0.1, 0.2]])),
      (e: Error) => e.message.includes(unknown) && /not in the trace store/.test(e.message),
    );
    assert.throws(() => store.applyRescore(rescoreOf('rs_000000000003', 6000, W1, [[running, null, 0.6]])), /still running/);
    assert.throws(() => store.applyRescore(rescoreOf('rs_000000000001', 7000, W1, [[ids[1]!, 0.5, 0.6]])), /already in the trace store/);
    assert.throws(() => store.applyRescore(rescoreOf('rs_000000000004', 7000, W1, [[ids[1]!, 0.5, Number.NaN]])), /not a finite number/);
    assert.throws(() => store.applyRescore(rescoreOf('rs_000000000005', 7000, W1, [])), /no rollout/);
    assert.throws(() => store.applyRescore(rescoreOf('rs_000000000006', 7000, W1, [[ids[1]!, 0.5, 0.6], [ids[1]!, 0.5, 0.7]])), /twice/);
    assert.deepEqual(rewards(store), before);
    assert.equal(journalBytes(ws.dir), bytes, 'no frame was appended');
    await store.close();
    const again = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(again), before);
    await again.close();

    const viewer = await TraceStore.open(ws.dir, { readOnly: true });
    assert.throws(() => viewer.applyRescore(rescoreOf('rs_000000000007', 8000, W1, [[ids[1]!, 0.5, 0.6]])), /read-only/);
    await viewer.close();
  });

  it('survives a reopen, a catalog rebuilt from the journals, and compaction', async () => {
    const { ids } = await fill(ws.dir);
    const store = await TraceStore.open(ws.dir);
    store.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[ids[0]!, 0.2, 0.9], [ids[2]!, 0.8, 0.1]], 'first'));
    store.applyRescore(rescoreOf('rs_000000000002', 6000, W2, [[ids[0]!, 0.9, 0.4]]));
    const expected = rewards(store);
    await store.close();

    const reopened = await TraceStore.open(ws.dir);
    assert.equal(reopened.openedFrom, 'loaded');
    assert.deepEqual(rewards(reopened), expected);
    await reopened.close();

    rmSync(catalogPath);
    const rebuilt = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(rebuilt), expected, 'the journals alone give the same rewards and history');
    const result = await rebuilt.compact();
    assert.ok(result.journalsRetired >= 2, `journals retired: ${result.journalsRetired}`);
    assert.deepEqual(readdirSync(join(ws.dir, '.rollout-lab/store/journal')), []);
    assert.deepEqual(rewards(rebuilt), expected);
    await rebuilt.close();

    const afterCompaction = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(afterCompaction), expected, 'reopened after compaction');
    await afterCompaction.close();
    rmSync(catalogPath);
    const fromSegments = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(fromSegments), expected, 'segments alone carry the re-scores');
    await fromSegments.close();
  });

  it('holds when the re-score is read before its rollout (segment first, journal after)', async () => {
    // A writer that stays open: its journal cannot be compacted, so a rebuild reads it after the segment.
    const writer = await TraceStore.open(ws.dir);
    writer.startRun(makeRun('run-b'));
    const r = makeRollout({ runId: 'run-b', finalReward: 0.3 });
    writer.startRollout({ ...r, status: 'running', endTime: null, finalReward: null });
    writer.finishRollout(r);
    writer.flush();

    const rescorer = await TraceStore.open(ws.dir);
    rescorer.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[r.id, 0.3, 0.7]]));
    await rescorer.close();
    const compactor = await TraceStore.open(ws.dir);
    const result = await compactor.compact();
    assert.equal(result.journalsRetired, 1, 'only the re-scorer’s journal moved');
    await compactor.close();

    rmSync(catalogPath);
    const rebuilt = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(rebuilt.getRollout(r.id)!.finalReward, 0.7);
    assert.deepEqual(
      rebuilt.rewardHistory(r.id).map((h) => [h.rescoreId, h.reward]),
      [
        [null, 0.3],
        ['rs_000000000001', 0.7],
      ],
    );
    await rebuilt.close();
    await writer.close();
  });

  it('another store instance in the same process sees a re-score after refresh()', async () => {
    const { ids } = await fill(ws.dir);
    const viewer = await TraceStore.open(ws.dir, { readOnly: true });
    const writer = await TraceStore.open(ws.dir);
    writer.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[ids[1]!, 0.5, 0.05]]));
    assert.equal(viewer.getRollout(ids[1]!)!.finalReward, 0.5, 'not yet refreshed');
    assert.equal(await viewer.refresh(), true);
    assert.equal(viewer.getRollout(ids[1]!)!.finalReward, 0.05);
    assert.deepEqual(viewer.listRescores(), writer.listRescores());
    assert.deepEqual(viewer.rewardHistory(ids[1]!), writer.rewardHistory(ids[1]!));
    await writer.close();
    await viewer.close();
  });

  it('keeps both of two processes re-scoring at once; the later one (then the larger id) is in force', async () => {
    const { ids } = await fill(ws.dir);
    const [a, b] = ids as [string, string];
    const viewer = await TraceStore.open(ws.dir, { readOnly: true });
    const apply = (id: string, at: number, rewards: Array<[string, number, number]>): string =>
      `const s = await TraceStore.open(${JSON.stringify(ws.dir)});
       s.applyRescore(${JSON.stringify(rescoreOf(id, at, W1, rewards))});
       await s.close();`;
    const results = await Promise.all([
      inChild(apply('rs_00000000000b', 7000, [[a, 0.2, 0.61], [b, 0.5, 0.71]])),
      inChild(apply('rs_00000000000a', 7000, [[a, 0.2, 0.62]])),
      inChild(apply('rs_000000000009', 8000, [[b, 0.5, 0.72]])),
    ]);
    for (const r of results) assert.equal(r.code, 0, r.stderr);

    await viewer.refresh();
    assert.deepEqual(viewer.listRescores().map((r) => r.id), ['rs_000000000009', 'rs_00000000000b', 'rs_00000000000a']);
    assert.equal(viewer.getRollout(a)!.finalReward, 0.61, 'same time: the larger id wins');
    assert.equal(viewer.getRollout(b)!.finalReward, 0.72, 'the later re-score wins');
    assert.deepEqual(
      viewer.rewardHistory(a).map((h) => h.rescoreId),
      [null, 'rs_00000000000a', 'rs_00000000000b'],
    );
    const seen = rewards(viewer);
    await viewer.close();

    rmSync(catalogPath);
    const rebuilt = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(rebuilt), seen, 'a rebuild gives the same order whatever journal it reads first');
    await rebuilt.compact();
    await rebuilt.close();
    rmSync(catalogPath);
    const fromSegments = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(fromSegments), seen);
    await fromSegments.close();
  });

  it('migrates a catalog written before re-scores existed', async () => {
    const { ids } = await fill(ws.dir);
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    db.run(`DROP TABLE reward_revisions; DROP TABLE rescores; ALTER TABLE rollouts DROP COLUMN original_reward; UPDATE meta SET value = '2' WHERE key = 'schema_version'`);
    writeFileSync(catalogPath, db.export());
    db.close();

    const store = await TraceStore.open(ws.dir);
    assert.equal(store.openedFrom, 'migrated');
    assert.deepEqual(store.listRescores(), []);
    assert.deepEqual(
      store.rewardHistory(ids[2]!).map((h) => [h.rescoreId, h.reward]),
      [[null, 0.8]],
      'the reward a rollout ran with was carried over',
    );
    store.applyRescore(rescoreOf('rs_000000000001', 5000, W1, [[ids[2]!, 0.8, 0.35]]));
    const expected = rewards(store);
    await store.close();

    const stored = new SQL.Database(readFileSync(catalogPath));
    assert.equal(schemaVersionOf(stored), SCHEMA_VERSION, 'the migrated catalog was saved');
    stored.close();
    const reopened = await TraceStore.open(ws.dir);
    assert.equal(reopened.openedFrom, 'loaded');
    assert.deepEqual(rewards(reopened), expected);
    await reopened.close();
    rmSync(catalogPath);
    const rebuilt = await TraceStore.open(ws.dir);
    assert.deepEqual(rewards(rebuilt), expected, 'a catalog rebuilt from the journals agrees with the migrated one');
    await rebuilt.close();
  });
});
