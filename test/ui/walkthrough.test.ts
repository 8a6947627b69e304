import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
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
import { PUBMEDQA, QUIET_SETTINGS } from '../extension/runExtensionTests';
import { installVsix, packageVsix } from './packagedExtension';
import { answerPrompts, enterInPrompt, quickInput, runCommand, screenshot, visibleWebview, waitForNotification, waitForWorkbench, type QuickInputState } from './workbench';

/**
 * A newcomer's first minutes: the packaged .vsix installed into a clean
 * code-server, an empty folder, the palette offering only what works without
 * a lab, then the Get Started walkthrough's buttons — Initialize with Sample
 * Data, Run Rollouts, Open Trace Explorer — up to a first trace, each step
 * ticking off. Once per theme, each in a code-server of its own (the
 * walkthrough remembers finished steps in the user data).
 */

const OUT = join(REPO, 'test-results', 'ui');
const THEMES = { dark: 'Default Dark Modern', light: 'Default Light Modern' } as const;
const WALKTHROUGH_TAB = 'Walkthrough: Rollout Lab';
/** Commands that need a lab: none of them is in the palette before one exists. */
const NEED_A_LAB = ['Run Rollouts', 'Evaluate on Validation Set', 'Open Trace Explorer', 'Edit Reward Weights…', 'Launch Training Phase…', 'Open Rollouts Table'];

const missing = missingPrerequisite();
if (missing && !process.env.CI) {
  console.log(`${'!'.repeat(78)}\n!! SKIPPED walkthrough UI test (Playwright + code-server): ${missing}\n!! (CI is unset, so this is a skip; in CI it fails.)\n${'!'.repeat(78)}`);
}

/** Run Rollouts' answers: the dataset Initialize Lab set up (its sample), else the PubMedQA file through Browse…; three tasks; the proposal elsewhere. */
function runAnswer(q: QuickInputState): string | null {
  const text = `${q.title} ${q.placeholder} ${q.message}`;
  // The open-file dialog (code-server's own, a quick input holding a path) after Browse….
  if (/Dataset file/.test(q.title)) return PUBMEDQA;
  if (!q.isPick && /how many|tasks/i.test(text) && !/sample/i.test(text)) return '3';
  return null;
}

/**
 * The palette's commands for what is typed (F1, then `typed`), as their titles without the category; closed
 * again. A key pressed while a webview has the focus can be lost as the focus moves: it is tried again then.
 */
