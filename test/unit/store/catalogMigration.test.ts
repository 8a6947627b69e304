import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { MIGRATIONS, SCHEMA_VERSION, migrate, schemaVersionOf } from '../../../src/core/store/catalogSchema';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import { makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

async function fill(dir: string): Promise<string[]> {
  const store = await TraceStore.open(dir);
  store.startRun(makeRun('run-a'));
  const ids: string[] = [];
  for (const [i, ms] of [300, 100, 200].entries()) {
    const r = makeRollout({ runId: 'run-a', taskId: `t${i}`, startTime: 1000 + i, endTime: 1000 + i + ms });
    store.startRollout(r);
    for (const s of makeSpans(r.id, 3)) store.writeSpan(s);
    store.finishRollout(r);
    ids.push(r.id);
  }
  await store.close();
  return ids;
}

describe('catalog schema migrations', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let catalogPath: string;
  beforeEach(() => {
    ws = tempWorkspace();
    catalogPath = join(ws.dir, '.rollout-lab/store/catalog.sqlite');
  });
  afterEach(() => ws.cleanup());

  it('lists migrations in order, ending at the current version', () => {
    assert.deepEqual(
      MIGRATIONS.map((m) => m.version),
      MIGRATIONS.map((_m, i) => i + 1),
    );
    assert.equal(SCHEMA_VERSION, MIGRATIONS.at(-1)!.version);
  });

  it('migrates a version-1 catalog in place on open', async () => {
    const [slow, fast, mid] = await fill(ws.dir);
    // Turn the stored catalog back into what version 1 wrote.
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    db.run(`DROP INDEX rollouts_duration; ALTER TABLE rollouts DROP COLUMN duration; UPDATE meta SET value = '1' WHERE key = 'schema_version'`);
    writeFileSync(catalogPath, db.export());
    db.close();

    const store = await TraceStore.open(ws.dir);
    assert.equal(store.openedFrom, 'migrated');
    assert.deepEqual(
      store.listRollouts({ sort: 'duration', order: 'asc' }).rollouts.map((r) => r.id),
      [fast, mid, slow],
      'the new column was filled from the old rows',
    );
    await store.close();
    const after = new SQL.Database(readFileSync(catalogPath));
    assert.equal(schemaVersionOf(after), SCHEMA_VERSION, 'the migrated catalog was saved');
    after.close();
  });

  it('builds the same schema by migrating step by step as from scratch', async () => {
    const SQL = await loadSqlJs();
    const stepwise = new SQL.Database();
    assert.equal(migrate(stepwise, 1), 'created');
    assert.equal(schemaVersionOf(stepwise), 1);
    assert.equal(migrate(stepwise), 'migrated');
    const direct = new SQL.Database();
    migrate(direct);
    const schema = (d: typeof direct): string[] =>
      (d.exec(`SELECT name FROM sqlite_master WHERE type IN ('table', 'index') ORDER BY name`)[0]?.values ?? []).map((v) => String(v[0]));
    const columns = (d: typeof direct): string[] => (d.exec(`PRAGMA table_info(rollouts)`)[0]?.values ?? []).map((v) => String(v[1]));
    assert.deepEqual(schema(stepwise), schema(direct));
    assert.deepEqual(columns(stepwise), columns(direct));
    assert.equal(migrate(direct), 'current');
    stepwise.close();
    direct.close();
  });

  it('rebuilds from the journals, without overwriting it, a catalog from a newer version', async () => {
    const ids = await fill(ws.dir);
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    db.run(`UPDATE meta SET value = '99' WHERE key = 'schema_version'`);
    writeFileSync(catalogPath, db.export());
    db.close();
    const stored = readFileSync(catalogPath);

    const store = await TraceStore.open(ws.dir);
    assert.equal(store.openedFrom, 'newer');
    assert.deepEqual(new Set(store.listRollouts().rollouts.map((r) => r.id)), new Set(ids));
    const r = makeRollout({ runId: 'run-a', taskId: 'more' });
    store.startRollout(r);
    store.finishRollout(r);
    await store.close();
    assert.deepEqual(readFileSync(catalogPath), stored, 'the newer catalog is left as it was');

    const again = await TraceStore.open(ws.dir);
    assert.equal(again.getRollout(r.id)?.status, 'succeeded', 'what was written meanwhile is in the journals');
    await again.close();
  });
});
