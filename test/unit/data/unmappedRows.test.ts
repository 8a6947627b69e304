import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadDataset } from '../../../src/core/data/dataset';
import { proposeFieldMapping } from '../../../src/core/data/fieldInference';
import { loadConfig } from '../../../src/core/config/loader';
import { initWorkspace } from '../../../src/core/lab/init';
import { initDatasetNote } from '../../../src/core/lab/initDatasetNote';
import { datasetError, fixtures } from './datasetFixtures';

/* Rows of the user's own shape with no mapping: what the error says, and the mapping `init --dataset` writes for them. */

const jsonl = (rows: unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';
const QA = [
  { question: 'Does aspirin lower the risk?', passage: 'A cohort of 20,000 adults.', answer: 'yes' },
  { question: 'Is the drug safe in children?', passage: 'A trial of 300 children.', answer: 'maybe' },
];

test('rows of another shape: the error names the missing fields and the columns, proposes the mapping, and does not call id required', async (t) => {
  const err = await datasetError(loadDataset(fixtures(t)('qa.jsonl', jsonl(QA))));
  assert.match(err.message, /qa\.jsonl: the rows are not in the project's own shape \(goal, context; id optional\) — no row has "goal" or "context" \(its columns: question, passage, answer\)/);
  assert.ok(err.message.includes('"fields": {"goal":"question","context":"passage","expected":"answer","decision":"answer"} under this dataset in "datasets"'), err.message);
  assert.ok(err.message.includes('rollout-lab init --dataset'), err.message);
  assert.doesNotMatch(err.message, /needs id|missing "id"/);
  assert.equal(err.line, undefined, 'a problem of the whole file, not of one line');

  // With the proposed mapping the same file loads.
  const proposal = proposeFieldMapping(QA);
  const { DatasetFieldsSchema } = await import('../../../src/core/config/schema');
  const tasks = await loadDataset(fixtures(t)('qa2.jsonl', jsonl(QA)), 'auto', { fields: DatasetFieldsSchema.parse(proposal.fields) });
  assert.deepEqual(tasks.map((x) => [x.goal, x.context, x.expected, x.expectedDecision]), [
    ['Does aspirin lower the risk?', 'A cohort of 20,000 adults.', 'yes', 'yes'],
    ['Is the drug safe in children?', 'A trial of 300 children.', 'maybe', 'maybe'],
  ]);

  // No column that looks like a goal: the error says which setting to write.
  const odd = await datasetError(loadDataset(fixtures(t)('odd.jsonl', jsonl([{ a: 1, b: 'x' }]))));
  assert.match(odd.message, /no row has "goal" or "context" \(its columns: a, b\); name the column that holds the question in lab\.json with "fields": \{"goal": "COLUMN"\}/);
});

test('the project\'s own rows need no id: one is made from a hash of the row, the same on every load', async (t) => {
  const write = fixtures(t);
  const rows = [{ goal: 'G1?', context: 'C1.' }, { goal: 'G2?', context: 'C2.', id: 'own' }, { goal: 'G1?', context: 'C1.' }];
  const tasks = await loadDataset(write('own.jsonl', jsonl(rows)));
  assert.match(tasks[0]!.id, /^[0-9a-f]{12}$/);
  assert.equal(tasks[1]!.id, 'own');
  assert.equal(tasks[2]!.id, `${tasks[0]!.id}-2`, 'an exact duplicate gets a suffix');
  assert.deepEqual((await loadDataset(write('again.jsonl', jsonl(rows)))).map((x) => x.id), tasks.map((x) => x.id));
});

test('the mapping is guessed from usual column names and the kind of their values', () => {
  // Spider: the gold query is the expected answer, never the goal.
  const spider = proposeFieldMapping([{ db_id: 'concert_singer', query: 'SELECT count(*) FROM singer', question: 'How many singers?' }]);
  assert.deepEqual(spider, { columns: ['db_id', 'query', 'question'], fields: { goal: 'question', expected: 'query' } });
  // Case does not matter; a list of passages is a context; an id column of another name is mapped.
  const hotpot = proposeFieldMapping([{ QID: 'q1', Prompt: 'Who?', Documents: ['One.', 'Two.'], Label: 'no' }]);
  assert.deepEqual(hotpot.fields, { goal: 'Prompt', context: 'Documents', id: 'QID', expected: 'Label', decision: 'Label' });
  // An "answer" that is no yes/no/maybe is the expected answer only.
  assert.deepEqual(proposeFieldMapping([{ input: 'Translate: hello', output: 'bonjour', label: 'greeting' }]).fields, { goal: 'input', expected: 'output' });
  // A "question" that is not text is not the goal.
  assert.equal(proposeFieldMapping([{ question: 7, other: 'x' }]).fields, null);
});

test('init --dataset writes the guessed mapping into lab.json and says what it chose; the lab then loads the rows', async (t) => {
  const file = fixtures(t)('qa.jsonl', jsonl(QA));
  const ws = path.dirname(file);
  const r = await initWorkspace(ws, { dataset: 'qa.jsonl' });
  assert.deepEqual(r.dataset, { name: 'qa', path: 'qa.jsonl', source: 'given', fields: { goal: 'question', context: 'passage', expected: 'answer', decision: 'answer' } });
  const { config } = await loadConfig(ws);
  assert.deepEqual(config.datasets.qa!.fields, { goal: 'question', context: 'passage', expected: 'answer', decision: 'answer', visible: [] });
  const raw = JSON.parse(readFileSync(path.join(ws, '.rollout-lab', 'lab.json'), 'utf8')) as { datasets: Record<string, { fields: unknown }> };
  assert.deepEqual(raw.datasets.qa!.fields, { goal: 'question', context: 'passage', expected: 'answer', decision: 'answer' });
  const tasks = await loadDataset(file, 'auto', { fields: config.datasets.qa!.fields });
  assert.equal(tasks.length, 2);
  assert.equal(
    initDatasetNote(r.dataset!, 'workspace'),
    'using dataset "qa" (qa.jsonl); its rows map as goal ← question, context ← passage, expected ← answer, decision ← answer ("fields" of datasets.qa in .rollout-lab/lab.json: edit it if a column is wrong)',
  );

  // Rows in the project's own shape get no mapping.
  const own = fixtures(t)('tasks.jsonl', jsonl([{ id: 'a', goal: 'G?', context: 'C.' }]));
  const mine = await initWorkspace(path.dirname(own), { dataset: 'tasks.jsonl' });
  assert.deepEqual(mine.dataset, { name: 'tasks', path: 'tasks.jsonl', source: 'given' });
});
