import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { loadDataset, splitTasks } from '../../../src/core/data/dataset';
import { datasetError, fixtures } from './datasetFixtures';

const PUBMEDQA = path.resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

const hfRow = (pubid: number, decision: string) => ({
  pubid,
  question: `Does treatment ${pubid} work?`,
  context: { contexts: ['We studied it.', 'It worked.'], labels: ['METHODS', 'RESULTS'], meshes: ['Humans'] },
  long_answer: 'Yes, it did.',
  final_decision: decision,
});

test('the real PubMedQA labeled set: 1,000 tasks in file order, split 800/200', async () => {
  const tasks = await loadDataset(PUBMEDQA);
  assert.equal(tasks.length, 1000);
  // File order, not JSON.parse's numeric key order: the first item of the file comes first.
  assert.equal(tasks[0].id, '21645374');
  assert.equal(tasks[0].goal, 'Do mitochondria play a role in remodelling lace plant leaves during programmed cell death?');
  assert.equal(tasks[0].expectedDecision, 'yes');
  assert.match(tasks[0].context, /^BACKGROUND: Programmed cell death \(PCD\) is the regulated death/);
  assert.match(tasks[0].context, /\n\nRESULTS: /);
  assert.ok(Array.isArray(tasks[0].meta?.meshes) && (tasks[0].meta.meshes as string[]).length > 0);
  assert.equal(typeof tasks[0].meta?.longAnswer, 'string');
  const counts = { yes: 0, no: 0, maybe: 0 };
  for (const t of tasks) counts[t.expectedDecision!]++;
  assert.deepEqual(counts, { yes: 552, no: 338, maybe: 110 });
  const { train, val } = splitTasks(tasks, 0.8);
  assert.equal(train.length, 800);
  assert.equal(val.length, 200);
  assert.equal(val[0].id, tasks[800].id);
  const plain = await loadDataset(PUBMEDQA, 'pubmedqa', { sectionHeadings: false });
  assert.match(plain[0].context, /^Programmed cell death/);
});

test('JSONL task rows: context lists are joined, extra keys kept in meta, decisions normalised', async (t) => {
  const file = fixtures(t)(
    'tasks.jsonl',
    [
      JSON.stringify({ id: 't1', goal: 'Does A cause B?', context: 'A is linked to B.', expected_decision: 'Yes' }),
      '',
      JSON.stringify({ id: 2, goal: 'Is C safe?', context: ['Part one.', 'Part two.'], expected_decision: null, source: 'lab notes' }),
      JSON.stringify({ id: 't3', goal: 'Why D?', context: 'D.' }),
      JSON.stringify({ id: 't4', goal: 'Which rows?', context: '', expected: { sql: 'SELECT 1' } }),
    ].join('\n'),
  );
  const tasks = await loadDataset(file);
  assert.deepEqual(tasks, [
    { id: 't1', goal: 'Does A cause B?', context: 'A is linked to B.', expectedDecision: 'yes' },
    { id: '2', goal: 'Is C safe?', context: 'Part one.\n\nPart two.', expectedDecision: null, meta: { source: 'lab notes' } },
    { id: 't3', goal: 'Why D?', context: 'D.', expectedDecision: null },
    // A gold answer of any shape is the task's `expected`, not part of meta.
    { id: 't4', goal: 'Which rows?', context: '', expectedDecision: null, expected: { sql: 'SELECT 1' } },
  ]);
});

