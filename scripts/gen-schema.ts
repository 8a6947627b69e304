/**
 * Writes the JSON Schemas generated from the zod schemas: media/lab.schema.json
 * (lab.json, for the editor) and python-trainer/rollout_trainer/job_spec.schema.json
 * (the training job spec, which python-trainer validates against).
 *   node --import tsx scripts/gen-schema.ts          write them
 *   node --import tsx scripts/gen-schema.ts --check  exit 1 if one is out of date (CI)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { labConfigJsonSchemaText } from '../src/core/config/jsonSchema';
import { jobSpecJsonSchemaText } from '../src/core/train/jobs/jobSpec';

const root = path.resolve(__dirname, '..');
const targets: Array<[string, string]> = [
  [path.join(root, 'media', 'lab.schema.json'), labConfigJsonSchemaText()],
  [path.join(root, 'python-trainer', 'rollout_trainer', 'job_spec.schema.json'), jobSpecJsonSchemaText()],
];

let stale = 0;
for (const [target, text] of targets) {
  if (process.argv.includes('--check')) {
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // A missing file is out of date too.
    }
    if (current !== text) {
      console.error(`${target} is out of date — run: npm run schema`);
      stale++;
    } else console.log(`${target} is up to date`);
  } else {
    writeFileSync(target, text);
    console.log(`wrote ${target}`);
  }
}
process.exit(stale ? 1 : 0);
