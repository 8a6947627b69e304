import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { SCHEMA_VERSION, schemaVersionOf } from '../../../src/core/store/catalogSchema';
import { ftsMatchExpression } from '../../../src/core/store/rolloutText';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import type { SpanRecord } from '../../../src/core/trace/span';
import { makeAgent, makeRollout, makeRun, spanId, tempWorkspace } from './helpers/storeFixtures';

/** Spans with searchable text: a node, a model call whose messages mention `word`, a tool call with arguments. */
function textSpans(r: RolloutRecord, word: string, tool: string): SpanRecord[] {
  const base = { traceId: r.id, parentSpanId: null, startTime: r.startTime, endTime: r.startTime + 10, status: 'ok' as const };
  return [
    { ...base, spanId: spanId(), name: 'Geneticist', kind: 'node', attributes: { 'gen_ai.agent.name': 'Geneticist' } },
    {
      ...base,
      spanId: spanId(),
      name: 'chat small',
      kind: 'llm',
      attributes: {
        // The input repeats the conversation: not indexed (the next call's input would carry this answer again).
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', content: 'inputonlyword' }]),
        'gen_ai.output.messages': JSON.stringify([{ role: 'assistant', content: `Consider the ${word} pathway`, tool_calls: [{ id: 'c1', name: tool, arguments: '{"query":"cohort size"}' }] }]),
      },
    },
    { ...base, spanId: spanId(), name: tool, kind: 'tool', attributes: { 'gen_ai.tool.name': tool, 'gen_ai.tool.call.arguments': '{"query":"cohort size"}' } },
  ];
}

interface Fixture {
  a: RolloutRecord;
  b: RolloutRecord;
  c: RolloutRecord;
  d: RolloutRecord;
}

/** Four rollouts over two runs, differing in every column the table filters on. */
async function fill(dir: string): Promise<Fixture> {
  const store = await TraceStore.open(dir);
  store.startRun(makeRun('run-1'));
  store.startRun(makeRun('run-2', { simulated: false }));
  const a = { ...makeRollout({ runId: 'run-1', taskId: 't-a', startTime: 1000, endTime: 1900, finalReward: 0.9 }), criteria: { novelty: 0.9, clarity: 0.2 }, decision: 'yes', expectedDecision: 'yes' };
  const b = { ...makeRollout({ runId: 'run-1', taskId: 't-b', startTime: 2000, endTime: 2100, finalReward: 0.3, split: 'val' }), criteria: { novelty: 0.1, clarity: 0.8 }, decision: 'no', expectedDecision: 'yes' };
  const c = {
    ...makeRollout({ runId: 'run-2', taskId: 't-c', startTime: 3000, endTime: 3500, finalReward: null, status: 'failed', failure: 'timeout' }),
    criteria: null,
    decision: null,
    simulated: false,
    agents: [makeAgent('Geneticist', { promptVersion: 'pv-new', modelVersion: 'v2', inputTokens: 5000, outputTokens: 10 })],
  };
  const d = { ...makeRollout({ runId: 'run-2', taskId: 't-d', startTime: 4000, endTime: 4050, finalReward: 0.6 }), criteria: { novelty: 0.5, 'clarity of aims': 0.5 }, simulated: false };
  for (const [r, word, tool] of [
    [a, 'amyloid', 'pubmed_search'],
    [b, 'microglia', 'pubmed_search'],
    [c, 'amyloid', 'calculator'],
    [d, 'synaptic', 'calculator'],
  ] as const) {
    store.startRollout(r);
    for (const s of textSpans(r, word, tool)) store.writeSpan(s);
    store.finishRollout(r);
  }
  await store.close();
  return { a, b, c, d };
}

