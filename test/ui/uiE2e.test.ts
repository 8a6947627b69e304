import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  REPO,
  extensionHostLogTail,
  makeScratch,
  missingPrerequisite,
  removeScratch,
  startCodeServer,
  workbenchUrl,
  writeUserSettings,
  type CodeServer,
  type ScratchDirs,
} from '../extension/codeServer';
import { loadConfig } from '../../src/core/config/loader';
import { cli, PUBMEDQA, QUIET_SETTINGS } from '../extension/runExtensionTests';
import { installPackagedExtension } from './packagedExtension';
import {
  answerPrompts,
  clearNotifications,
  codeLenses,
  openViewContainer,
  quickOpen,
  runCommand,
  screenshot,
  sideBarTreeRows,
  textEditor,
  visibleHover,
  visibleWebview,
  waitForNotification,
  waitForWorkbench,
  type QuickInputState,
} from './workbench';

const OUT = join(REPO, 'test-results', 'ui');
const THEMES = { dark: 'Default Dark Modern', light: 'Default Light Modern' } as const;
/**
 * code-server, like VS Code in the browser, saves files after a delay by
 * default; the prompt-file step edits a prompt and takes the edit back, which
 * must not race a background save.
 */
const SETTINGS = { ...QUIET_SETTINGS, 'files.autoSave': 'off' };

const missing = missingPrerequisite();
if (missing && !process.env.CI) {
  console.log(`${'!'.repeat(78)}\n!! SKIPPED UI end-to-end tests (Playwright + code-server): ${missing}\n!! (CI is unset, so this is a skip; in CI it fails.)\n${'!'.repeat(78)}`);
}

/** The agent whose prompt file the annotation steps open: it runs once in every rollout. */
const PROMPT_AGENT = 'Supervisor';

/**
 * How many lines of a code editor carry the "differs from the best version"
 * marker: the prompt decorations draw a 3px bar at the left of each changed
 * line (src/extension/promptHistory/decorations.ts); the editor renders it as
 * a whole-line overlay with a generated ced-* class.
 */
async function differsMarkers(page: Page, pathSuffix: string): Promise<number> {
  return page.evaluate((suffix) => {
    const editor = Array.from(document.querySelectorAll<HTMLElement>('.part.editor .monaco-editor')).find((e) => e.dataset.uri?.endsWith(suffix) && e.offsetParent !== null);
    if (!editor) return 0;
    return Array.from(editor.querySelectorAll('.view-overlays [class*="ced-"]')).filter((e) => getComputedStyle(e).borderLeftWidth === '3px').length;
  }, pathSuffix);
}

/** Waits until `read` gives something other than `before`, and returns it (the what-if answers after a debounce). */
async function changedFrom(page: Page, before: string, read: () => Promise<string>, what: string): Promise<string> {
  let now = before;
  await until(page, `${what} to change from "${before}"`, async () => (now = await read()) !== before);
  return now;
}

