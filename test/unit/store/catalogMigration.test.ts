import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { MIGRATIONS, SCHEMA_VERSION, migrate, schemaVersionOf } from '../../../src/core/store/catalogSchema';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { ModelPrices } from '../../../src/core/store/tableQuery';
import { makeAgent, makeRollout, makeRun, makeSpans, tempWorkspace } from './helpers/storeFixtures';

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

/** Rollouts whose agents share some strings and leave others out: prompt versions two agents ran, models without a version, none at all. */
async function fillAgents(dir: string): Promise<string[]> {
  const store = await TraceStore.open(dir);
  store.startRun(makeRun('run-a'));
  store.startRun(makeRun('run-b'));
  const ids: string[] = [];
  const shapes = [
    [makeAgent('Geneticist'), makeAgent('Supervisor', { promptVersion: 'pv-shared', model: 'large', modelVersion: 'v2', inputTokens: 400 })],
    [makeAgent('Geneticist', { promptVersion: 'pv-shared', outputTokens: 70 }), makeAgent('Neurologist', { promptVersion: null, model: null, modelVersion: null })],
    [makeAgent('Supervisor', { model: 'large', modelVersion: null }), makeAgent('Geneticist', { promptVersion: 'pv-Geneticist-2', latencyMs: 321.5 }), makeAgent('Supervisor', { visits: 2 })],
    [],
  ];
  for (let i = 0; i < 8; i++) {
    const r = makeRollout({ runId: i % 2 ? 'run-b' : 'run-a', taskId: `t${i}`, startTime: 1000 + i * 10, finalReward: i === 5 ? null : i / 10, agents: shapes[i % shapes.length]! });
    // Started with an agent it does not finish with: the finished rollout's agents replace it.
    store.startRollout({ ...r, status: 'running', endTime: null, agents: [makeAgent('Dropped', { model: 'gone' })] });
    for (const s of makeSpans(r.id, 3, r.startTime)) store.writeSpan(s);
    if (i !== 7) store.finishRollout(r);
    ids.push(r.id);
  }
  await store.close();
  return ids;
}

const PRICES: ModelPrices = { small: { input: 1, output: 2 }, large: { input: 10, output: 30 } };

/** What the store answers about its rollouts' agents, through every query that reads them. */
function agentAnswers(store: TraceStore, ids: readonly string[]): unknown {
  return {
    rollouts: ids.map((id) => store.getRollout(id)),
    list: store.listRollouts({ sort: 'startTime', order: 'asc' }),
    byAgent: ['Geneticist', 'Neurologist', 'Dropped', 'nobody'].map((agent) => store.listRollouts({ agent }).rollouts.map((r) => r.id)),
    byPrompt: ['pv-shared', 'pv-Geneticist-1', 'pv-none'].map((promptVersion) => store.listRollouts({ promptVersion }).total),
    both: store.listRollouts({ agent: 'Geneticist', promptVersion: 'pv-shared' }).total,
    facets: store.tableFacets(),
    aggregate: store.aggregateByAgent(),
    aggregateOne: store.aggregateByAgent({ agent: 'Supervisor', runId: 'run-a' }),
    table: store.queryTable({ sort: 'task', order: 'asc' }, PRICES),
    tableFiltered: [{ agent: 'Supervisor' }, { modelVersion: 'v2' }, { agent: 'Geneticist', promptVersion: 'pv-Geneticist-2' }, { modelVersion: 'gone' }].map((q) =>
      store.queryTableIds({ ...q, sort: 'task', order: 'asc' }),
    ),
    byCost: store.queryTableIds({ sort: 'cost', order: 'desc' }, PRICES),
  };
}

