import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SCHEMA_VERSION, schemaVersionOf } from '../../../src/core/store/catalogSchema';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

/*
 * Why a rollout failed, the custom reward's breakdown and the truncation
 * counts are columns of the catalog (schema 5) and fields of the journaled
 * rollout record: they must come back the same from the catalog, from the
 * journals, and from compacted segments, and an older catalog must migrate.
 */

function writeRollouts(store: TraceStore): RolloutRecord[] {
  store.startRun(makeRun('run-f'));
  const made = [
    makeRollout({ runId: 'run-f', taskId: 'ok', finalReward: 0.8, rewardBreakdown: { execution_match: 1, valid_sql: 1 }, truncatedAnswers: 1 }),
    makeRollout({ runId: 'run-f', taskId: 'empty', status: 'failed', failure: 'no_output', finalReward: 0, rewardBreakdown: { execution_match: 0, valid_sql: 0 } }),
    makeRollout({ runId: 'run-f', taskId: 'cut', status: 'failed', failure: 'truncated', finalReward: 0, truncatedAnswers: 2, truncatedPrompts: 1 }),
    makeRollout({ runId: 'run-f', taskId: 'slow', status: 'failed', failure: 'timeout', finalReward: null }),
  ];
  for (const r of made) {
    store.startRollout({ ...r, status: 'running', failure: null, endTime: null });
    for (const s of makeSpans(r.id, 3)) store.writeSpan(s);
    store.finishRollout(r);
  }
  return made;
}

const byTask = (store: TraceStore): Record<string, RolloutRecord> => Object.fromEntries(store.listRollouts({ runId: 'run-f' }).rollouts.map((r) => [r.taskId, { ...r, spanCount: 0 }]));

describe('rollout failure categories in the store', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  beforeEach(() => {
    ws = tempWorkspace();
  });
  afterEach(() => ws.cleanup());

  it('keeps the category, breakdown and truncation counts through the catalog, the journals and compaction', async () => {
    const store = await TraceStore.open(ws.dir);
    const made = writeRollouts(store);
    const expected = Object.fromEntries(made.map((r) => [r.taskId, r]));
    assert.deepEqual(byTask(store), expected);
    assert.deepEqual(
      store.listRollouts({ runId: 'run-f', status: 'failed' }).rollouts.map((r) => r.failure).sort(),
      ['no_output', 'timeout', 'truncated'],
      'the status filter still finds every failed rollout, whatever its category',
    );
    // A rollout whose graph finished without output ran to its end: resume does not redo it.
    assert.deepEqual([...store.finishedKeys('run-f')].sort(), ['cut#0', 'empty#0', 'ok#0', 'slow#0']);
    await store.close();

    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const fromJournals = await TraceStore.open(ws.dir);
    assert.deepEqual(byTask(fromJournals), expected, 'rebuilt from the journals');
    await fromJournals.compact();
    assert.deepEqual(byTask(fromJournals), expected, 'after compaction');
    await fromJournals.close();

    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const fromSegments = await TraceStore.open(ws.dir);
    assert.deepEqual(byTask(fromSegments), expected, 'rebuilt from the segments');
    await fromSegments.close();
  });

  it('migrates a version-4 catalog: old rows read as unknown, new rows keep their category', async () => {
    const store = await TraceStore.open(ws.dir);
    store.startRun(makeRun('run-old'));
    const old = makeRollout({ runId: 'run-old', taskId: 'old' });
    store.startRollout(old);
    store.finishRollout(old);
    await store.close();

    // Turn the stored catalog back into what version 4 wrote.
    const path = join(ws.dir, '.rollout-lab/store/catalog.sqlite');
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(path));
    for (const c of ['failure', 'reward_breakdown', 'truncated_answers', 'truncated_prompts']) db.run(`ALTER TABLE rollouts DROP COLUMN ${c}`);
    db.run(`UPDATE meta SET value = '4' WHERE key = 'schema_version'`);
    writeFileSync(path, db.export());
    db.close();

    const migrated = await TraceStore.open(ws.dir);
    assert.equal(migrated.openedFrom, 'migrated');
    const read = migrated.getRollout(old.id)!;
    assert.deepEqual([read.failure, read.rewardBreakdown, read.truncatedAnswers, read.truncatedPrompts], [null, null, null, null]);
    const later = makeRollout({ runId: 'run-old', taskId: 'new', status: 'failed', failure: 'no_output', finalReward: 0 });
    migrated.startRollout(later);
    migrated.finishRollout(later);
    assert.equal(migrated.getRollout(later.id)!.failure, 'no_output');
    await migrated.close();
    const after = new SQL.Database(readFileSync(path));
    assert.equal(schemaVersionOf(after), SCHEMA_VERSION);
    after.close();
  });

  it('reads a rollout record journaled before the fields existed as unknown', async () => {
    const store = await TraceStore.open(ws.dir);
    store.startRun(makeRun('run-legacy'));
    const legacy: Partial<RolloutRecord> = makeRollout({ runId: 'run-legacy', status: 'failed', finalReward: null });
    delete legacy.failure;
    delete legacy.rewardBreakdown;
    delete legacy.truncatedAnswers;
    delete legacy.truncatedPrompts;
    store.startRollout(legacy as RolloutRecord);
    store.finishRollout(legacy as RolloutRecord);
    await store.close();
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    const rebuilt = await TraceStore.open(ws.dir);
    const r = rebuilt.getRollout(legacy.id!)!;
    assert.deepEqual([r.status, r.failure, r.rewardBreakdown, r.truncatedAnswers], ['failed', null, null, null]);
    await rebuilt.close();
  });
});
