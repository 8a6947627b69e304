import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DatasetFieldsSchema, LabConfigSchema } from '../../../src/core/config/schema';
import { loadDataset } from '../../../src/core/data/dataset';
import { fieldValue } from '../../../src/core/data/fieldMapping';
import { visibleTask } from '../../../src/core/data/visibleTask';
import { datasetError, fixtures } from './datasetFixtures';

/** Rows as Spider ships them (train_spider.json): no id, the question, the gold query, the database. */
const SPIDER = [
  { db_id: 'concert_singer', query: 'SELECT count(*) FROM singer', question: 'How many singers do we have?', query_toks: ['SELECT', 'count', '(', '*', ')', 'FROM', 'singer'] },
  { db_id: 'concert_singer', query: 'SELECT name FROM singer ORDER BY age DESC', question: 'List singer names from oldest to youngest.', query_toks: [] },
  { db_id: 'pets_1', query: 'SELECT count(*) FROM pets', question: 'How many pets are there?', query_toks: [] },
];
const fields = (f: Record<string, unknown>) => DatasetFieldsSchema.parse(f);
const SPIDER_FIELDS = fields({ goal: 'question', expected: 'query', visible: ['db_id'] });

test("Spider's own rows load with a field mapping: gold query as expected, db_id visible, the rest in meta", async (t) => {
  const file = fixtures(t)('train_spider.json', JSON.stringify(SPIDER, null, 2));
  const tasks = await loadDataset(file, 'auto', { fields: SPIDER_FIELDS });
  assert.equal(tasks.length, 3);
  const [first] = tasks;
  assert.match(first!.id, /^[0-9a-f]{12}$/);
  assert.equal(first!.goal, 'How many singers do we have?');
  assert.equal(first!.context, '');
  assert.equal(first!.expected, 'SELECT count(*) FROM singer');
  assert.equal(first!.expectedDecision, null);
  assert.deepEqual(first!.visible, { db_id: 'concert_singer' });
  assert.deepEqual(first!.meta, { db_id: 'concert_singer', query_toks: SPIDER[0]!.query_toks });
  // What the agents get: no gold query, no tokens of it.
  assert.deepEqual(visibleTask(first!), { id: first!.id, goal: 'How many singers do we have?', context: '', db_id: 'concert_singer' });
});

test('generated ids are the same on every load, do not move when other rows are reordered, and duplicates get a suffix', async (t) => {
  const write = fixtures(t);
  const a = await loadDataset(write('a.json', JSON.stringify(SPIDER)), 'auto', { fields: SPIDER_FIELDS });
  const again = await loadDataset(write('a2.json', JSON.stringify(SPIDER)), 'auto', { fields: SPIDER_FIELDS });
  assert.deepEqual(again.map((x) => x.id), a.map((x) => x.id));
  // Reordered, with a row added in front and a key order that differs: each row keeps its id.
  const reordered = [{ question: 'New?', db_id: 'x', query: 'SELECT 1' }, SPIDER[2], { question: SPIDER[0]!.question, query_toks: SPIDER[0]!.query_toks, query: SPIDER[0]!.query, db_id: SPIDER[0]!.db_id }, SPIDER[1]];
  const b = await loadDataset(write('b.json', JSON.stringify(reordered)), 'auto', { fields: SPIDER_FIELDS });
  const idOf = (tasks: typeof a, goal: string) => tasks.find((x) => x.goal === goal)!.id;
  for (const row of SPIDER) assert.equal(idOf(b, row.question), idOf(a, row.question));
  assert.equal(new Set(b.map((x) => x.id)).size, 4);

  const dup = await loadDataset(write('dup.jsonl', [SPIDER[0], SPIDER[1], SPIDER[0], SPIDER[0]].map((r) => JSON.stringify(r)).join('\n')), 'auto', { fields: SPIDER_FIELDS });
  assert.deepEqual(dup.map((x) => x.id), [a[0]!.id, a[1]!.id, `${a[0]!.id}-2`, `${a[0]!.id}-3`]);
});

test('mapped fields: dotted paths, an id field, a context list and a yes/no/maybe decision', async (t) => {
  const rows = [
    { uid: 7, q: { text: 'Does A cause B?', passages: ['One.', 'Two.'] }, label: 'YES', gold: { answer: 'yes', why: 'trial' }, source: 'notes' },
    { uid: 'x8', q: { text: 'Is C safe?', passages: 'Only one.' }, label: null, gold: null, source: 'notes' },
  ];
  const file = fixtures(t)('rows.jsonl', rows.map((r) => JSON.stringify(r)).join('\n'));
  const tasks = await loadDataset(file, 'jsonl', { fields: fields({ id: 'uid', goal: 'q.text', context: 'q.passages', decision: 'label', expected: 'gold.answer', visible: ['source'] }) });
  assert.deepEqual(tasks, [
    { id: '7', goal: 'Does A cause B?', context: 'One.\n\nTwo.', expectedDecision: 'yes', expected: 'yes', visible: { source: 'notes' }, meta: { q: rows[0]!.q, gold: rows[0]!.gold, source: 'notes' } },
    { id: 'x8', goal: 'Is C safe?', context: 'Only one.', expectedDecision: null, expected: null, visible: { source: 'notes' }, meta: { q: rows[1]!.q, gold: null, source: 'notes' } },
  ]);
  assert.equal(fieldValue({ 'a.b': 1, a: { b: 2 } }, 'a.b'), 1, 'a key holding the dots wins over the path');
});

