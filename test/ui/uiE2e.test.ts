import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  CODE_SERVER,
  REPO,
  extensionHostLogTail,
  makeScratch,
  missingPrerequisite,
  removeScratch,
  scratchEnv,
  startCodeServer,
  workbenchUrl,
  writeUserSettings,
  type CodeServer,
  type ScratchDirs,
} from '../extension/codeServer';
import { cli, PUBMEDQA, QUIET_SETTINGS } from '../extension/runExtensionTests';
import { answerPrompts, clearNotifications, openViewContainer, runCommand, screenshot, sideBarTreeRows, visibleWebview, waitForNotification, waitForWorkbench, type QuickInputState } from './workbench';

const OUT = join(REPO, 'test-results', 'ui');
const THEMES = { dark: 'Default Dark Modern', light: 'Default Light Modern' } as const;

const missing = missingPrerequisite();
if (missing && !process.env.CI) {
  console.log(`${'!'.repeat(78)}\n!! SKIPPED UI end-to-end tests (Playwright + code-server): ${missing}\n!! (CI is unset, so this is a skip; in CI it fails.)\n${'!'.repeat(78)}`);
}

/**
 * Installs the extension the way a user gets it: the .vsix that `npm run
 * package` builds (production bundles, .vscodeignore applied), installed with
 * code-server's own --install-extension into the scratch extensions folder.
 */
