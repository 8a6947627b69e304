// Bundles the extension host entry (vscode stays external) and the CLI.
import { copyFileSync, mkdirSync } from 'node:fs';
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const production = process.argv.includes('--production');

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  // jsonc-parser's CommonJS entry loads files by computed paths esbuild cannot follow; its ESM entry bundles.
  mainFields: ['module', 'main'],
  // sql.js ships a wasm file it locates next to its JS; keep it a runtime dependency.
  external: ['vscode', 'esbuild', 'better-sqlite3'],
};

// One small browser bundle per panel; webviews load nothing remote.
const webview = {
  bundle: true,
  platform: 'browser',
  target: 'chrome120',
  format: 'iife',
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
  entryPoints: {
    traceExplorer: 'webview/traceExplorer/main.ts',
    graphView: 'webview/graphView/main.ts',
    rewardCurve: 'webview/rewardCurve/main.ts',
    rewardWeights: 'webview/rewardWeights/main.ts',
    evalReport: 'webview/evalReport/main.ts',
    comparison: 'webview/comparison/main.ts',
    traceDiff: 'webview/traceDiff/main.ts',
    rolloutsTable: 'webview/rolloutsTable/main.ts',
    trainingCurves: 'webview/trainingCurves/main.ts',
  },
  outdir: 'dist/webview',
};

const builds = [
  { ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js' },
  { ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js' },
  // The worker thread a user's module runs in (graph, reward, simulator answers, search provider), beside both.
  { ...common, entryPoints: ['src/core/lab/moduleWorker.ts'], outfile: 'dist/moduleWorker.js' },
  webview,
];

// sql.js loads its wasm from beside the bundle at run time.
mkdirSync('dist', { recursive: true });
copyFileSync('node_modules/sql.js/dist/sql-wasm.wasm', 'dist/sql-wasm.wasm');
// Codicons for the panels (their CSS loads the font from beside it).
mkdirSync('dist/webview', { recursive: true });
for (const f of ['codicon.css', 'codicon.ttf']) copyFileSync(`node_modules/@vscode/codicons/dist/${f}`, `dist/webview/${f}`);

if (watch) {
  for (const b of builds) await (await esbuild.context(b)).watch();
} else {
  await Promise.all(builds.map((b) => esbuild.build(b)));
}
