import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadDataset } from '../../../src/core/data/dataset';
import { Bm25Index } from '../../../src/core/graph/tools/bm25';
import { datasetSearchProvider } from '../../../src/core/graph/tools/search';
import { tokenize } from '../../../src/core/graph/tools/textTokens';

const PUBMEDQA = path.resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

test('tokenize lowercases, drops stop words and folds plurals', () => {
  assert.deepEqual(tokenize('Do the Studies of Patients with Type 2 diabetes show Viruses?'), ['study', 'patient', 'type', '2', 'diabete', 'show', 'viruse']);
  assert.deepEqual(tokenize('analysis of the mass'), ['analysis', 'mass']);
});

test('BM25 ranks by term rarity and frequency, filters, and is deterministic on ties', () => {
  const index = Bm25Index.build([
    { id: 'a', title: 'Cats', text: 'cats sleep a lot; cats purr' },
    { id: 'b', title: 'Dogs', text: 'dogs bark at cats' },
    { id: 'c', title: 'Birds', text: 'birds sing' },
    { id: 'd', title: 'Birds again', text: 'birds sing' },
  ]);
  assert.deepEqual(index.search('cat', 10).map((r) => r.id), ['a', 'b']);
  assert.deepEqual(index.search('dog bark', 10).map((r) => r.id), ['b']);
  assert.deepEqual(index.search('cats', 10, (id) => id !== 'a').map((r) => r.id), ['b']);
  assert.deepEqual(index.search('sing', 10).map((r) => r.id), ['c', 'd']);
  assert.deepEqual(index.search('zebra', 10), []);
  assert.deepEqual(index.search('the of and', 10), [], 'stop words alone match nothing');
  assert.ok(index.search('cats', 1)[0].score > 0);
  assert.equal(index.size, 4);
  assert.equal(index.document('c')?.title, 'Birds');
});

test('on the real abstracts a question finds its own abstract (top 3), and exclusion hides it', async () => {
  const tasks = await loadDataset(PUBMEDQA);
  // Abstracts only, without the question as title: a real ranking test, not a title match.
  const abstracts = Bm25Index.build(tasks.map((t) => ({ id: t.id, title: '', text: t.context })));
  const found = tasks.filter((t) => abstracts.search(t.goal, 3).some((r) => r.id === t.id)).length;
  assert.ok(found >= 950, `only ${found} of 1000 questions found their abstract in the top 3`);

  const search = datasetSearchProvider(tasks);
  for (const t of [tasks[0], tasks[123], tasks[999]]) {
    const hits = await search.search(t.goal, { topK: 3, kind: 'pubmed' });
    assert.ok(hits.some((h) => h.id === t.id), `${t.id} in the top 3`);
    assert.equal(hits[0].title, tasks.find((x) => x.id === hits[0].id)!.goal);
    assert.ok(hits[0].snippet.length > 0 && hits[0].snippet.length <= 300);
    const excluded = await search.search(t.goal, { topK: 3, kind: 'pubmed', excludeIds: [t.id] });
    assert.equal(excluded.length, 3);
    assert.ok(!excluded.some((h) => h.id === t.id));
  }
});

test('the clinical-trials search favours trial-like abstracts over an equal topical match', async () => {
  const tasks = [
    { id: 'lab', goal: 'Statin effect in mice', context: 'Statin lowered cholesterol in mice fed a fat diet.', expectedDecision: null },
    {
      id: 'rct',
      goal: 'Statin effect in adults',
      context: 'In this randomized, double-blind, placebo-controlled trial statin lowered cholesterol in adults.',
      expectedDecision: null,
    },
  ] as const;
  const search = datasetSearchProvider([...tasks]);
  const pubmed = await search.search('statin cholesterol', { topK: 2, kind: 'pubmed' });
  const trials = await search.search('statin cholesterol', { topK: 2, kind: 'clinical_trials' });
  assert.equal(pubmed[0].id, 'lab', 'the shorter abstract wins plain BM25');
  assert.equal(trials[0].id, 'rct', 'the trial wins the clinical-trials search');
  assert.ok(trials[0].score > pubmed.find((h) => h.id === 'rct')!.score);
  assert.equal(trials[0].source, 'dataset');
});
