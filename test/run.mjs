// Finds the test files (Node 20's runner takes no globs) and runs them with node:test: `node test/run.mjs [DIR|FILE ...]`.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const passthrough = process.argv.slice(2).filter((a) => a.startsWith('--'));
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts')) files.push(p);
  }
};
// A folder is searched for *.test.ts files; a file is run as it is.
for (const r of roots.length ? roots : ['test/unit', 'test/e2e']) if (statSync(r).isDirectory()) walk(r); else files.push(r);
// A --test-concurrency=N among the arguments overrides the default of one file at a time.
const concurrency = passthrough.some((a) => a.startsWith('--test-concurrency')) ? [] : ['--test-concurrency=1'];
const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', ...concurrency, ...passthrough, ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