function installExtension(scratch: ScratchDirs): string {
  const started = Date.now();
  const r = spawnSync('npm', ['run', 'package'], { cwd: REPO, encoding: 'utf8', timeout: 300_000 });
  if (r.status !== 0) throw new Error(`npm run package failed:\n${r.stdout}\n${r.stderr}`);
  const vsix = readdirSync(REPO)
    .filter((f) => f.endsWith('.vsix'))
    .map((f) => ({ f, t: statSync(join(REPO, f)).mtimeMs }))
    .filter((x) => x.t >= started - 1000)
    .sort((a, b) => b.t - a.t)[0]?.f;
  if (!vsix) throw new Error('npm run package made no .vsix in the repository folder');
  const inst = spawnSync(CODE_SERVER, ['--extensions-dir', scratch.extensions, '--user-data-dir', scratch.userData, '--install-extension', join(REPO, vsix)], {
    env: scratchEnv(scratch),
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (inst.status !== 0) throw new Error(`code-server --install-extension ${vsix} failed:\n${inst.stdout}\n${inst.stderr}`);
  return `installed ${vsix} (${Math.round(statSync(join(REPO, vsix)).size / 1024)} KiB) with code-server --install-extension`;
}

/** How the test answers Run Rollouts' prompts: three tasks, the proposed value for everything else. */
function runAnswer(q: QuickInputState): string | null {
  const text = `${q.title} ${q.placeholder} ${q.message}`;
  if (!q.isPick && /how many|limit|tasks/i.test(text) && !/sample|concurren/i.test(text)) return '3';
  return null;
}

if (missing && !process.env.CI) {
  // One skipped test, so the summary counts it ("skipped 1") instead of showing nothing.
  it('UI end-to-end tests (Playwright + code-server)', { skip: missing }, () => undefined);
} else describe('Rollout Lab in code-server, driven with Playwright', () => {
  let scratch: ScratchDirs;
  let workspace: string;
  let cs: CodeServer | null = null;
  let browser: Browser | null = null;
  const pageErrors: string[] = [];

  before(async () => {
    if (missing) throw new Error(`the UI tests cannot run in CI: ${missing}`);
    for (const f of ['dist/extension.js', 'dist/cli.js']) if (!existsSync(join(REPO, f))) throw new Error(`${f} is missing: run "node esbuild.mjs" first`);
    scratch = makeScratch('rollout-lab-ui-');
    workspace = join(scratch.root, 'lab');
    mkdirSync(workspace);
    cli(['init', '--workspace', workspace, '--dataset', PUBMEDQA]);
    console.log(installExtension(scratch));
    writeUserSettings(scratch, { ...QUIET_SETTINGS, 'workbench.colorTheme': THEMES.dark });
    cs = await startCodeServer({ scratch });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    // Pictures from an earlier run (a failure-*.png above all) would be mistaken for this one's.
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    await cs?.stop();
    if (scratch) removeScratch(scratch);
  });

  for (const theme of ['dark', 'light'] as const) {
    describe(`${theme} theme`, () => {
      let context: BrowserContext;
      let page: Page;
      /** Errors logged inside the panels' frames (VS Code's webview host and the panel documents). */
      const webviewErrors: string[] = [];
      /** The trace explorer's heading for the rollout opened from the tree ("Rollout 0af7b1eb9036…"). */
      let openedRollout = '';
      const shot = (name: string): Promise<void> => screenshot(page, join(OUT, `${name}-${theme}.png`));
      const explain = async (err: unknown): Promise<never> => {
        await screenshot(page, join(OUT, `failure-${theme}.png`)).catch(() => undefined);
        throw new Error(`${(err as Error).message}\n--- code-server log (tail)\n${cs?.logTail(20)}\n${extensionHostLogTail(scratch, 20)}\n--- page errors\n${pageErrors.slice(-5).join('\n')}`);
      };

      before(async () => {
        writeUserSettings(scratch, { ...QUIET_SETTINGS, 'workbench.colorTheme': THEMES[theme] });
        context = await browser!.newContext({ viewport: { width: 1400, height: 900 } });
        page = await context.newPage();
        page.on('pageerror', (e) => pageErrors.push(String(e)));
        page.on('console', (m) => {
          const where = m.location().url;
          // The panel documents are srcdoc frames inside VS Code's webview host: their messages carry no URL.
          const inWebview = where === '' || /\/webview\/browser\/pre\/|vscode-resource|vscode-cdn|vscode-webview/.test(where);
          // A CSP violation is a bug wherever it is reported; other errors count when a panel logs them.
          if (/Content Security Policy/i.test(m.text()) || (inWebview && m.type() === 'error')) webviewErrors.push(`${where}: ${m.text()}`);
        });
        await page.goto(workbenchUrl(cs!, workspace));
        await waitForWorkbench(page, 'Rollout Lab');
        const themeClass = theme === 'dark' ? 'vs-dark' : 'vs';
        await page.locator(`.monaco-workbench.${themeClass}`).waitFor({ timeout: 30_000 });
      });

      after(async () => {
        await context?.close();
      });

      it('runs rollouts from the command palette on the simulated endpoint', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Run Rollouts');
          const progress = page.locator('.notifications-toasts .notification-toast').filter({ hasText: /Rollout Lab/ });
          const prompts = await answerPrompts(page, runAnswer, progress);
          console.log(`Run Rollouts asked: ${prompts.map((q) => JSON.stringify(q.title || q.placeholder || q.message)).join(' → ')}`);
          // The progress notification reports done/total while it runs (caught on the way when it is slow
          // enough to see: a picture for people, not a check), then gives way to the summary.
          if (await progress.filter({ hasText: /running rollouts/i }).isVisible()) await shot('rollouts-progress');
          const done = await waitForNotification(page, /rollouts? succeeded/i);
          assert.match(done, /SIMULATED/);
          assert.match(done, /3\/3 rollouts succeeded/);
          await openViewContainer(page, 'Rollout Lab');
          // The newest run is expanded: its three rollouts show with a reward each.
          const rollouts = sideBarTreeRows(page, 2);
          await rollouts.nth(2).waitFor({ timeout: 30_000 });
          for (const text of (await rollouts.allInnerTexts()).slice(0, 3)) assert.match(text, /reward \d\.\d\d/);
          await shot('rollouts-run');
          await clearNotifications(page);
        } catch (err) {
          await explain(err);
        }
      });

      it('opens a rollout from the Rollout Lab view in the trace explorer: span tree and details pane', async () => {
        try {
          const rollout = sideBarTreeRows(page, 2).first();
          const taskId = (await rollout.locator('.label-name').innerText()).trim();
          await rollout.click();
          const web = visibleWebview(page);
          const rows = web.locator('[role="tree"] [role="treeitem"]');
          await rows.nth(3).waitFor({ timeout: 60_000 });
          assert.match(await rows.first().innerText(), /rollout/);
          const tree = await rows.allInnerTexts();
          for (const agent of ['Supervisor', 'PrincipalInvestigator', 'judge']) assert.ok(tree.some((t) => t.includes(agent)), `span tree shows ${agent}`);
          assert.ok(await web.getByText(taskId, { exact: false }).first().isVisible(), `the header names task ${taskId}`);
          // A model call in the tree: its details show the model and the conversation.
          await rows.filter({ hasText: /^\s*chat /m }).first().click();
          const details = web.locator('.te-details');
          await details.getByText(/model call/i).first().waitFor({ timeout: 15_000 });
          const text = await details.innerText();
          assert.match(text, /qwen|llama/i, 'the model');
          assert.match(text, /system/i, 'the system message');
          assert.match(text, /tokens/i);
          openedRollout = (await web.getByText(/^Rollout [0-9a-f]{6,}/).first().innerText()).trim();
          await shot('trace-explorer');
        } catch (err) {
          await explain(err);
        }
      });

      it('opens the graph view', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Open Graph View');
          const web = visibleWebview(page);
          for (const agent of ['Supervisor', 'HypothesisRefiner', 'PeerReviewer']) await web.locator('svg').getByText(agent, { exact: true }).first().waitFor({ timeout: 60_000 });
          // Let the layout settle (fit and transitions) before the picture.
          await page.waitForTimeout(750);
          await shot('graph-view');
        } catch (err) {
          await explain(err);
        }
      });

      it('opens the reward curve', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Open Reward Curve');
          const web = visibleWebview(page);
          await web.locator('svg circle').nth(2).waitFor({ timeout: 60_000 });
          await page.waitForTimeout(750);
          await shot('reward-curve');
        } catch (err) {
          await explain(err);
        }
      });

      it('the panels come back after a window reload, the trace explorer on the same rollout', async () => {
        try {
          // Reload the way a user does: the workbench saves its editors (and the panels' state) on the way out.
          const reloaded = page.waitForEvent('load', { timeout: 60_000 });
          await runCommand(page, 'Developer: Reload Window');
          await reloaded;
          await waitForWorkbench(page, 'Rollout Lab');
          const tabs = page.locator('.tabs-container .tab');
          for (const title of ['Trace Explorer', 'Graph View', 'Reward Curve']) await tabs.filter({ hasText: title }).first().waitFor({ timeout: 60_000 });
          await tabs.filter({ hasText: 'Trace Explorer' }).first().click();
          const web = visibleWebview(page);
          await web.locator('[role="tree"] [role="treeitem"]').nth(3).waitFor({ timeout: 60_000 });
          assert.ok(openedRollout, 'the trace explorer step recorded which rollout it opened');
          await web.getByText(openedRollout, { exact: true }).first().waitFor({ timeout: 15_000 });
        } catch (err) {
          await explain(err);
        }
      });

      it('the panels logged no errors and broke no Content Security Policy rule', () => {
        assert.deepEqual(webviewErrors, []);
      });
    });
  }
});
