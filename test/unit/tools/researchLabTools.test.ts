import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { loadDataset } from '../../../src/core/data/dataset';
import type { Task } from '../../../src/core/data/tasks';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../../../src/core/graph/tools/defaultTables';
import { createLookupTable } from '../../../src/core/graph/tools/lookup';
import { researchLabTools, type ResearchLabToolDeps } from '../../../src/core/graph/tools/researchLabTools';
import { datasetSearchProvider } from '../../../src/core/graph/tools/search';

const PUBMEDQA = path.resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

let tasksPromise: Promise<Task[]> | undefined;
async function deps(extra: Partial<ResearchLabToolDeps> = {}): Promise<{ tasks: Task[]; deps: ResearchLabToolDeps }> {
  const tasks = await (tasksPromise ??= loadDataset(PUBMEDQA));
  return {
    tasks,
    deps: {
      search: datasetSearchProvider(tasks),
      proteins: createLookupTable(DEFAULT_PROTEIN_TABLE),
      geneOntology: createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE),
      topK: 3,
      ...extra,
    },
  };
}

test('the four tools have the reference names and JSON-schema arguments', async () => {
  const tools = researchLabTools((await deps()).deps);
  assert.deepEqual(Object.keys(tools), ['pubmed_search', 'clinical_trials_search', 'protein_lookup', 'gene_ontology_lookup']);
  for (const [name, t] of Object.entries(tools)) {
    assert.equal(t.name, name);
    assert.ok(t.description.length > 40);
  }
});

test('pubmed_search returns compact JSON hits and hides the current task by default', async () => {
  const { tasks, deps: d } = await deps();
  const own = tasks[5];
  const hidden = researchLabTools({ ...d, currentTaskId: own.id });
  const out = JSON.parse(await hidden.pubmed_search.invoke({ query: own.goal }));
  assert.equal(out.query, own.goal);
  assert.equal(out.results.length, 3, 'topK from deps');
  assert.ok(!out.results.some((h: { id: string }) => h.id === own.id));
  assert.deepEqual(Object.keys(out.results[0]), ['id', 'title', 'snippet', 'score', 'source']);

  const shown = researchLabTools({ ...d, currentTaskId: own.id, excludeCurrentTask: false });
  const out2 = JSON.parse(await shown.pubmed_search.invoke({ query: own.goal, max_results: 1 }));
  assert.equal(out2.results.length, 1);
  assert.equal(out2.results[0].id, own.id);

  const none = JSON.parse(await hidden.clinical_trials_search.invoke({ query: 'xyzzy plugh' }));
  assert.deepEqual(none.results, []);
  assert.match(none.note, /no matching documents/);
});

test('lookups return the record; an unknown name or bad arguments throw', async () => {
  const tools = researchLabTools((await deps()).deps);
  const abeta = JSON.parse(await tools.protein_lookup.invoke({ name: 'Aβ' }));
  assert.equal(abeta.match, 'exact');
  assert.equal(abeta.entries[0].name, 'amyloid-beta');
  assert.ok(abeta.entries[0].drugs.includes('lecanemab'));
  assert.equal(abeta.entries[0].aliases, undefined, 'aliases are left out of the answer');
  const go = JSON.parse(await tools.gene_ontology_lookup.invoke({ term: 'GO:0001525' }));
  assert.equal(go.entries[0].name, 'angiogenesis');
  await assert.rejects(tools.protein_lookup.invoke({ name: 'kryptonite' }), /protein "kryptonite" not found; known entries: amyloid-beta/);
  await assert.rejects(tools.pubmed_search.invoke({ query: 'tau', max_results: 500 } as never));
  await assert.rejects(tools.pubmed_search.invoke({ query: '' }));
});

test('through a real LangGraph ToolNode, a failing tool becomes a ToolMessage with status "error"', async () => {
  const tools = researchLabTools((await deps()).deps);
  const node = new ToolNode(Object.values(tools));
  const call = new AIMessage({
    content: '',
    tool_calls: [
      { id: 'c1', name: 'protein_lookup', args: { name: 'TREM2' }, type: 'tool_call' },
      { id: 'c2', name: 'protein_lookup', args: { name: 'kryptonite' }, type: 'tool_call' },
      { id: 'c3', name: 'gene_ontology_lookup', args: {}, type: 'tool_call' },
    ],
  });
  const result = (await node.invoke({ messages: [call] })) as { messages: ToolMessage[] };
  const byId = new Map(result.messages.map((m) => [m.tool_call_id, m]));
  assert.equal(byId.get('c1')?.status, 'success');
  assert.equal(JSON.parse(String(byId.get('c1')?.content)).entries[0].symbol, 'TREM2');
  assert.equal(byId.get('c2')?.status, 'error');
  assert.match(String(byId.get('c2')?.content), /kryptonite" not found/);
  assert.equal(byId.get('c3')?.status, 'error', 'missing arguments are a tool error too');
});
