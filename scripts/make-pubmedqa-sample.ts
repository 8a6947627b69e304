/**
 * Writes data/pubmedqa-sample/pubmedqa-sample.json, the 200-item PubMedQA
 * sample the demo and `init` use when the full set is not beside the clone:
 * the items of PubMedQA's ori_pqal.json with the 200 lowest PubMed ids, in
 * ascending id order, each item exactly as the source has it.
 *   node --import tsx scripts/make-pubmedqa-sample.ts [path/to/ori_pqal.json]
 * (default: ../shared/data/pubmedqa/ori_pqal.json beside the repository)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUNDLED_SAMPLE_SIZE, pubmedQaSample } from '../src/core/lab/bundledSample';

const root = path.resolve(__dirname, '..');
const source = path.resolve(process.argv[2] ?? path.join(root, '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json'));
const items = JSON.parse(readFileSync(source, 'utf8')) as Record<string, unknown>;
const target = path.join(root, 'data', 'pubmedqa-sample', 'pubmedqa-sample.json');
writeFileSync(target, `${JSON.stringify(pubmedQaSample(items), null, 2)}\n`);
console.log(`wrote ${BUNDLED_SAMPLE_SIZE} items of ${source} to ${path.relative(root, target)}`);
