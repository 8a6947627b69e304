import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runTests } from '@vscode/test-electron';
import { buildSuite } from './buildSuite';
import { REPO, makeScratch, removeScratch, runDriver } from './codeServer';
import { prepareWorkspaces, report, type Session } from './runExtensionTests';
import { RESULTS_ENV, type SuiteResults } from './suite/results';

/**
 * The same mocha suite under @vscode/test-electron, for a machine that can
 * download VS Code desktop (a developer laptop; on Linux without a display,
 * run it under xvfb-run). The suite, its workspaces and the printed results
 * are the ones the code-server driver uses.
 *
 *   node esbuild.mjs && node --import tsx test/extension/runWithTestElectron.ts
 *
 * VS Code's version defaults to 1.100.3 (the engines.vscode floor, as under
 * code-server); set VSCODE_TEST_VERSION=stable to try the newest.
 */
async function runOne(name: string, workspace: string, suiteIndex: string): Promise<Session> {
  const scratch = makeScratch(`rollout-lab-electron-${name}-`);
  const resultsFile = join(scratch.root, 'results.json');
  try {
    try {
      await runTests({
        version: process.env.VSCODE_TEST_VERSION ?? '1.100.3',
        extensionDevelopmentPath: REPO,
        extensionTestsPath: suiteIndex,
        extensionTestsEnv: { [RESULTS_ENV]: resultsFile },
        launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust', '--skip-welcome', '--skip-release-notes', '--user-data-dir', scratch.userData, '--extensions-dir', scratch.extensions],
      });
    } catch (err) {
      // A failing test makes VS Code exit non-zero; the results file says which. Without one, the run itself failed.
      if (!existsSync(resultsFile)) throw err;
    }
    if (!existsSync(resultsFile)) throw new Error(`VS Code exited without writing ${resultsFile}`);
    return { name, workspace, results: JSON.parse(readFileSync(resultsFile, 'utf8')) as SuiteResults };
  } finally {
    removeScratch(scratch);
  }
}

async function main(): Promise<number> {
  for (const f of ['dist/extension.js', 'dist/cli.js']) {
    if (!existsSync(join(REPO, f))) throw new Error(`${f} is missing: run "node esbuild.mjs" first`);
  }
  const suiteIndex = await buildSuite();
  const work = makeScratch('rollout-lab-electron-ws-');
  const sessions: Session[] = [];
  try {
    const ws = prepareWorkspaces(work.root);
    sessions.push(await runOne('empty', ws.empty, suiteIndex));
    sessions.push(await runOne('initialized', ws.initialized, suiteIndex));
  } finally {
    removeScratch(work);
  }
  return report(sessions, '@vscode/test-electron');
}

runDriver(main);
