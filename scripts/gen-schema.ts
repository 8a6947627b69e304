/**
 * Writes media/lab.schema.json from the zod config schema.
 *   node --import tsx scripts/gen-schema.ts          write it
 *   node --import tsx scripts/gen-schema.ts --check  exit 1 if it is out of date (CI)
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { labConfigJsonSchemaText } from '../src/core/config/jsonSchema';

const target = path.resolve(__dirname, '..', 'media', 'lab.schema.json');
const text = labConfigJsonSchemaText();

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // A missing file is out of date too.
  }
  if (current !== text) {
    console.error(`${target} is out of date — run: node --import tsx scripts/gen-schema.ts`);
    process.exit(1);
  }
  console.log(`${target} is up to date`);
} else {
  writeFileSync(target, text);
  console.log(`wrote ${target}`);
}
