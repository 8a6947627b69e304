import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BUNDLED_SAMPLE_SIZE, BUNDLED_SAMPLE_SOURCE, bundledSampleFile, pubmedQaSample } from '../../../src/core/lab/bundledSample';

const REPO = path.resolve(__dirname, '../../..');
const PUBMEDQA = path.resolve(REPO, '../shared/data/pubmedqa/ori_pqal.json');

test('the shipped sample is the 200 lowest PubMed ids of ori_pqal.json, each item as the source has it, with its licence', () => {
  const file = bundledSampleFile();
  assert.equal(file, path.join(REPO, BUNDLED_SAMPLE_SOURCE));
  const shipped = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const full = JSON.parse(readFileSync(PUBMEDQA, 'utf8')) as Record<string, unknown>;
  assert.equal(Object.keys(shipped).length, BUNDLED_SAMPLE_SIZE);
  assert.deepEqual(shipped, pubmedQaSample(full), 'scripts/make-pubmedqa-sample.ts writes the same file again');
  const ids = Object.keys(shipped).map(Number);
  assert.ok(Object.keys(full).map(Number).filter((id) => !ids.includes(id)).every((id) => id > Math.max(...ids)), 'the lowest ids');
  const dir = path.dirname(file);
  assert.match(readFileSync(path.join(dir, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) 2019 pubmedqa/);
  assert.match(readFileSync(path.join(dir, 'README.md'), 'utf8'), /PubMedQA: A Dataset for Biomedical Research Question\s+Answering/);
});