/** Polls `check` until it holds (30 s at most). */
async function until(page: Page, what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await check()) return;
    await page.waitForTimeout(200);
  }
  throw new Error(`gave up waiting for ${what}`);
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
  /** The learning-curve step evaluates before and after registering a version once, in the first theme. */
  let curveEvaluated = false;

  before(async () => {
    if (missing) throw new Error(`the UI tests cannot run in CI: ${missing}`);
    for (const f of ['dist/extension.js', 'dist/cli.js']) if (!existsSync(join(REPO, f))) throw new Error(`${f} is missing: run "node esbuild.mjs" first`);
    scratch = makeScratch('rollout-lab-ui-');
    workspace = join(scratch.root, 'lab');
    mkdirSync(workspace);
    cli(['init', '--workspace', workspace, '--dataset', PUBMEDQA]);
    console.log(installPackagedExtension(scratch));
    writeUserSettings(scratch, { ...SETTINGS, 'workbench.colorTheme': THEMES.dark });
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
        writeUserSettings(scratch, { ...SETTINGS, 'workbench.colorTheme': THEMES[theme] });
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
          const progress = page.locator('.notifications-toasts .notification-toast').filter({ hasText: /Rollout Lab.*: (running rollouts|evaluating)/ });
          const prompts = await answerPrompts(page, runAnswer, progress);
          console.log(`Run Rollouts asked: ${prompts.map((q) => JSON.stringify(q.title || q.placeholder || q.message)).join(' → ')}`);
          // The progress notification reports done/total while it runs (caught on the way when it is slow
          // enough to see: a picture for people, not a check), then gives way to the summary.
          if (await progress.filter({ hasText: /running rollouts/i }).isVisible()) await shot('rollouts-progress');
          const done = await waitForNotification(page, /\d+ succeeded, \d+ failed/i);
          assert.match(done, /SIMULATED/);
          assert.match(done, /finished: 3 succeeded, 0 failed, of 3 planned/);
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
          const hadPanel = (await page.locator('.tabs-container .tab').filter({ hasText: 'Trace Explorer' }).count()) > 0;
          const clicked = Date.now();
          await rollout.click();
          const web = visibleWebview(page);
          const rows = web.locator('[role="tree"] [role="treeitem"]');
          await rows.nth(3).waitFor({ timeout: 60_000 });
          // A figure for people (the "command to rows"), never a check: the machine is shared.
          console.log(`${theme}: click in the Rollouts view → span rows visible: ${Date.now() - clicked} ms (${hadPanel ? 'the panel was open before' : 'a new panel'})`);
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

      it('a rollout opened from the tree while the trace explorer is hidden behind another tab shows in it', async () => {
        try {
          // The reward curve is in front: the explorer's page was discarded when it was hidden.
          const rollout = sideBarTreeRows(page, 2).nth(1);
          const taskId = (await rollout.locator('.label-name').innerText()).trim();
          const clicked = Date.now();
          await rollout.click();
          const web = visibleWebview(page);
          await web.locator('.te-header').getByText(taskId, { exact: false }).first().waitFor({ timeout: 60_000 });
          await web.locator('[role="tree"] [role="treeitem"]').nth(3).waitFor({ timeout: 60_000 });
          console.log(`${theme}: click in the Rollouts view → rows of the new rollout in the hidden explorer: ${Date.now() - clicked} ms`);
          // It stays on it (a restore of the saved state must not come back over it).
          await page.waitForTimeout(1500);
          assert.ok(await web.locator('.te-header').getByText(taskId, { exact: false }).first().isVisible(), `the explorer still shows task ${taskId}`);
          openedRollout = (await web.getByText(/^Rollout [0-9a-f]{6,}/).first().innerText()).trim();
          // The graph view, hidden meanwhile, follows: shown again, it is in Rollout mode.
          await page.locator('.tabs-container .tab').filter({ hasText: 'Graph View' }).first().click();
          await visibleWebview(page).locator('.gv-rollout-picker:not([hidden])').waitFor({ timeout: 60_000 });
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

      it('after a reload, Open Graph View shows the restored Graph View tab instead of opening a second one', async () => {
        try {
          const tabs = page.locator('.tabs-container .tab');
          // The explorer is in front: the restored Graph View tab has not been brought back yet.
          assert.equal(await tabs.filter({ hasText: 'Graph View' }).count(), 1);
          await runCommand(page, 'Rollout Lab: Open Graph View');
          await visibleWebview(page).locator('svg').getByText('Supervisor', { exact: true }).first().waitFor({ timeout: 60_000 });
          await page.waitForTimeout(1000);
          assert.equal(await tabs.filter({ hasText: 'Graph View' }).count(), 1, 'one Graph View tab');
        } catch (err) {
          await explain(err);
        }
      });

      it('annotates a prompt file: CodeLens with the version statistics, hover with the criteria, markers after an edit', async () => {
        const suffix = `/.rollout-lab/prompts/${PROMPT_AGENT}.md`;
        const file = join(workspace, suffix);
        const onDisk = readFileSync(file, 'utf8');
        let edited = false;
        try {
          await clearNotifications(page);
          await quickOpen(page, `${PROMPT_AGENT}.md`);
          const editor = textEditor(page, suffix);
          await editor.waitFor({ timeout: 30_000 });
          const lens = codeLenses(editor).first();
          // The lens is the statistics of the version on disk: the one every rollout so far ran.
          await lens.filter({ hasText: /\d+ rollouts? · reward/ }).waitFor({ timeout: 60_000 });
          const lensText = await lens.innerText();
          assert.match(lensText, /^\d+ rollouts? · reward \d\.\d\d ± \d\.\d\d \(95% CI\)/, `the lens reads "${lensText}"`);
          assert.doesNotMatch(lensText, /new version|best version/, 'the only version that ran is the best one');
          assert.equal(await differsMarkers(page, suffix), 0, 'the text on disk is the best version: no line is marked');

          // The hover on the first line: the per-criterion breakdown.
          const line = editor.locator('.view-lines .view-line').filter({ hasText: onDisk.split('\n')[0]!.slice(0, 30) }).first();
          await line.hover({ position: { x: 40, y: 6 } });
          const hover = visibleHover(page);
          await hover.filter({ hasText: 'Criterion' }).waitFor({ timeout: 30_000 });
          const hoverText = await hover.innerText();
          assert.match(hoverText, new RegExp(`${PROMPT_AGENT}\\s+prompt version [0-9a-f]{7}`));
          assert.match(hoverText, /Mean score/);
          const criteria = Object.keys((await loadConfig(workspace)).config.reward.criteria);
          // One table row per criterion under the header, each with its mean score.
          const rows = (await hover.locator('table tr').allInnerTexts()).slice(1);
          assert.equal(rows.length, criteria.length, `the hover's table: ${JSON.stringify(rows)}`);
          for (const c of criteria) assert.ok(rows.some((r) => new RegExp(`^${c}\\s+\\d\\.\\d\\d$`).test(r.trim())), `the hover has a row for ${c}: ${JSON.stringify(rows)}`);
          await shot('prompt-annotations');

          // An edit, not saved, makes a new version: the lenses follow the editor's text, saved or not. No rollouts
          // yet, and the added line is marked against the best version.
          await page.mouse.move(5, 5);
          await page.keyboard.press('Escape');
          await hover.waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
          await line.click({ position: { x: 40, y: 6 } });
          await page.keyboard.press('Control+End');
          // The file ends with a newline, so the caret is on an empty last line: the typed text is one added line.
          if (!onDisk.endsWith('\n')) await page.keyboard.press('Enter');
          edited = true;
          await page.keyboard.type('Prefer the hypothesis whose mechanism can be tested within one month.');
          await lens.filter({ hasText: /new version: no rollouts yet/ }).waitFor({ timeout: 30_000 });
          assert.match(await lens.innerText(), /best so far [0-9a-f]{7} \d\.\d\d/);
          await until(page, 'the added line to be marked as differing from the best version', async () => (await differsMarkers(page, suffix)) > 0);
          assert.equal(await differsMarkers(page, suffix), 1, 'one added line is marked');
          await shot('prompt-edited');

          // Reverted: the text is the stored version again, so the lens shows its statistics and the marker goes.
          await runCommand(page, 'File: Revert File');
          await lens.filter({ hasText: /\d+ rollouts? · reward/ }).waitFor({ timeout: 30_000 });
          await until(page, 'the marker to go after the revert', async () => (await differsMarkers(page, suffix)) === 0);
          edited = false;
          assert.equal(readFileSync(file, 'utf8'), onDisk, 'the edit was never saved');
        } catch (err) {
          await explain(err);
        } finally {
          // A failure half-way must not leave the edit behind for the next steps (or the other theme's run).
          if (edited || readFileSync(file, 'utf8') !== onDisk) {
            writeFileSync(file, onDisk);
            await runCommand(page, 'File: Revert File').catch(() => undefined);
          }
        }
      });

      it('the reward-weight editor shows the criteria and histogram, and a typed weight changes the what-if', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Edit Reward Weights…');
          const web = visibleWebview(page);
          await web.locator('body[data-ready="true"] .rw-criterion').first().waitFor({ timeout: 60_000 });
          const criteria = (await loadConfig(workspace)).config.reward.criteria;
          const names = Object.keys(criteria);
          assert.equal(await web.locator('.rw-criterion').count(), names.length, 'one row per criterion of lab.json');
          for (const name of names) {
            const row = web.locator(`.rw-criterion[data-name="${name}"]`);
            assert.equal(await row.locator('.rw-weight input').inputValue(), String(criteria[name]!.weight), `the weight of ${name}`);
          }
          // The histogram has bars: the stored rewards fall in some bins.
          await web.locator('rect.rw-bar-before:not([data-count="0"])').first().waitFor({ timeout: 30_000 });
          assert.ok((await web.locator('rect.rw-bar-after:not([data-count="0"])').count()) > 0, 'the after series has bars');
          const whatIf = async (): Promise<string> => `${await web.locator('.rw-stat-mean').innerText()} | ${await web.locator('.rw-stat-rho').innerText()}`;
          await web.locator('.rw-stat-mean').waitFor({ timeout: 30_000 });
          const before = await whatIf();
          // Unchanged weights: the after mean is the stored one.
          const [meanBefore, meanAfter] = (await web.locator('.rw-stat-mean').innerText()).split('→').map((s) => s.trim());
          assert.equal(meanAfter, meanBefore, `unchanged weights keep the mean: ${before}`);

          // The heaviest criterion down to almost nothing, typed in its field.
          const heaviest = names.reduce((a, b) => (criteria[b]!.weight > criteria[a]!.weight ? b : a));
          const field = web.locator(`.rw-criterion[data-name="${heaviest}"] .rw-weight input`);
          // A click, as a user does: it also gives the panel's frame the keyboard focus. The text is then selected
          // in the page: Ctrl+A would also reach the workbench, whose own Select All comes back to the webview a
          // moment later and can land in the middle of the typing.
          await field.click();
          await field.selectText();
          await page.keyboard.type('0.01');
          assert.equal(await field.inputValue(), '0.01');
          const after = await changedFrom(page, before, whatIf, 'the what-if (after mean | rank correlation)');
          console.log(`what-if with ${heaviest} 0.01: ${before} ⇒ ${after}`);
          assert.notEqual(after.split('|')[0]!.split('→')[1]!.trim(), meanBefore, 'the after mean moved');
          await web.locator('body[data-dirty="true"]').waitFor();
          await shot('reward-weights');
          // The rest of the what-if: the top 10 before and after, and the rank movers.
          await web.locator('.rw-movers').scrollIntoViewIfNeeded();
          await shot('reward-weights-ranking');

          // Not saved: Reset takes the form back to lab.json.
          await web.locator('vscode-button.rw-reset').click();
          await changedFrom(page, after, whatIf, 'the what-if after Reset');
          assert.equal(await field.inputValue(), String(criteria[heaviest]!.weight));
          assert.equal((await loadConfig(workspace)).config.reward.criteria[heaviest]!.weight, criteria[heaviest]!.weight, 'lab.json is unchanged');
        } catch (err) {
          await explain(err);
        }
      });

      it('opens the evaluation report of the newest run', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Open Evaluation Report');
          const web = visibleWebview(page);
          await web.locator('.er-title').waitFor({ timeout: 60_000 });
          assert.match(await web.locator('.er-title').innerText(), /Evaluation report: /);
          await web.locator('.er-table tbody tr').first().waitFor({ timeout: 30_000 });
          await page.waitForTimeout(500);
          await shot('eval-report');
        } catch (err) {
          await explain(err);
        }
      });

      it('the Training view shows the learning curve, and Show Learning Curve draws it in the Reward Curve', async () => {
        try {
          if (!curveEvaluated) {
            // Validation before and after a junior version is registered (both on the simulated endpoint), from the CLI.
            const ws = ['--workspace', workspace];
            cli(['eval', ...ws, '--limit', '4', '--json']);
            cli(['pipeline', 'register', 'junior', '--version', 'sft-1', '--phase', 'sft-juniors', ...ws]);
            cli(['eval', ...ws, '--limit', '4', '--json']);
            curveEvaluated = true;
          }
          // Earlier steps may have closed the side bar: focusing the view opens it, expanded.
          await runCommand(page, 'Rollout Lab: Focus on Training View');
          await runCommand(page, 'Rollout Lab: Refresh Training');
          const training = page.locator('.part.sidebar .pane').filter({ has: page.locator('.pane-header', { hasText: /^Training/i }) });
          const header = training.locator('.pane-header');
          if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();
          // The list draws only the rows in view: fold the sections above the curve so its rows come into view.
          for (const section of ['Pipeline', 'Models']) {
            const row = training.locator('.monaco-list-row[aria-expanded="true"]').filter({ hasText: new RegExp(`^${section}$`) });
            if (await row.count()) await row.first().click();
          }
          const point = training.locator('.monaco-list-row').filter({ hasText: 'junior@sft-1' });
          await point.first().waitFor({ timeout: 60_000 });
          await point.first().scrollIntoViewIfNeeded();
          assert.match(await point.first().innerText(), /\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]/);
          assert.ok(await training.locator('.monaco-list-row').filter({ hasText: /^base/ }).first().isVisible(), 'the base version beside it');
          await shot('training-learning-curve');
          await runCommand(page, 'Rollout Lab: Show Learning Curve');
          const web = visibleWebview(page);
          await web.locator('.lc-series[data-model="junior"] .lc-point[data-version="junior@sft-1"] .lc-dot').waitFor({ timeout: 60_000 });
          assert.equal(await web.locator('.lc-series[data-model="junior"] .lc-table tbody tr').count(), 2);
          await page.waitForTimeout(500);
          await shot('reward-curve-learning-curve');
          // Back to reward per rollout: the panel keeps the choice, and the other steps expect the per-rollout chart.
          await web.locator('.rc-view').click();
          await web.locator('.rc-view').getByText('Reward per rollout', { exact: true }).click();
          await web.locator('.rc-stage svg circle.rc-point').first().waitFor({ timeout: 30_000 });
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