describe('rollouts table query', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let store: TraceStore;
  beforeEach(async () => {
    ws = tempWorkspace();
    await fill(ws.dir);
    store = await TraceStore.open(ws.dir, { readOnly: true });
  });
  afterEach(async () => {
    await store.close();
    ws.cleanup();
  });
  const ids = (q: Parameters<TraceStore['queryTable']>[0], prices: Parameters<TraceStore['queryTable']>[1] = null): string[] =>
    store.queryTable(q, prices).rows.map((r) => r.taskId);

  it('lists every rollout across runs, newest first, with the columns of the table', () => {
    const page = store.queryTable({});
    assert.equal(page.total, 4);
    assert.deepEqual(page.rows.map((r) => r.taskId), ['t-d', 't-c', 't-b', 't-a']);
    const a = page.rows.find((r) => r.taskId === 't-a')!;
    assert.equal(a.reward, 0.9);
    assert.deepEqual(a.criteria, { novelty: 0.9, clarity: 0.2 });
    assert.equal(a.inputTokens, 200);
    assert.equal(a.outputTokens, 100);
    assert.equal(a.latencyMs, 900);
    assert.equal(a.spans, 3);
    assert.equal(a.cost, null, 'no prices: no cost');
    assert.deepEqual(a.agents.map((x) => [x.agent, x.promptVersion, x.modelVersion]), [
      ['Geneticist', 'pv-Geneticist-1', 'v1'],
      ['Supervisor', 'pv-Supervisor-1', 'v1'],
    ]);
  });

  it('filters by run, split, status, failure, reward, criterion, decision, agent, versions and simulated', () => {
    assert.deepEqual(ids({ runIds: ['run-1'] }), ['t-b', 't-a']);
    assert.deepEqual(ids({ splits: ['val'] }), ['t-b']);
    assert.deepEqual(ids({ statuses: ['failed'] }), ['t-c']);
    assert.deepEqual(ids({ failures: ['timeout'] }), ['t-c']);
    assert.deepEqual(ids({ reward: { min: 0.5 } }), ['t-d', 't-a']);
    assert.deepEqual(ids({ reward: { min: 0.2, max: 0.7 } }), ['t-d', 't-b']);
    assert.deepEqual(ids({ criteria: { novelty: { max: 0.5 } } }), ['t-d', 't-b']);
    assert.deepEqual(ids({ criteria: { 'clarity of aims': { min: 0.4 } } }), ['t-d'], 'a criterion name with spaces');
    // Under the research lab's mapping: d decided GO on a "yes" task, which matches, as the report counts it.
    assert.deepEqual(ids({ decision: 'match' }), ['t-d', 't-a']);
    assert.deepEqual(ids({ decision: 'mismatch' }), ['t-b']);
    assert.deepEqual(ids({ decision: 'none' }), ['t-c']);
    assert.deepEqual(ids({ agent: 'Supervisor' }), ['t-d', 't-b', 't-a']);
    assert.deepEqual(ids({ promptVersion: 'pv-new' }), ['t-c']);
    assert.deepEqual(ids({ agent: 'Geneticist', modelVersion: 'v2' }), ['t-c']);
    assert.deepEqual(ids({ simulated: false }), ['t-d', 't-c']);
    assert.deepEqual(ids({ simulated: true, runIds: ['run-1', 'run-2'], reward: { min: 0.5 } }), ['t-a']);
  });

  it('sorts by any column both ways, rows without a value last, and pages', () => {
    assert.deepEqual(ids({ sort: 'reward', order: 'desc' }), ['t-a', 't-d', 't-b', 't-c']);
    assert.deepEqual(ids({ sort: 'reward', order: 'asc' }), ['t-b', 't-d', 't-a', 't-c']);
    assert.deepEqual(ids({ sort: 'latency', order: 'asc' }), ['t-d', 't-b', 't-c', 't-a']);
    assert.deepEqual(ids({ sort: 'inputTokens', order: 'desc' }).slice(0, 1), ['t-c']);
    assert.deepEqual(ids({ sort: 'criterion:novelty', order: 'asc' }), ['t-b', 't-d', 't-a', 't-c']);
    assert.deepEqual(ids({ sort: 'task', order: 'asc' }), ['t-a', 't-b', 't-c', 't-d']);
    const page = store.queryTable({ sort: 'task', order: 'asc', offset: 1, limit: 2 });
    assert.deepEqual(page.rows.map((r) => r.taskId), ['t-b', 't-c']);
    assert.equal(page.total, 4);
    assert.equal(page.offset, 1);
    assert.deepEqual(
      store.queryTableIds({ sort: 'task', order: 'asc', offset: 1, limit: 1 }),
      store.queryTable({ sort: 'task', order: 'asc' }).rows.map((r) => r.id),
      'every id of the query, in its order, without paging',
    );
  });

  it('computes and sorts by cost from the configured prices per 1M tokens', () => {
    const prices = { small: { input: 1, output: 10 } };
    const rows = store.queryTable({ sort: 'cost', order: 'desc' }, prices).rows;
    assert.equal(rows[0]!.taskId, 't-c');
    assert.ok(Math.abs(rows[0]!.cost! - (5000 * 1 + 10 * 10) / 1e6) < 1e-12);
    const a = rows.find((r) => r.taskId === 't-a')!;
    assert.ok(Math.abs(a.cost! - (200 * 1 + 100 * 10) / 1e6) < 1e-12);
    assert.equal(store.queryTable({}, { other: { input: 5, output: 5 } }).rows[0]!.cost, 0, 'a model without a price costs nothing');
  });

  it('searches span names, message contents and tool calls through the full-text index', () => {
    assert.deepEqual(ids({ text: 'amyloid' }), ['t-c', 't-a']);
    assert.deepEqual(ids({ text: 'AMYLOID pathway' }), ['t-c', 't-a'], 'case-insensitive, every word must match');
    assert.deepEqual(ids({ text: 'micro' }), ['t-b'], 'the last word is a prefix');
    assert.deepEqual(ids({ text: 'calculator' }), ['t-d', 't-c'], 'tool names');
    assert.deepEqual(ids({ text: 'pubmed_search' }), ['t-b', 't-a'], 'tool calls in the messages');
    assert.deepEqual(ids({ text: 'cohort' }).length, 4, 'tool arguments');
    assert.deepEqual(ids({ text: 'amyloid', runIds: ['run-1'] }), ['t-a'], 'with filters');
    assert.deepEqual(ids({ text: 'nothing-like-this' }), []);
    assert.deepEqual(ids({ text: 'inputonlyword' }), [], 'model inputs are not indexed');
    assert.deepEqual(ids({ text: '"*( )' }).length, 4, 'no words: no text filter, and no syntax error');
    const plan = store.queryTable({ text: 'amyloid' });
    assert.equal(plan.total, 2);
  });

  it('finds the same text after the catalog is rebuilt from the journals', async () => {
    await store.close();
    rmSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite'));
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(store.openedFrom, 'created');
    assert.deepEqual(ids({ text: 'amyloid' }), ['t-c', 't-a']);
    assert.deepEqual(ids({ text: 'calculator', sort: 'task', order: 'asc' }), ['t-c', 't-d']);
  });

  it('finds a rollout by its text while it runs and right after it ends, before any checkpoint', async () => {
    await store.close();
    store = await TraceStore.open(ws.dir);
    const r = makeRollout({ runId: 'run-1', taskId: 't-live', startTime: 5000, endTime: 5100, finalReward: 0.5 });
    store.startRollout({ ...r, status: 'running', endTime: null, finalReward: null });
    for (const s of textSpans(r, 'astrocyte', 'pubmed_search')) store.writeSpan(s);
    assert.deepEqual(store.queryTable({ text: 'astrocyte' }).rows.map((x) => x.taskId), ['t-live'], 'found while it runs');
    store.writeSpan({ ...textSpans(r, 'oligodendrocyte', 'calculator')[1]!, spanId: spanId() });
    store.finishRollout(r);
    assert.deepEqual(store.queryTable({ text: 'oligodendrocyte' }).rows.map((x) => x.taskId), ['t-live'], 'spans written after a search are found too');
    assert.deepEqual(store.queryTable({ text: 'astrocyte pathway' }).rows.map((x) => x.taskId), ['t-live']);
  });

  it('indexes the rollouts of a catalog from before the index when it is migrated', async () => {
    await store.close();
    const catalogPath = join(ws.dir, '.rollout-lab/store/catalog.sqlite');
    // Turn the stored catalog back into what version 5 wrote.
    const SQL = await loadSqlJs();
    const db = new SQL.Database(readFileSync(catalogPath));
    db.run(`ALTER TABLE rollouts DROP COLUMN input_tokens; ALTER TABLE rollouts DROP COLUMN output_tokens; DELETE FROM meta WHERE key = 'text_generation';
            UPDATE meta SET value = '5' WHERE key = 'schema_version'`);
    writeFileSync(catalogPath, db.export());
    db.close();
    rmSync(join(ws.dir, '.rollout-lab/store/catalog-text.sqlite'));
    // A read-only open does not index on open (it could not save it): other queries answer at once, a search builds the index.
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(store.openedFrom, 'migrated');
    assert.deepEqual(ids({ sort: 'task', order: 'asc' }).length, 4);
    assert.deepEqual(ids({ text: 'microglia' }), ['t-b']);
    await store.close();
    const untouched = new SQL.Database(readFileSync(catalogPath));
    assert.equal(schemaVersionOf(untouched), 5, 'a read-only open leaves the stored catalog as it was');
    untouched.close();
    store = await TraceStore.open(ws.dir);
    assert.equal(store.openedFrom, 'migrated');
    assert.deepEqual(ids({ text: 'microglia' }), ['t-b']);
    assert.deepEqual(ids({ sort: 'inputTokens', order: 'desc' }).slice(0, 1), ['t-c'], 'token totals filled from the agents');
    await store.close();
    const after = new SQL.Database(readFileSync(catalogPath));
    assert.equal(schemaVersionOf(after), SCHEMA_VERSION);
    assert.equal(after.exec(`SELECT 1 FROM meta WHERE key = 'text_backfill'`).length, 0, 'the backfill ran once');
    after.close();
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.equal(store.openedFrom, 'loaded');
    assert.deepEqual(ids({ text: 'microglia' }), ['t-b']);
  });

  it('keeps the index in a file of its own, loaded for the first search and not on open', async () => {
    const textPath = join(ws.dir, '.rollout-lab/store/catalog-text.sqlite');
    assert.ok(existsSync(textPath), 'the writer saved the index beside the catalog');
    const SQL = await loadSqlJs();
    const catalog = new SQL.Database(readFileSync(join(ws.dir, '.rollout-lab/store/catalog.sqlite')));
    assert.equal(catalog.exec(`SELECT 1 FROM sqlite_master WHERE name LIKE 'rollout_text%'`).length, 0, 'no text index inside the catalog');
    catalog.close();
    // An unreadable index file is not read until a search needs it.
    const saved = readFileSync(textPath);
    writeFileSync(textPath, Buffer.from('not an index'));
    await store.close();
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.deepEqual(ids({ sort: 'task', order: 'asc' }), ['t-a', 't-b', 't-c', 't-d']);
    assert.deepEqual(store.getSpans(store.queryTableIds({ sort: 'task', order: 'asc' })[0]!).length, 3);
    // …and then it is rebuilt from the spans.
    assert.deepEqual(ids({ text: 'amyloid' }), ['t-c', 't-a']);
    writeFileSync(textPath, saved);
  });

  it('does not use an index saved with another catalog: the rollouts are indexed again from their spans', async () => {
    const textPath = join(ws.dir, '.rollout-lab/store/catalog-text.sqlite');
    const older = readFileSync(textPath);
    await store.close();
    // A writer adds a rollout and saves both files; then the index goes back to the older one (a crash between the two writes leaves such a pair).
    const writer = await TraceStore.open(ws.dir);
    const e = makeRollout({ runId: 'run-1', taskId: 't-e', startTime: 6000, endTime: 6100, finalReward: 0.4 });
    writer.startRollout(e);
    for (const s of textSpans(e, 'astrocyte', 'calculator')) writer.writeSpan(s);
    writer.finishRollout(e);
    await writer.close();
    writeFileSync(textPath, older);
    store = await TraceStore.open(ws.dir, { readOnly: true });
    assert.deepEqual(ids({ text: 'astrocyte' }), ['t-e']);
    assert.deepEqual(ids({ text: 'amyloid' }), ['t-c', 't-a'], 'each rollout once');
  });

  it('offers the agents, failures and versions to filter by', () => {
    const facets = store.tableFacets();
    assert.deepEqual(facets.agents, ['Geneticist', 'Supervisor']);
    assert.deepEqual(facets.failures, ['timeout']);
    assert.ok(facets.modelVersions.some((m) => m.model === 'small' && m.version === 'v2'));
  });
});

describe('full-text match expressions', () => {
  it('keeps only words, requires each, and lets the last be a prefix', () => {
    assert.equal(ftsMatchExpression('Amyloid  beta'), 'amyloid beta*');
    assert.equal(ftsMatchExpression('"x" OR y*'), 'x or y*');
    assert.equal(ftsMatchExpression(' -*() '), null);
  });
});
