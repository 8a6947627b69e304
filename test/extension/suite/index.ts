import { existsSync, mkdirSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import * as vscode from 'vscode';
import Mocha from 'mocha';
import { collectedMetrics, RESULTS_ENV, SUITE_MODE_FRESH, type SuiteResults, type TestResult } from './results';

/**
 * The extension-test entry point VS Code calls inside the extension host
 * (`extensionTestsPath`), under code-server here and @vscode/test-electron
 * elsewhere. It picks the test files for the workspace it was opened on,
 * runs them with mocha 10 and writes the results as JSON for the driver,
 * because under code-server the host's stdout goes nowhere a driver can read.
 */
export function run(): Promise<void> {
  const here = __dirname;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  // An empty folder runs the first-use tests (Initialize Lab); an initialized one runs everything else.
  const fresh = folder !== undefined && !existsSync(join(folder, '.rollout-lab', 'lab.json'));
  const files = readdirSync(here)
    .filter((f) => f.endsWith('.test.js'))
    .filter((f) => (fresh ? f.startsWith(SUITE_MODE_FRESH) : !f.startsWith(SUITE_MODE_FRESH)))
    .sort();
  const mocha = new Mocha({ ui: 'bdd', color: false, timeout: 120_000, reporter: 'spec' });
  // Text a title contains, or /a regular expression/ (several tests at once: /first use|hasLab|Dry Run/).
  const grep = process.env.ROLLOUT_LAB_TEST_GREP;
  if (grep) mocha.grep(/^\/.+\/$/.test(grep) ? new RegExp(grep.slice(1, -1)) : grep);
  for (const f of files) mocha.addFile(join(here, f));

  const tests: TestResult[] = [];
  const resultsFile = process.env[RESULTS_ENV] ?? resolve(here, '../../../test-results/extension/results.json');
  const write = (extra: Pick<SuiteResults, 'done' | 'error'>): void => {
    const results: SuiteResults = {
      mode: fresh ? 'fresh' : 'initialized',
      workspace: folder ?? null,
      vscodeVersion: vscode.version,
      files,
      tests,
      passed: tests.filter((t) => t.state === 'passed').length,
      failed: tests.filter((t) => t.state === 'failed').length,
      pending: tests.filter((t) => t.state === 'pending').length,
      metrics: collectedMetrics(),
      ...extra,
    };
    mkdirSync(dirname(resultsFile), { recursive: true });
    // Written to a temporary name and renamed, so the driver never reads half a file.
    writeFileSync(`${resultsFile}.part`, JSON.stringify(results, null, 2));
    renameSync(`${resultsFile}.part`, resultsFile);
  };

  return new Promise<void>((resolvePromise, reject) => {
    try {
      const runner = mocha.run((failures) => {
        write({ done: true });
        if (failures > 0) reject(new Error(`${failures} extension test${failures > 1 ? 's' : ''} failed`));
        else resolvePromise();
      });
      runner.on('pass', (t) => tests.push({ title: t.fullTitle(), state: 'passed', durationMs: t.duration ?? null }));
      runner.on('fail', (t, err: Error) => tests.push({ title: t.fullTitle(), state: 'failed', durationMs: t.duration ?? null, error: `${err?.stack ?? err}` }));
      runner.on('pending', (t) => tests.push({ title: t.fullTitle(), state: 'pending', durationMs: null }));
    } catch (err) {
      write({ done: true, error: `${(err as Error)?.stack ?? err}` });
      reject(err);
    }
  });
}
