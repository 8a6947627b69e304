import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { REPO } from './codeServer';

export const SUITE_OUT = join(REPO, 'out', 'test', 'extension');
export const SUITE_INDEX = join(SUITE_OUT, 'index.js');

/**
 * Bundles the mocha suite for the extension host: the entry point and each
 * test file become their own CommonJS bundle in out/test/extension, so mocha
 * can load the files one by one. `vscode` is provided by the extension host
 * and `mocha` is required from node_modules, so the runner and the tests'
 * describe/it share one mocha instance.
 */
export async function buildSuite(): Promise<string> {
  const src = join(REPO, 'test', 'extension', 'suite');
  const entryPoints = ['index.ts', ...readdirSync(src).filter((f) => f.endsWith('.test.ts'))].map((f) => join(src, f));
  rmSync(SUITE_OUT, { recursive: true, force: true });
  await esbuild.build({
    entryPoints,
    outdir: SUITE_OUT,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'inline',
    logLevel: 'warning',
    mainFields: ['module', 'main'],
    external: ['vscode', 'mocha'],
  });
  return SUITE_INDEX;
}