async function paletteCommands(page: Page, typed: string, expect: string, whileShown?: () => Promise<void>): Promise<string[]> {
  const widget = page.locator('.quick-input-widget');
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('F1');
    try {
      await widget.waitFor({ state: 'visible', timeout: 5_000 });
      await page.keyboard.type(typed);
      await widget.locator('.quick-input-list .monaco-list-row').filter({ hasText: expect }).first().waitFor({ timeout: 10_000 });
      break;
    } catch (err) {
      if (attempt === 4) throw new Error(`the palette shows no "${expect}" for "${typed}": ${(err as Error).message}`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
  const rows = (await quickInput(page))?.rows ?? [];
  await whileShown?.();
  await page.keyboard.press('Escape');
  return rows.map((r) => r.replace(/^Rollout Lab:\s*/, '').split('\n')[0]!.trim());
}

if (missing && !process.env.CI) {
  it('walkthrough UI test (Playwright + code-server)', { skip: missing }, () => undefined);
} else describe('a newcomer in code-server: the Get Started walkthrough from an empty folder to a first trace', () => {
  let vsix: string;
  let browser: Browser | null = null;

  before(() => {
    if (missing) throw new Error(`the UI tests cannot run in CI: ${missing}`);
    vsix = packageVsix();
    rmSync(join(OUT, 'walkthrough'), { recursive: true, force: true });
    mkdirSync(join(OUT, 'walkthrough'), { recursive: true });
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
  });

  for (const theme of ['dark', 'light'] as const) {
    describe(`${theme} theme`, () => {
      let scratch: ScratchDirs;
      let workspace: string;
      let cs: CodeServer | null = null;
      let page: Page;
      const pageErrors: string[] = [];
      const shot = (name: string): Promise<void> => screenshot(page, join(OUT, 'walkthrough', `${name}-${theme}.png`));
      const explain = async (err: unknown): Promise<never> => {
        await shot('failure').catch(() => undefined);
        throw new Error(`${(err as Error).message}\n--- code-server log (tail)\n${cs?.logTail(20)}\n${extensionHostLogTail(scratch, 20)}\n--- page errors\n${pageErrors.slice(-5).join('\n')}`);
      };
      const step = (id: string) => page.locator(`.getting-started-step[data-step-id$="#gettingStarted#${id}"]`);
      /** Brings the walkthrough to the front and opens one of its steps. */
      const openStep = async (id: string): Promise<void> => {
        await page.locator('.tabs-container .tab').filter({ hasText: WALKTHROUGH_TAB }).first().click();
        const s = step(id);
        await s.waitFor({ timeout: 30_000 });
        if ((await s.getAttribute('aria-expanded')) !== 'true') await s.click();
        await page.locator(`.getting-started-step.expanded[data-step-id$="#gettingStarted#${id}"]`).waitFor({ timeout: 10_000 });
      };
      const button = (id: string, name: string) => step(id).locator('.monaco-button').filter({ hasText: name }).first();
      const done = (id: string) => page.locator(`.getting-started-step[aria-checked="true"][data-step-id$="#gettingStarted#${id}"]`);

      before(async () => {
        scratch = makeScratch(`rollout-lab-walkthrough-${theme}-`);
        workspace = join(scratch.root, 'empty');
        mkdirSync(workspace);
        console.log(installVsix(scratch, vsix));
        writeUserSettings(scratch, { ...QUIET_SETTINGS, 'workbench.colorTheme': THEMES[theme] });
        cs = await startCodeServer({ scratch });
        browser ??= await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
        const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
        page = await context.newPage();
        page.on('pageerror', (e) => pageErrors.push(String(e)));
        await page.goto(workbenchUrl(cs, workspace));
        await waitForWorkbench(page, 'Rollout Lab');
        await page.locator(`.monaco-workbench.${theme === 'dark' ? 'vs-dark' : 'vs'}`).waitFor({ timeout: 30_000 });
      });

      after(async () => {
        await page?.context().close().catch(() => undefined);
        await cs?.stop();
        if (scratch) removeScratch(scratch);
      });

      it('before a lab exists, the palette offers Initialize Lab, Get Started and Set API Key, and none of the commands that need a lab', async () => {
        try {
          // Few enough to be listed whole (the list draws only the rows in view).
          const commands = await paletteCommands(page, 'Rollout Lab: ', 'Initialize Lab', () => shot('palette-no-lab'));
          for (const c of ['Initialize Lab', 'Get Started', 'Set API Key']) assert.ok(commands.includes(c), `"${c}" is offered: ${JSON.stringify(commands)}`);
          for (const c of NEED_A_LAB) assert.ok(!commands.includes(c), `"${c}" waits for a lab: ${JSON.stringify(commands)}`);
        } catch (err) {
          await explain(err);
        }
      });

      it('Get Started opens the walkthrough; Initialize with Sample Data writes the lab and ticks the first step', async () => {
        try {
          await runCommand(page, 'Rollout Lab: Get Started');
          await step('initialize').waitFor({ timeout: 60_000 });
          assert.equal(await step('train').count(), 1, 'the walkthrough goes on to a training dry run');
          // The step's page (media/walkthrough/initialize.md), drawn in a webview beside the steps.
          await visibleWebview(page).getByText('sets this folder up for the built-in research lab', { exact: false }).first().waitFor({ timeout: 30_000 });
          await shot('walkthrough');
          await button('initialize', 'Initialize with Sample Data').click();
          // Initialize Lab opens lab.json beside the walkthrough.
          await page.locator('.tabs-container .tab').filter({ hasText: 'lab.json' }).first().waitFor({ timeout: 60_000 });
          assert.ok(existsSync(join(workspace, '.rollout-lab', 'lab.json')), 'lab.json is written');
          await openStep('runRollouts');
          await done('initialize').waitFor({ timeout: 30_000 });
        } catch (err) {
          await explain(err);
        }
      });

      it('Run Rollouts from the walkthrough runs three rollouts on the simulated endpoint and ticks its step', async () => {
        try {
          await button('runRollouts', 'Run Rollouts').click();
          const progress = page.locator('.notifications-toasts .notification-toast').filter({ hasText: /Rollout Lab.*: (running rollouts|evaluating)/ });
          await answerPrompts(page, runAnswer, progress);
          const summary = await waitForNotification(page, /\d+ succeeded, \d+ failed/i);
          assert.match(summary, /SIMULATED/);
          assert.match(summary, /finished: 3 succeeded, 0 failed, of 3 planned/);
          await openStep('openTrace');
          await done('runRollouts').waitFor({ timeout: 30_000 });
          await shot('walkthrough-rollouts');
        } catch (err) {
          await explain(err);
        }
      });

      it('Open Trace Explorer from the walkthrough shows a first trace, and the steps done so far are ticked', async () => {
        try {
          await button('openTrace', 'Open Trace Explorer').click();
          // A pick of the recent rollouts, the newest first: a click on it, as the walkthrough's page may hold the keyboard focus.
          const widget = page.locator('.quick-input-widget');
          await widget.locator('.quick-input-title').filter({ hasText: 'Open Trace Explorer' }).waitFor({ timeout: 60_000 });
          assert.equal(await done('openTrace').count(), 0, 'the step ticks off once a trace shows, not while the pick is open');
          await widget.locator('.quick-input-list .monaco-list-row').first().click();
          const web = visibleWebview(page);
          const rows = web.locator('[role="tree"] [role="treeitem"]');
          await rows.nth(3).waitFor({ timeout: 60_000 });
          assert.match(await rows.first().innerText(), /rollout/);
          const tree = await rows.allInnerTexts();
          assert.ok(tree.some((t) => /judge/.test(t)), 'the trace holds the judge');
          await page.waitForTimeout(500);
          await shot('walkthrough-trace');
          await openStep('evaluate');
          for (const id of ['initialize', 'runRollouts', 'openTrace']) await done(id).waitFor({ timeout: 30_000 });
          await visibleWebview(page).getByText('runs the held-out tasks', { exact: false }).first().waitFor({ timeout: 30_000 });
          assert.equal(await done('evaluate').count(), 0, 'the evaluation is still to do');
          await shot('walkthrough-progress');
          // The lab exists now: its commands are in the palette.
          for (const c of NEED_A_LAB) {
            const commands = await paletteCommands(page, `Rollout Lab: ${c}`, c);
            assert.ok(commands.includes(c), `"${c}" is offered once the lab exists: ${JSON.stringify(commands)}`);
          }
        } catch (err) {
          await explain(err);
        }
      });

      it('Train (dry run) from the walkthrough: the target question says which python this machine has, the summary offers Dry Run, and it starts nothing', async () => {
        try {
          // The three simulated rollouts on the sample score below the reference pipeline's minReward (0.7), which the
          // pre-flight refuses with its fix (tested in e2e/pipeline): declare the phase with that fix taken, as a user would.
          const labJson = join(workspace, '.rollout-lab', 'lab.json');
          const lab = JSON.parse(readFileSync(labJson, 'utf8')) as Record<string, unknown>;
          lab.training = { phases: [{ name: 'sft-juniors', kind: 'sft', agents: ['Geneticist', 'Pharmacologist', 'Neurologist'], minReward: 0, includeSimulated: true }] };
          writeFileSync(labJson, JSON.stringify(lab, null, 2));
          await openStep('train');
          await button('train', 'Launch Training Phase…').click();
          const widget = page.locator('.quick-input-widget');
          const titleNow = async (): Promise<string> => (await widget.locator('.quick-input-title').innerText().catch(() => '')).trim();
          let target = '';
          let summary: string[] = [];
          for (let i = 0; i < 10 && summary.length === 0; i++) {
            await widget.waitFor({ state: 'visible', timeout: 120_000 });
            const title = await titleNow();
            if (/: confirm$/.test(title)) {
              summary = (await quickInput(page))?.rows ?? [];
              await shot('walkthrough-train-summary');
              // Dry Run, never Launch: a click on it, found by its description (on a python without torch, Launch's
              // description and the target's row say "only Dry Run works here" too).
              await widget.locator('.quick-input-list .monaco-list-row').filter({ hasText: 'shows the spec and every command' }).first().click();
              break;
            }
            if (/\(2\/\d+\)$/.test(title)) {
              // The local target's row fills in once the python probe answers.
              const row = widget.locator('.quick-input-list .monaco-list-row').filter({ hasText: /CPU · \S+ \d+\.\d+\.\d+ with(out)? torch|no python found/ }).first();
              await row.waitFor({ timeout: 60_000 });
              target = (await row.innerText()).replace(/\s+/g, ' ');
              await shot('walkthrough-train-target');
            }
            // Started from the walkthrough, the question may open while the walkthrough's page keeps the keyboard.
            await enterInPrompt(page, title);
          }
          console.log(`${theme}: the target question's local row: ${target}`);
          assert.match(target, /this machine · CPU · \S+ \d+\.\d+\.\d+ (with torch \S+|without torch: only Dry Run works here)/);
          assert.ok(summary.some((r) => /Dry Run/.test(r)), `the summary offers Dry Run: ${JSON.stringify(summary)}`);
          await page.locator('.part.editor .view-lines').filter({ hasText: 'DRY RUN — nothing is launched' }).first().waitFor({ timeout: 60_000 });
          await shot('walkthrough-dry-run');
          assert.ok(!existsSync(join(workspace, '.rollout-lab', 'training', 'jobs')), 'no job was launched');
          await page.locator('.tabs-container .tab').filter({ hasText: WALKTHROUGH_TAB }).first().click();
          await done('train').waitFor({ timeout: 30_000 });
        } catch (err) {
          await explain(err);
        }
      });
    });
  }
});
