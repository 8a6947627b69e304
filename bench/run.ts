import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { errorMessage } from '../src/core/errors';
import { missingPrerequisite, skippedResults, type Bench, type BenchResult } from './harness';

const args = process.argv.slice(2);
const json = args.includes('--json');
const filters = args.filter((a) => !a.startsWith('--'));

function fmt(n: number | null): string {
  if (n === null) return '-';
  return Math.abs(n) >= 100 ? n.toFixed(0) : n.toPrecision(3);
}

async function main(): Promise<void> {
  const files = readdirSync(__dirname).filter((f) => f.endsWith('.bench.ts')).sort();
  const all: BenchResult[] = [];
  for (const f of files) {
    const mod = (await import(join(__dirname, f))) as { bench: Bench };
    const b = mod.bench;
    if (filters.length && !b.names.some((n) => filters.some((p) => n.startsWith(p)))) continue;
    let results: BenchResult[];
    try {
      results = await b.run();
    } catch (err) {
      // A machine without what a bench needs (Chromium for the webview figures): say so for each of its figures and go on.
      const reason = missingPrerequisite(err);
      if (reason === null) {
        process.stderr.write(`${f} failed: ${errorMessage(err)}\n`);
        process.exitCode = 1;
        continue;
      }
      const names = filters.length ? b.names.filter((n) => filters.some((p) => n.startsWith(p))) : b.names;
      results = skippedResults(names, reason);
    }
    for (const r of results) {
      all.push(r);
      if (json) {
        process.stdout.write(JSON.stringify({ name: r.name, unit: r.unit, value: r.value, baseline: r.baseline, ratio: r.ratio, ...(r.skipped ? { skipped: r.skipped } : {}) }) + '\n');
      } else if (r.skipped) {
        process.stdout.write(`${r.name.padEnd(22)} skipped: ${r.skipped}\n`);
      } else {
        process.stdout.write(
          `${r.name.padEnd(22)} ${fmt(r.value).padStart(12)} ${r.unit.padEnd(10)} baseline ${fmt(r.baseline).padStart(12)}  ratio ${fmt(r.ratio).padStart(7)}  ${r.note ?? ''}\n`,
        );
      }
    }
  }
  if (!all.length) {
    process.stderr.write(`no benchmark matched ${filters.join(' ')}\n`);
    process.exitCode = 2;
  }
}

void main();