test('Hugging Face pqa_labeled: JSONL, JSON array and pandas columns give the same tasks', async (t) => {
  const write = fixtures(t);
  const rows = [hfRow(101, 'yes'), hfRow(102, 'maybe')];
  const jsonl = write('pqa_labeled.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const array = write('pqa_labeled.json', JSON.stringify(rows, null, 2));
  const columns: Record<string, Record<string, unknown>> = {};
  for (const key of Object.keys(rows[0])) columns[key] = Object.fromEntries(rows.map((r, i) => [String(i), (r as any)[key]]));
  const cols = write('pqa_columns.json', JSON.stringify(columns));

  const fromJsonl = await loadDataset(jsonl);
  assert.deepEqual(fromJsonl[0], {
    id: '101',
    goal: 'Does treatment 101 work?',
    context: 'METHODS: We studied it.\n\nRESULTS: It worked.',
    expectedDecision: 'yes',
    meta: { pmid: '101', meshes: ['Humans'], labels: ['METHODS', 'RESULTS'], longAnswer: 'Yes, it did.' },
  });
  assert.deepEqual(await loadDataset(array), fromJsonl);
  assert.deepEqual(await loadDataset(cols), fromJsonl);
  assert.deepEqual(await loadDataset(jsonl, 'hf-pubmedqa'), fromJsonl);
});

test('a .json file holding JSON Lines is detected', async (t) => {
  const file = fixtures(t)('tasks.json', '{"id":"a","goal":"G1","context":"C1"}\n{"id":"b","goal":"G2","context":"C2"}\n');
  assert.deepEqual(
    (await loadDataset(file)).map((x) => x.id),
    ['a', 'b'],
  );
});

test('a broken row names the file, the line and what every row needs', async (t) => {
  const write = fixtures(t);
  const file = write(
    'tasks.jsonl',
    ['{"id":"1","goal":"G","context":"C"}', '{"id":"2","goal":"G","context":"C"}', '{"id":"3","context":"C"}'].join('\n'),
  );
  const err = await datasetError(loadDataset(file));
  assert.ok(err.message.includes('tasks.jsonl line 3: missing "goal" — every row needs goal and context (id, expected_decision and expected are optional;'), err.message);
  assert.match(err.message, /rows of another shape: name their fields under "fields" of the dataset in lab\.json/);
  assert.equal(err.line, 3);
  assert.equal(err.file, file);

  const wrongType = await datasetError(loadDataset(write('b.jsonl', '{"id":"1","goal":"G","context":7}')));
  assert.match(wrongType.message, /line 1: "context" must be a string or an array of strings, got 7$/);
  const badDecision = await datasetError(loadDataset(write('c.jsonl', '{"id":"1","goal":"G","context":"C","expected_decision":"perhaps"}')));
  assert.match(badDecision.message, /line 1: "expected_decision" must be "yes", "no", "maybe" or null, got "perhaps"$/);
});

test('invalid JSON gives the line (JSONL) or line and column (JSON)', async (t) => {
  const write = fixtures(t);
  const lines = await datasetError(loadDataset(write('x.jsonl', '{"id":"1","goal":"G","context":"C"}\n\n{"id":"2" "goal":"G"}\n')));
  assert.match(lines.message, /x\.jsonl line 3: not valid JSON \(column 11: expected a comma — add "," between the entries\) — each line must hold one JSON object$/);
  assert.equal(lines.line, 3);
  const doc = await datasetError(loadDataset(write('ori.json', '{\n  "1": {\n    "QUESTION": "Q?",\n    "CONTEXTS": ["C"]\n    "final_decision": "yes"\n  }\n}\n'), 'pubmedqa'));
  assert.match(doc.message, /ori\.json line 5, column 5: expected a comma/);
});

test('a bad PubMedQA item is reported at its line', async (t) => {
  const text = JSON.stringify(
    {
      '11': { QUESTION: 'Q1?', CONTEXTS: ['C1'], LABELS: ['BACKGROUND'], final_decision: 'no' },
      '12': { QUESTION: 'Q2?', CONTEXTS: [], final_decision: 'yes' },
    },
    null,
    2,
  );
  const err = await datasetError(loadDataset(fixtures(t)('ori_pqal.json', text)));
  const line = text.split('\n').findIndex((l) => l.includes('"12"')) + 1;
  assert.match(err.message, new RegExp(`ori_pqal\\.json line ${line}: "CONTEXTS" must be a non-empty array of strings, got an array$`));
});

test('duplicate ids name both lines; an empty file and a missing file are clear errors', async (t) => {
  const write = fixtures(t);
  const dup = await datasetError(
    loadDataset(write('d.jsonl', '{"id":"a","goal":"G","context":"C"}\n{"id":"b","goal":"G","context":"C"}\n{"id":"a","goal":"G","context":"C"}\n')),
  );
  assert.match(dup.message, /d\.jsonl line 3: duplicate id "a" \(first on line 1\) — ids must be unique$/);
  const dupKeys = await datasetError(
    loadDataset(write('dk.json', '{\n"5": {"QUESTION":"Q","CONTEXTS":["C"]},\n"5": {"QUESTION":"Q","CONTEXTS":["C"]}\n}')),
  );
  assert.match(dupKeys.message, /line 3: duplicate id "5" \(first on line 2\)/);
  const empty = await datasetError(loadDataset(write('e.jsonl', '\n\n')));
  assert.match(empty.message, /has no tasks — add at least one item/);
  const emptyArray = await datasetError(loadDataset(write('e.json', '[]')));
  assert.match(emptyArray.message, /has no tasks/);
  const missing = await datasetError(loadDataset(path.join(os.tmpdir(), 'rl-no-such-dataset.jsonl')));
  assert.match(missing.message, /rl-no-such-dataset\.jsonl does not exist — check the dataset path in lab\.json/);
});

test('a format that does not fit the file says so', async (t) => {
  const file = fixtures(t)('tasks.jsonl', '{"id":"a","goal":"G","context":"C"}\n');
  const err = await datasetError(loadDataset(file, 'pubmedqa'));
  assert.match(err.message, /format "pubmedqa" expects an object keyed by PubMed id .* set "format" for this dataset in lab\.json/);
});
