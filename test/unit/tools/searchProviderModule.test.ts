import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSearchProvider } from '../../../src/core/graph/tools/searchProviderModule';
import { researchLabTools } from '../../../src/core/graph/tools/researchLabTools';
import { createLookupTable } from '../../../src/core/graph/tools/lookup';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../../../src/core/graph/tools/defaultTables';

test('an external search provider module serves the literature tools, and its mistakes are clear', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-provider-'));
  try {
    const good = join(dir, 'provider.ts');
    writeFileSync(
      good,
      `import { z } from 'zod';
const Query = z.string().min(1);
export default {
  name: 'my-index',
  async search(query: string, opts: { topK: number; kind: string; excludeIds?: string[] }) {
    Query.parse(query);
    const hits = [1, 2, 3, 4].map((i) => ({ id: 'doc' + i, title: opts.kind + ' ' + query, snippet: 's' + i, score: 5 - i }));
    return hits.filter((h) => !(opts.excludeIds ?? []).includes(h.id));
  },
};`,
    );
    const provider = await loadSearchProvider(good);
    assert.equal(provider.name, 'my-index');
    const hits = await provider.search('tau', { topK: 2, kind: 'pubmed', excludeIds: ['doc1'] });
    assert.deepEqual(hits.map((h) => h.id), ['doc2', 'doc3']);
    assert.equal(hits[0]!.source, 'my-index');

    const tools = researchLabTools({
      search: provider,
      proteins: createLookupTable(DEFAULT_PROTEIN_TABLE),
      geneOntology: createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE),
      topK: 3,
      currentTaskId: 'doc4',
    });
    const out = String(await tools.clinical_trials_search.invoke({ query: 'APOE4' }));
    assert.match(out, /clinical_trials APOE4/);
    assert.doesNotMatch(out, /doc4/);

    const wrong = join(dir, 'wrong.ts');
    writeFileSync(wrong, `export default { name: 'w', async search() { return [{ nope: 1 }]; } };`);
    await assert.rejects((await loadSearchProvider(wrong)).search('x', { topK: 1, kind: 'pubmed' }), /wrong shape/);

    const notProvider = join(dir, 'not.ts');
    writeFileSync(notProvider, `export const x = 1;`);
    await assert.rejects(loadSearchProvider(notProvider), /must export/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
