import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../../src/core/errors';
import { DEFAULT_GENE_ONTOLOGY_TABLE, DEFAULT_PROTEIN_TABLE } from '../../../src/core/graph/tools/defaultTables';
import { createLookupTable, loadLookupTable, lookupKey, type LookupResult } from '../../../src/core/graph/tools/lookup';

const proteins = createLookupTable(DEFAULT_PROTEIN_TABLE);
const go = createLookupTable(DEFAULT_GENE_ONTOLOGY_TABLE);

function names(r: LookupResult): string[] {
  assert.ok(r.found, r.found ? '' : r.message);
  return r.entries.map((e) => e.name);
}

test('the default protein table covers the reference proteins', () => {
  for (const q of ['amyloid-beta', 'tau', 'APOE4', 'TREM2', 'GLP-1', 'alpha-synuclein', 'BDNF', 'TNF-alpha', 'IL-6', 'insulin', 'p53', 'EGFR', 'PCSK9', 'VEGF']) {
    const r = proteins.lookup(q);
    assert.ok(r.found && r.match === 'exact', q);
  }
});

test('names match whatever the case, punctuation, Greek letters or alias', () => {
  for (const q of ['Abeta', 'amyloid beta', 'Aβ', 'AMYLOID-BETA', 'Aß42', 'APP']) assert.deepEqual(names(proteins.lookup(q)), ['amyloid-beta'], q);
  assert.deepEqual(names(proteins.lookup('MAPT')), ['tau']);
  assert.deepEqual(names(proteins.lookup('TNF-α')), ['TNF-alpha']);
  assert.deepEqual(names(proteins.lookup('α-synuclein')), ['alpha-synuclein']);
  assert.deepEqual(names(proteins.lookup('glp1r')), ['GLP-1 receptor']);
  assert.deepEqual(names(proteins.lookup('ApoE ε4')), ['APOE4']);
  assert.equal(lookupKey(' Amyloid β '), 'amyloidbeta');
});

test('a query with more words finds the known name inside it, as whole words', () => {
  const r = proteins.lookup('tau hyperphosphorylation in neurons');
  assert.ok(r.found && r.match === 'partial');
  assert.deepEqual(names(r), ['tau']);
  assert.equal(proteins.lookup('applied statistics').found, false, '"APP" is not found inside "applied"');
});

test('GO terms are found by id, name, alias or annotated gene symbol', () => {
  assert.deepEqual(names(go.lookup('GO:0006915')), ['apoptotic process']);
  assert.deepEqual(names(go.lookup('apoptosis')), ['apoptotic process']);
  const trem2 = go.lookup('TREM2');
  assert.ok(trem2.found && trem2.entries.every((e) => (e.genes as string[]).includes('TREM2')));
  assert.ok(names(trem2).includes('microglial cell activation'));
  assert.ok(go.entries.every((e) => /^GO:\d{7}$/.test(e.id as string)));
});

test('an unknown name lists the known entries', () => {
  const r = proteins.lookup('unobtainium');
  assert.equal(r.found, false);
  assert.match(r.found ? '' : r.message, /^protein "unobtainium" not found; known entries: amyloid-beta, tau, APOE4, TREM2/);
  const g = go.lookup('GO:9999999');
  assert.match(g.found ? '' : g.message, /^GO term "GO:9999999" not found; known entries: apoptotic process/);
});

test('table files: a bad entry names the file, the path and the line; wrong kind and bad JSON too', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rl-lookup-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, value: unknown) => {
    const file = path.join(dir, name);
    writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
    return file;
  };
  const good = write('proteins.json', DEFAULT_PROTEIN_TABLE);
  assert.equal((await loadLookupTable(good)).entries.length, DEFAULT_PROTEIN_TABLE.entries.length);
  assert.equal((await loadLookupTable(good)).file, good);

  const broken = structuredClone(DEFAULT_PROTEIN_TABLE) as any;
  delete broken.entries[2].function;
  const text = JSON.stringify(broken, null, 2);
  const bad = write('bad.json', text);
  // The entry's "{" is on the line before its name; findIndex is 0-based, so it gives that line 1-based.
  const entryLine = text.split('\n').findIndex((l) => l.includes('"name": "APOE4"'));
  await assert.rejects(loadLookupTable(bad), (err: unknown) => {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.file, bad);
    assert.match(err.message, new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} line ${entryLine}: entries\\[2\\]: `));
    assert.match(err.message, /entries\[2\]: missing "function" \(expected string\)/);
    assert.match(err.message, /rollout-lab init --force/);
    return true;
  });
  await assert.rejects(loadLookupTable(good, 'gene_ontology'), /is a "protein" table, expected "gene_ontology"/);
  await assert.rejects(loadLookupTable(write('syntax.json', '{"kind": "protein",\n "entries": [}')), /syntax\.json line 2, column \d+: /);
  await assert.rejects(loadLookupTable(write('kind.json', { kind: 'enzymes', entries: [] })), /kind/);
  await assert.rejects(loadLookupTable(path.join(dir, 'missing.json')), /missing\.json does not exist — run `rollout-lab init`/);
});
