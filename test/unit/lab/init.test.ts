import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PUBMEDQA_SHARED_PATH } from '../../../src/core/lab/labTemplates';
import { initWorkspace } from '../../../src/core/lab/init';
import { labConfigJsonSchemaText } from '../../../src/core/config/jsonSchema';
import { loadConfig } from '../../../src/core/config/loader';
import { loadDataset } from '../../../src/core/data/dataset';
import { UsageError } from '../../../src/core/errors';
import { RESEARCH_LAB_AGENTS } from '../../../src/core/graph/researchLab/outputs';
import { DEFAULT_PROMPTS } from '../../../src/core/graph/researchLab/prompts';
import { loadLookupTable } from '../../../src/core/graph/tools/lookup';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';

/** A fresh folder one level inside a temporary one, so that nothing (no ../shared) sits beside it but what a test puts there. */
function tempDir(t: { after: (fn: () => void) => void }): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'rl-init-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const dir = path.join(root, 'ws');
  mkdirSync(dir);
  return dir;
}

const EXPECTED = [
  '.rollout-lab/lab.json',
  '.rollout-lab/lab.schema.json',
  ...RESEARCH_LAB_AGENTS.map((a) => `.rollout-lab/prompts/${a}.md`),
  '.rollout-lab/data/proteins.json',
  '.rollout-lab/data/gene_ontology.json',
  '.rollout-lab/data/pubmedqa-sample.json',
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
  assert.deepEqual(config.datasets, { 'pubmedqa-sample': { path: '.rollout-lab/data/pubmedqa-sample.json', format: 'auto', trainFraction: 0.8 } }, 'no shared data beside this workspace: the bundled sample');
  assert.equal(config.runner.dataset, undefined, 'the only dataset is the default: lab.json can replace "datasets" without touching the runner');
  assert.deepEqual(r.dataset, { name: 'pubmedqa-sample', path: '.rollout-lab/data/pubmedqa-sample.json', source: 'sample', runnerDefault: false });
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

test('the full PubMedQA set is configured when ../shared holds it, the bundled sample otherwise', async (t) => {
  const root = tempDir(t);
  const ws = path.join(root, 'project');
  const shared = path.resolve(ws, PUBMEDQA_SHARED_PATH);
  mkdirSync(path.dirname(shared), { recursive: true });
  writeFileSync(shared, JSON.stringify({ '1': { QUESTION: 'Q?', CONTEXTS: ['C.'], final_decision: 'yes' } }));
  const r = await initWorkspace(ws);
  const { config } = await loadConfig(ws);
  assert.deepEqual(config.datasets, { pubmedqa: { path: PUBMEDQA_SHARED_PATH, format: 'auto', trainFraction: 0.8 } });
  assert.equal(config.runner.dataset, 'pubmedqa');
  assert.equal(r.dataset?.source, 'shared');
  assert.equal(existsSync(path.join(ws, '.rollout-lab', 'data', 'pubmedqa-sample.json')), false, 'no copy of the sample beside the full set');

  // Without ../shared: the sample, copied into the lab, loads and runs as 160 train / 40 val tasks.
  const bare = tempDir(t);
  await initWorkspace(bare);
  const lab = await Lab.open({ workspace: bare, env: {} });
  try {
    const ds = await lab.loadDataset();
    assert.equal(ds.tasks.length, 200);
    const decisions = (split: 'train' | 'val') => new Set(lab.selectTasks(ds, { split }).map((task) => task.expectedDecision));
    assert.deepEqual(decisions('train'), new Set(['yes', 'no', 'maybe']));
    assert.deepEqual(decisions('val'), new Set(['yes', 'no', 'maybe']));
    const val = lab.selectTasks(ds, { split: 'val' });
    assert.equal(val.length, 40);
    const r = await runRollouts(await lab.environment(ds.tasks), { tasks: val.slice(0, 1), samples: 1, concurrency: 1, params: {} });
    assert.equal(r.rollouts[0]!.status, 'succeeded', r.rollouts[0]!.error ?? '');
  } finally {
    await lab.close();
  }

  // PubMedQA is the research lab's: a lab for the user's own graph does not get it unasked.
  const own = path.join(root, 'own');
  mkdirSync(own);
  writeFileSync(
    path.join(own, 'graph.ts'),
    [
      "import { Annotation, END, START, StateGraph } from '@langchain/langgraph';",
      'const S = Annotation.Root({ q: Annotation<string>() });',
      "export default (ctx) => (ctx.model('Writer'), new StateGraph(S).addNode('Writer', async () => ({})).addEdge(START, 'Writer').addEdge('Writer', END).compile());",
    ].join('\n'),
  );
  await initWorkspace(own, { graph: 'graph.ts' });
  assert.deepEqual((await loadConfig(own)).config.datasets, {});
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

const EXAMPLE_GRAPH = path.resolve(__dirname, '../../../examples/custom-graph/graph.ts');
const MODULE_EXPECTED = [
  '.rollout-lab/lab.json',
  '.rollout-lab/lab.schema.json',
  '.rollout-lab/prompts/Writer.md',
  '.rollout-lab/prompts/Critic.md',
  '.rollout-lab/.gitignore',
];

test('init --graph sets the lab up for the module: only its agents, a prompt file each, no research-lab tables or criteria', async (t) => {
  const ws = tempDir(t);
  copyFileSync(EXAMPLE_GRAPH, path.join(ws, 'graph.ts'));
  writeFileSync(path.join(ws, 'tasks.jsonl'), '{"id":"a","goal":"G?","context":"C."}\n');
  const r = await initWorkspace(ws, { graph: 'graph.ts', dataset: 'tasks.jsonl' });
  assert.deepEqual(r.created, MODULE_EXPECTED);
  assert.deepEqual(r.agents, { names: ['Writer', 'Critic'], source: 'factory' });
  const { config } = await loadConfig(ws);
  assert.deepEqual(config.graph, { kind: 'module', module: 'graph.ts', export: 'default' });
  assert.deepEqual(Object.keys(config.agents), ['Writer', 'Critic']);
  assert.equal(config.agents.Writer!.prompt, 'prompts/Writer.md');
  assert.deepEqual(config.agents.Writer!.tools, []);
  assert.deepEqual(Object.keys(config.reward.criteria), ['quality'], 'no research-lab judge criteria');
  assert.ok(config.models[config.reward.judge.model]);
  for (const m of Object.values(config.models)) assert.equal(m.baseUrl, undefined, 'models start on the simulated endpoint');
  assert.equal(config.runner.dataset, 'tasks');
  const lab = path.join(ws, '.rollout-lab');
  assert.ok(!existsSync(path.join(lab, 'data')), 'no research-lab tool tables');
  // The example exports no prompts: a placeholder says what to write.
  assert.match(readFileSync(path.join(lab, 'prompts', 'Writer.md'), 'utf8'), /^You are the Writer agent\. Replace this text with Writer's instructions.*ctx\.prompt\("Writer"\)/);

  writeFileSync(path.join(lab, 'prompts', 'Critic.md'), 'my critic prompt\n');
  const again = await initWorkspace(ws, { graph: 'graph.ts' });
  assert.deepEqual(again.created, []);
  assert.deepEqual(again.skipped, MODULE_EXPECTED);
  assert.equal(readFileSync(path.join(lab, 'prompts', 'Critic.md'), 'utf8'), 'my critic prompt\n');
});

test('init --graph writes the prompts a module exports, and reads agents off the graph when no factory names them', async (t) => {
  const ws = tempDir(t);
  writeFileSync(
    path.join(ws, 'sql.ts'),
    [
      "import { Annotation, END, START, StateGraph } from '@langchain/langgraph';",
      "export const prompts = { SqlWriter: 'You write one SQLite query.', Reviewer: 'You check the query.' };",
      'const S = Annotation.Root({ q: Annotation<string>() });',
      'export function graph(ctx) {',
      "  const writer = ctx.model('SqlWriter');",
      "  const p = ctx.prompt('Reviewer');",
      "  return new StateGraph(S).addNode('write', async () => ({})).addEdge(START, 'write').addEdge('write', END).compile();",
      '}',
      "export const compiled = new StateGraph(S).addNode('Planner', async () => ({})).addNode('Planner_tools', async () => ({})).addEdge(START, 'Planner').addEdge('Planner', 'Planner_tools').addEdge('Planner_tools', END).compile();",
    ].join('\n'),
  );
  const r = await initWorkspace(ws, { graph: path.join(ws, 'sql.ts'), graphExport: 'graph' });
  assert.deepEqual(r.agents, { names: ['SqlWriter', 'Reviewer'], source: 'factory' });
  const lab = path.join(ws, '.rollout-lab');
  assert.equal(readFileSync(path.join(lab, 'prompts', 'SqlWriter.md'), 'utf8'), 'You write one SQLite query.\n');
  assert.equal(readFileSync(path.join(lab, 'prompts', 'Reviewer.md'), 'utf8'), 'You check the query.\n');
  assert.equal((await loadConfig(ws)).config.graph.export, 'graph');

  const nodes = tempDir(t);
  copyFileSync(path.join(ws, 'sql.ts'), path.join(nodes, 'sql.ts'));
  const fromNodes = await initWorkspace(nodes, { graph: 'sql.ts', graphExport: 'compiled' });
  assert.deepEqual(fromNodes.agents, { names: ['Planner'], source: 'graph nodes' });
});

test('init --graph: a missing module and an export that is not there are clear errors', async (t) => {
  const ws = tempDir(t);
  await assert.rejects(initWorkspace(ws, { graph: 'nope.ts' }), (err: unknown) => err instanceof UsageError && /graph module nope\.ts does not exist/.test(err.message));
  copyFileSync(EXAMPLE_GRAPH, path.join(ws, 'graph.ts'));
  await assert.rejects(initWorkspace(ws, { graph: 'graph.ts', graphExport: 'lab' }), /has no export "lab"; exports found: default/);
  assert.ok(!existsSync(path.join(ws, '.rollout-lab', 'lab.json')), 'nothing written');
});

test('a lab made by init --graph runs its graph offline, without research-lab tables; a graph that reads ctx.tools is told what is missing', async (t) => {
  const ws = tempDir(t);
  copyFileSync(EXAMPLE_GRAPH, path.join(ws, 'graph.ts'));
  writeFileSync(path.join(ws, 'tasks.jsonl'), '{"id":"a","goal":"Does aspirin lower colorectal cancer risk?","context":"A cohort of 20,000 adults."}\n');
  await initWorkspace(ws, { graph: 'graph.ts', dataset: 'tasks.jsonl' });
  const lab = await Lab.open({ workspace: ws, env: {} });
  try {
    const ds = await lab.loadDataset();
    const r = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {} });
    assert.equal(r.rollouts[0]!.status, 'succeeded', r.rollouts[0]!.error ?? '');
  } finally {
    await lab.close();
  }
  writeFileSync(path.join(ws, 'graph.ts'), "import { StateGraph, Annotation } from '@langchain/langgraph';\nexport default (ctx) => { const t = ctx.tools.pubmed_search; return new StateGraph(Annotation.Root({ x: Annotation() })).addNode('A', () => ({})).addEdge('__start__', 'A').compile(); };\n");
  const again = await Lab.open({ workspace: ws, env: {} });
  try {
    await assert.rejects(again.environment([]), /the graph reads ctx\.tools, the research-lab tools, but lookup table .*proteins\.json does not exist/);
  } finally {
    await again.close();
  }
});

test('the CLI takes init --graph FILE [--export NAME]', (t) => {
  const ws = tempDir(t);
  copyFileSync(EXAMPLE_GRAPH, path.join(ws, 'graph.ts'));
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.resolve(__dirname, '../../../src/cli/main.ts'), 'init', '--workspace', ws, ...args], { encoding: 'utf8' });
  const r = run('--graph', 'graph.ts', '--json');
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { created: string[]; agents: unknown };
  assert.deepEqual(out.agents, { names: ['Writer', 'Critic'], source: 'factory' });
  assert.deepEqual(out.created, MODULE_EXPECTED);
  const bad = run('--export', 'graph');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--export names an export of a graph module: pass it together with --graph FILE/);
});
