import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_MAX_ROW_BYTES, loadDataset } from '../../../src/core/data/dataset';
import { Lab } from '../../../src/core/lab/lab';
import { initWorkspace } from '../../../src/core/lab/init';
import { datasetError, fixtures } from './datasetFixtures';

/* A row far larger than any model's context stops the load, named, instead of failing its rollouts in transport. */

const row = (id: string, contextBytes: number): string => JSON.stringify({ id, goal: `Question ${id}?`, context: 'x'.repeat(contextBytes) });

test('a 50 MB row stops the load naming its line, id, size and the limit, and how to raise it', async (t) => {
  const file = fixtures(t)('big.jsonl', [row('a', 100), row('b', 200), row('huge', 50 * 1024 * 1024)].join('\n') + '\n');
  const err = await datasetError(loadDataset(file));
  assert.match(
    err.message,
    /big\.jsonl line 3 \(id "huge"\): the row is 50\.0 MiB \(52428\d\d\d bytes\), over the limit of 4\.0 MiB \(4194304 bytes\) per row — every model call of its rollouts would carry it; shorten the row, or raise "maxRowBytes" of this dataset under "datasets" in lab\.json$/,
  );
  assert.equal(err.line, 3);
  assert.equal(DEFAULT_MAX_ROW_BYTES, 4 * 1024 * 1024);
});

test('the limit counts the row as the file has it, in every layout, and maxRowBytes moves it', async (t) => {
  const write = fixtures(t);
  const limit = 1000;
  // Multi-byte characters count as their UTF-8 bytes: 400 × "é" is 800 bytes.
  const fits = write('fits.jsonl', JSON.stringify({ id: 'é', goal: 'G?', context: 'é'.repeat(400) }) + '\n');
  assert.equal((await loadDataset(fits, 'auto', { maxRowBytes: limit })).length, 1);
  const over = write('over.jsonl', JSON.stringify({ id: 'é', goal: 'G?', context: 'é'.repeat(500) }) + '\n');
  assert.match((await datasetError(loadDataset(over, 'auto', { maxRowBytes: limit }))).message, /line 1 \(id "é"\): the row is 1\.0 KiB \(10\d\d bytes\), over the limit of 1000 bytes per row/);

  const array = write('rows.json', JSON.stringify([{ id: 1, goal: 'G?', context: 'c' }, { goal: 'G?', context: 'x'.repeat(2000) }], null, 2));
  const arrayErr = await datasetError(loadDataset(array, 'auto', { maxRowBytes: limit }));
  assert.match(arrayErr.message, /rows\.json line 7: the row is/, 'no id on the row: the line alone');
  const keyed = write('ori_pqal.json', JSON.stringify({ '11': { QUESTION: 'Q?', CONTEXTS: ['x'.repeat(2000)], final_decision: 'yes' } }));
  assert.match((await datasetError(loadDataset(keyed, 'auto', { maxRowBytes: limit }))).message, /line 1 \(id "11"\): the row is/);
  // Raised, the same files load.
  assert.equal((await loadDataset(array, 'auto', { maxRowBytes: 10_000 })).length, 2);
});

test('a lab reads maxRowBytes of its dataset from lab.json', async (t) => {
  const ws = path.dirname(fixtures(t)('tasks.jsonl', [row('a', 10), row('b', 5000)].join('\n') + '\n'));
  await initWorkspace(ws, { dataset: 'tasks.jsonl' });
  const labJson = path.join(ws, '.rollout-lab', 'lab.json');
  const config = JSON.parse(readFileSync(labJson, 'utf8')) as { datasets: Record<string, Record<string, unknown>> };
  config.datasets.tasks!.maxRowBytes = 2000;
  writeFileSync(labJson, JSON.stringify(config, null, 2));
  const lab = await Lab.open({ workspace: ws, env: {} });
  try {
    await assert.rejects(lab.loadDataset(), /tasks\.jsonl line 2 \(id "b"\): the row is .* over the limit of 2\.0 KiB \(2000 bytes\) per row/);
  } finally {
    await lab.close();
  }
});
