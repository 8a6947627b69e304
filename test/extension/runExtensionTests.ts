import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser } from 'playwright-core';
import { buildSuite } from './buildSuite';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  REPO,
  extensionHostLogTail,
  makeScratch,
  removeScratch,
  runDriver,
  skipUnlessRunnable,
  startCodeServer,
  workbenchUrl,
  writeUserSettings,
  type CodeServer,
  type ScratchDirs,
} from './codeServer';
import { RESULTS_ENV, type SuiteResults } from './suite/results';

/** Where the PubMedQA labeled set sits beside the repository (shared/ENVIRONMENT.md). */
export const PUBMEDQA = join(REPO, '..', 'shared', 'data', 'pubmedqa', 'ori_pqal.json');
/** How long one session may take before the driver gives up; the suite itself takes well under a minute. */
const SESSION_TIMEOUT_MS = Number(process.env.ROLLOUT_LAB_EXT_TIMEOUT_MS ?? 8 * 60_000);

/** Settings that keep a fresh workbench quiet: no welcome page, no update or telemetry traffic. */
export const QUIET_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'security.workspace.trust.enabled': false,
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'git.enabled': false,
};

/** Runs the CLI from dist/ (the same bundle a user installs) and fails loudly with its output. */
export function cli(args: string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(process.execPath, [join(REPO, 'dist', 'cli.js'), ...args], { encoding: 'utf8', env, timeout: 300_000 });
  if (r.status !== 0) throw new Error(`rollout-lab ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

export interface Session {
  name: string;
  workspace: string;
  results: SuiteResults;
}

/**
 * The two workspaces the suite runs on: an empty folder (first use:
 * Initialize Lab) and one initialized by the CLI on the PubMedQA set.
 */
export function prepareWorkspaces(root: string): { empty: string; initialized: string } {
  if (!existsSync(PUBMEDQA)) throw new Error(`the PubMedQA set is missing at ${PUBMEDQA} (shared/data beside the repository)`);
  const empty = join(root, 'fresh');
  const initialized = join(root, 'lab');
  mkdirSync(empty);
  mkdirSync(initialized);
  cli(['init', '--workspace', initialized, '--dataset', PUBMEDQA]);
  return { empty, initialized };
}

/**
 * One code-server, one headless Chromium page on the workbench with the
 * extension under development and the suite as extensionTestsPath. The
 * workbench closes the page when mocha ends; the suite has written its
 * results file by then.
 */
async function runSession(browser: Browser, name: string, workspace: string, suiteIndex: string): Promise<Session> {
  const scratch: ScratchDirs = makeScratch(`rollout-lab-ext-${name}-`);
  const resultsFile = join(scratch.root, 'results.json');
  writeUserSettings(scratch, QUIET_SETTINGS);
  let cs: CodeServer | null = null;
  const pageErrors: string[] = [];
  try {
    cs = await startCodeServer({ scratch, env: { [RESULTS_ENV]: resultsFile } });
    const server = cs;
    const payload: Array<[string, string]> = [
      ['extensionDevelopmentPath', `${server.remoteAuthority}${REPO}`],
      ['extensionTestsPath', `${server.remoteAuthority}${suiteIndex}`],
    ];
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      page.on('pageerror', (e) => pageErrors.push(String(e)));
      let closed = false;
      page.on('close', () => {
        closed = true;
      });
      await page.goto(workbenchUrl(server, workspace, payload));
      const deadline = Date.now() + SESSION_TIMEOUT_MS;
      for (;;) {
        if (existsSync(resultsFile)) {
          const results = JSON.parse(readFileSync(resultsFile, 'utf8')) as SuiteResults;
          if (results.done) return { name, workspace, results };
        }
        if (closed) {
          // The page closes right after the suite ends; give the rename a moment before calling it lost.
          await sleep(2000);
          if (existsSync(resultsFile)) continue;
          throw new Error('the workbench closed without a results file: the suite did not run or crashed before mocha started');
        }
        if (Date.now() > deadline) throw new Error(`no results from the extension-host suite after ${SESSION_TIMEOUT_MS / 1000} s`);
        await sleep(250);
      }
    } finally {
      await context.close().catch(() => undefined);
    }
  } catch (err) {
    const detail = [
      `--- code-server log (tail)\n${cs?.logTail() ?? '(not started)'}`,
      extensionHostLogTail(scratch),
      pageErrors.length ? `--- page errors\n${pageErrors.slice(-10).join('\n')}` : '',
    ].join('\n');
    throw new Error(`extension tests (${name} workspace): ${(err as Error).message}\n${detail}`);
  } finally {
    await cs?.stop();
    removeScratch(scratch);
  }
}

function printSession(s: Session, host: string): void {
  console.log(`\nextension host: VS Code ${s.results.vscodeVersion} (${host}), ${s.name} workspace ${s.workspace}`);
  for (const t of s.results.tests) {
    const mark = t.state === 'passed' ? '✔' : t.state === 'failed' ? '✖' : '-';
    console.log(`  ${mark} ${t.title}${t.state === 'pending' ? ' (pending)' : ''}`);
    if (t.error) console.log(t.error.split('\n').map((l) => `      ${l}`).join('\n'));
  }
  if (s.results.error) console.log(`  ✖ the suite could not start:\n${s.results.error}`);
  for (const [k, v] of Object.entries(s.results.metrics)) console.log(`  ${k}: ${v}`);
}

/**
 * Prints one line per test and the final "N passed, N failed" line, keeps
 * the results under test-results/extension/, and returns the exit code.
 */
export function report(sessions: Session[], host: string): number {
  for (const s of sessions) printSession(s, host);
  const passed = sessions.reduce((n, s) => n + s.results.passed, 0);
  const failed = sessions.reduce((n, s) => n + s.results.failed + (s.results.error ? 1 : 0), 0);
  const out = join(REPO, 'test-results', 'extension');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.json'), JSON.stringify(sessions, null, 2));
  console.log(`${passed} passed, ${failed} failed`);
  return failed > 0 || passed === 0 ? 1 : 0;
}

/** Builds the suite, runs it on an empty and on an initialized workspace, prints one line per test. */
export async function main(): Promise<number> {
  if (skipUnlessRunnable('extension-host tests (mocha in code-server)')) return 0;
  for (const f of ['dist/extension.js', 'dist/cli.js']) {
    if (!existsSync(join(REPO, f))) throw new Error(`${f} is missing: run "node esbuild.mjs" first (npm test does)`);
  }
  const suiteIndex = await buildSuite();
  const work = makeScratch('rollout-lab-ext-ws-');
  let browser: Browser | null = null;
  const sessions: Session[] = [];
  try {
    const ws = prepareWorkspaces(work.root);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    sessions.push(await runSession(browser, 'empty', ws.empty, suiteIndex));
    sessions.push(await runSession(browser, 'initialized', ws.initialized, suiteIndex));
  } finally {
    await browser?.close().catch(() => undefined);
    removeScratch(work);
  }
  return report(sessions, 'code-server');
}

if (require.main === module) runDriver(main);
