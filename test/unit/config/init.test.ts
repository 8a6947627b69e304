import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PUBMEDQA_SHARED_PATH } from '../../../src/core/config/defaults';
import { initWorkspace } from '../../../src/core/config/init';
import { labConfigJsonSchemaText } from '../../../src/core/config/jsonSchema';
import { loadConfig } from '../../../src/core/config/loader';
import { loadDataset } from '../../../src/core/data/dataset';
import { UsageError } from '../../../src/core/errors';
import { RESEARCH_LAB_AGENTS } from '../../../src/core/graph/researchLab/outputs';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { loadLookupTable } from '../../../src/core/graph/tools/lookup';

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rl-init-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const EXPECTED = [
  '.rollout-lab/lab.json',
  '.rollout-lab/lab.schema.json',
  ...RESEARCH_LAB_AGENTS.map((a) => `.rollout-lab/prompts/${a}.md`),
  '.rollout-lab/data/proteins.json',
  '.rollout-lab/data/gene_ontology.json',
  '.rollout-lab/.gitignore',
];

test('init creates the config, schema copy, prompts, tables and .gitignore, and they load', async (t) => {
  const ws = tempDir(t);
  const r = await initWorkspace(ws);
  assert.deepEqual(r.created, EXPECTED);
  assert.deepEqual(r.skipped, []);
  const lab = path.join(ws, '.rollout-lab');
  const raw = JSON.parse(readFileSync(path.join(lab, 'lab.json'), 'utf8'));
  assert.equal(raw.$schema, './lab.schema.json');
  assert.equal(readFileSync(path.join(lab, 'lab.schema.json'), 'utf8'), labConfigJsonSchemaText());
  for (const agent of RESEARCH_LAB_AGENTS) {
    assert.equal(readFileSync(path.join(lab, 'prompts', `${agent}.md`), 'utf8').trim(), DEFAULT_PROMPTS[agent].trim());
  }
  assert.match(readFileSync(path.join(lab, '.gitignore'), 'utf8'), /^store\/$/m);
  const { config } = await loadConfig(ws);
  assert.deepEqual(config.datasets, {}, 'no shared data beside this workspace, so no dataset');
  assert.equal(config.runner.dataset, undefined);
  assert.equal((await loadLookupTable(path.join(lab, config.tools.proteinTable), 'protein')).kind, 'protein');
  assert.equal((await loadLookupTable(path.join(lab, config.tools.geneOntologyTable), 'gene_ontology')).kind, 'gene_ontology');
});

test('init is idempotent and keeps user edits unless forced', async (t) => {
  const ws = tempDir(t);
  await initWorkspace(ws);
  const prompt = path.join(ws, '.rollout-lab', 'prompts', 'Supervisor.md');
  writeFileSync(prompt, 'my own supervisor prompt\n');
  const again = await initWorkspace(ws);
  assert.deepEqual(again.created, []);
  assert.deepEqual(again.skipped, EXPECTED);
  assert.equal(readFileSync(prompt, 'utf8'), 'my own supervisor prompt\n');

  const forced = await initWorkspace(ws, { force: true });
  assert.deepEqual(forced.created, ['.rollout-lab/prompts/Supervisor.md'], 'only the changed file is rewritten');
  assert.equal(readFileSync(prompt, 'utf8').trim(), DEFAULT_PROMPTS.Supervisor.trim());
});

test('a stale schema copy is refreshed without --force (it is generated)', async (t) => {
  const ws = tempDir(t);
  await initWorkspace(ws);
  const schema = path.join(ws, '.rollout-lab', 'lab.schema.json');
  writeFileSync(schema, '{}');
  const r = await initWorkspace(ws);
  assert.deepEqual(r.created, ['.rollout-lab/lab.schema.json']);
  assert.equal(readFileSync(schema, 'utf8'), labConfigJsonSchemaText());
});

test('the PubMedQA dataset is configured only when ../shared holds it', async (t) => {
  const root = tempDir(t);
  const ws = path.join(root, 'project');
  const shared = path.resolve(ws, PUBMEDQA_SHARED_PATH);
  mkdirSync(path.dirname(shared), { recursive: true });
  writeFileSync(shared, JSON.stringify({ '1': { QUESTION: 'Q?', CONTEXTS: ['C.'], final_decision: 'yes' } }));
  await initWorkspace(ws);
  const { config } = await loadConfig(ws);
  assert.deepEqual(config.datasets.pubmedqa, { path: PUBMEDQA_SHARED_PATH, format: 'auto', trainFraction: 0.8 });
  assert.equal(config.runner.dataset, 'pubmedqa');
});

test('--dataset takes a file relative to the workspace and names the dataset after it', async (t) => {
  const ws = tempDir(t);
  writeFileSync(path.join(ws, 'my-tasks.jsonl'), '{"id":"a","goal":"G?","context":"C."}\n');
  await initWorkspace(ws, { dataset: 'my-tasks.jsonl' });
  const { config } = await loadConfig(ws);
  assert.equal(config.runner.dataset, 'my-tasks');
  assert.equal(config.datasets['my-tasks'].path, 'my-tasks.jsonl');
  const tasks = await loadDataset(path.resolve(ws, config.datasets['my-tasks'].path));
  assert.equal(tasks[0].goal, 'G?');
  await assert.rejects(initWorkspace(tempDir(t), { dataset: 'nope.jsonl' }), (err: unknown) => err instanceof UsageError && /nope\.jsonl does not exist/.test(err.message));
});