test('an object keyed by id gives its keys as ids when the mapping names no id field', async (t) => {
  const file = fixtures(t)('keyed.json', JSON.stringify({ k1: { question: 'Q1?' }, k2: { question: 'Q2?' } }));
  const tasks = await loadDataset(file, 'auto', { fields: fields({ goal: 'question' }) });
  assert.deepEqual(tasks.map((x) => x.id), ['k1', 'k2']);
});

test('mapping errors name the line, the setting and the field', async (t) => {
  const write = fixtures(t);
  const rows = [SPIDER[0], SPIDER[1], { db_id: 'x', query: 'SELECT 1' }];
  const missing = await datasetError(loadDataset(write('m.jsonl', rows.map((r) => JSON.stringify(r)).join('\n')), 'auto', { fields: SPIDER_FIELDS }));
  assert.match(missing.message, /m\.jsonl line 3: fields\.goal → "question" is missing — map "goal" to a field every row has/);
  assert.equal(missing.line, 3);

  const typo = await datasetError(loadDataset(write('t.json', JSON.stringify(SPIDER)), 'auto', { fields: fields({ goal: 'question', expected: 'querry', visible: ['db'] }) }));
  assert.match(typo.message, /t\.json: fields\.expected → "querry", fields\.visible\[0\] → "db" are on no row \(the first row has: db_id, query, question, query_toks\)/);

  const badDecision = await datasetError(loadDataset(write('d.jsonl', '{"q":"Q?","label":"perhaps"}'), 'auto', { fields: fields({ goal: 'q', decision: 'label' }) }));
  assert.match(badDecision.message, /line 1: fields\.decision → "label" must be "yes", "no", "maybe" or null, got "perhaps"/);

  const badGoal = await datasetError(loadDataset(write('g.jsonl', '{"q":7}'), 'auto', { fields: fields({ goal: 'q' }) }));
  assert.match(badGoal.message, /line 1: fields\.goal → "q" must be a non-empty string, got 7/);

  const noId = await datasetError(loadDataset(write('i.jsonl', '{"q":"Q?"}'), 'auto', { fields: fields({ goal: 'q', id: 'uid' }) }));
  assert.match(noId.message, /line 1: fields\.id → "uid" is missing/);

  const wrongFormat = await datasetError(loadDataset(write('p.json', JSON.stringify(SPIDER)), 'pubmedqa', { fields: SPIDER_FIELDS }));
  assert.match(wrongFormat.message, /"fields" maps rows of your own .* set "format" to "auto" or "jsonl"/);
});

test('lab.json: a visible field that is the gold answer, and fields with a fixed format, are config errors', () => {
  const base = { models: { m: { model: 'x' } }, agents: { A: { model: 'm' } }, reward: { judge: { model: 'm' } } };
  const leak = LabConfigSchema.safeParse({ ...base, datasets: { spider: { path: 's.json', fields: { goal: 'question', expected: 'query', visible: ['db_id', 'query'] } } } });
  assert.ok(!leak.success);
  assert.match(leak.error.issues[0]!.message, /"query" holds fields\.expected \("query"\), the gold answer; the agents must not see it/);
  assert.deepEqual(leak.error.issues[0]!.path, ['datasets', 'spider', 'fields', 'visible', 1]);
  // A field around the gold answer, or inside it, shows it too; so does the goal or the context mapped onto it.
  for (const [fields, where] of [
    [{ goal: 'question', expected: 'gold.sql', visible: ['gold'] }, ['visible', 0]],
    [{ goal: 'question', expected: 'gold', visible: ['gold.sql'] }, ['visible', 0]],
    [{ goal: 'question', context: 'label', decision: 'label' }, ['context']],
    [{ goal: 'answer.text', expected: 'answer' }, ['goal']],
  ] as const) {
    const r = LabConfigSchema.safeParse({ ...base, datasets: { d: { path: 'd.json', fields } } });
    assert.ok(!r.success, JSON.stringify(fields));
    assert.deepEqual(r.error.issues[0]!.path, ['datasets', 'd', 'fields', ...where]);
  }
  const fixed = LabConfigSchema.safeParse({ ...base, datasets: { p: { path: 'ori_pqal.json', format: 'pubmedqa', fields: { goal: 'QUESTION' } } } });
  assert.ok(!fixed.success);
  assert.match(fixed.error.issues[0]!.message, /format "pubmedqa" has fixed fields/);
  const ok = LabConfigSchema.parse({ ...base, datasets: { spider: { path: 's.json', fields: { goal: 'question', expected: 'query', visible: ['db_id'] } } } });
  assert.deepEqual(ok.datasets.spider!.fields, { goal: 'question', expected: 'query', visible: ['db_id'] });
});