/** The rollout_agents table's columns: name, type, not null, primary key. */
function agentColumns(db: { exec: (sql: string) => Array<{ values: unknown[][] }> }): string[] {
  return (db.exec(`PRAGMA table_info(rollout_agents)`)[0]?.values ?? []).map((v) => `${String(v[1])} ${String(v[2])} ${String(v[3])} ${String(v[5])}`);
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

  it('stores each agent, prompt version, model and model version once (version 10)', async () => {
    const ids = await fillAgents(ws.dir);
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    const one = (sql: string): unknown => db.exec(sql)[0]?.values[0]?.[0];
    // Geneticist Supervisor Neurologist Dropped, pv-Geneticist-1 pv-shared pv-Supervisor-1 pv-Geneticist-2 pv-Dropped-1, small large gone, v1 v2
    assert.equal(one('SELECT COUNT(*) FROM agent_strings'), 14, 'one row a string, whichever columns use it');
    assert.equal(one('SELECT COUNT(DISTINCT value) FROM agent_strings'), 14);
    assert.equal(one('SELECT COUNT(*) FROM rollout_agents'), 2 + 2 + 3 + 0 + 2 + 2 + 3 + 1, "a row per rollout and agent: the finished ones' agents, the running one's");
    assert.equal(one(`SELECT COUNT(*) FROM pragma_table_info('rollout_agents') WHERE type = 'TEXT'`), 0, 'the rows hold ids, no strings');
    db.close();
    const store = await TraceStore.open(ws.dir);
    assert.deepEqual(store.tableFacets().agents, ['Dropped', 'Geneticist', 'Neurologist', 'Supervisor']);
    // The running rollout ends with other agents: 'Dropped' is no longer any rollout's, though its string stays.
    const last = store.getRollout(ids[7]!)!;
    store.finishRollout({ ...last, status: 'succeeded', endTime: last.startTime + 5, agents: [makeAgent('Geneticist')] });
    assert.deepEqual(store.tableFacets().agents, ['Geneticist', 'Neurologist', 'Supervisor']);
    assert.deepEqual(store.tableFacets().modelVersions, [{ model: 'large', version: 'v2' }, { model: 'small', version: 'v1' }]);
    assert.deepEqual(store.listRollouts({ agent: 'Dropped' }).total, 0);
    assert.deepEqual(store.getRollout(ids[7]!)!.agents, [makeAgent('Geneticist')]);
    await store.close();
    const after = new SQL.Database(readFileSync(catalogPath));
    assert.equal(after.exec('SELECT COUNT(*) FROM agent_strings')[0]?.values[0]?.[0], 14, 'strings already stored are not stored again');
    after.close();
  });

  it('migrates a version-9 catalog in place: the strings move into agent_strings and every query answers as before', async () => {
    const ids = await fillAgents(ws.dir);
    let store = await TraceStore.open(ws.dir, { readOnly: true });
    const before = agentAnswers(store, ids);
    await store.close();

    // Turn the stored catalog back into what version 9 wrote: the strings in every row.
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    db.run(`
      CREATE TABLE rollout_agents_v9(
        rid INTEGER NOT NULL, ord INTEGER NOT NULL, agent TEXT NOT NULL, prompt_version TEXT,
        model TEXT, model_version TEXT, visits INTEGER NOT NULL, llm_calls INTEGER NOT NULL,
        tool_calls INTEGER NOT NULL, errors INTEGER NOT NULL, input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL, latency_ms REAL NOT NULL,
        PRIMARY KEY(rid, ord)
      ) WITHOUT ROWID;
      INSERT INTO rollout_agents_v9
        SELECT a.rid, a.ord, g.value, p.value, m.value, v.value, a.visits, a.llm_calls, a.tool_calls, a.errors, a.input_tokens, a.output_tokens, a.latency_ms
        FROM rollout_agents a LEFT JOIN agent_strings g ON g.id = a.agent_id LEFT JOIN agent_strings p ON p.id = a.prompt_version_id
        LEFT JOIN agent_strings m ON m.id = a.model_id LEFT JOIN agent_strings v ON v.id = a.model_version_id;
      DROP TABLE rollout_agents; DROP TABLE agent_strings;
      ALTER TABLE rollout_agents_v9 RENAME TO rollout_agents;
      UPDATE meta SET value = '9' WHERE key = 'schema_version';
    `);
    db.run('VACUUM');
    const v9 = new SQL.Database();
    migrate(v9, 9);
    const tables = (d: typeof db): string[] => (d.exec(`SELECT name FROM sqlite_master WHERE type IN ('table', 'index') ORDER BY name`)[0]?.values ?? []).map((v) => String(v[0]));
    assert.deepEqual(tables(db), tables(v9), 'the same tables and indexes as a version-9 catalog');
    assert.deepEqual(agentColumns(db), agentColumns(v9), 'the same per-agent columns as a version-9 catalog');
    v9.close();
    const rows = db.exec('SELECT COUNT(*) FROM rollout_agents')[0]?.values[0]?.[0];
    writeFileSync(catalogPath, db.export());
    db.close();

    // A read-only open migrates in memory; a writer's saves the migrated catalog.
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(store.openedFrom, 'migrated');
    assert.deepEqual(agentAnswers(store, ids), before, 'the same answers from the migrated catalog (read-only)');
    await store.close();
    store = await TraceStore.open(ws.dir);
    assert.equal(store.openedFrom, 'migrated', 'migrated in place, not rebuilt from the journals');
    assert.deepEqual(agentAnswers(store, ids), before, 'the same answers from the migrated catalog');
    await store.close();

    const after = new SQL.Database(readFileSync(catalogPath));
    const one = (sql: string): unknown => after.exec(sql)[0]?.values[0]?.[0];
    assert.equal(schemaVersionOf(after), SCHEMA_VERSION);
    assert.equal(one('SELECT COUNT(*) FROM rollout_agents'), rows, 'every per-agent row is kept');
    assert.equal(one('SELECT COUNT(*) FROM agent_strings'), 14, 'each string once');
    assert.equal(one(`SELECT COUNT(*) FROM pragma_table_info('rollout_agents') WHERE type = 'TEXT'`), 0);
    assert.equal(one('PRAGMA freelist_count'), 0, "the old table's pages were given back (VACUUM)");
    const fresh = new SQL.Database();
    migrate(fresh);
    assert.deepEqual(agentColumns(after), agentColumns(fresh), 'the same per-agent columns as a new catalog');
    fresh.close();
    after.close();
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(store.openedFrom, 'loaded');
    assert.deepEqual(agentAnswers(store, ids), before);
    await store.close();
  });
});
