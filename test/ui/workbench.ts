import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { FrameLocator, Locator, Page } from 'playwright-core';

/**
 * Small steps a user takes in the VS Code workbench, written against the DOM
 * of VS Code 1.100 (code-server 4.100.3): the command palette, quick inputs,
 * notifications, the activity bar and webview frames.
 */

const QUICK_INPUT = '.quick-input-widget';

/**
 * Waits for the workbench to finish loading, and for an extension's view
 * container in the activity bar: it appears once the extension host has
 * registered the extension, after which its commands are in the palette.
 */
export async function waitForWorkbench(page: Page, viewContainerTitle?: string): Promise<void> {
  await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
  await page.locator('.part.activitybar').waitFor({ timeout: 90_000 });
  await page.locator('.part.statusbar').waitFor({ timeout: 90_000 });
  if (viewContainerTitle) await activityBarItem(page, viewContainerTitle).waitFor({ state: 'visible', timeout: 90_000 });
}

function activityBarItem(page: Page, title: string): Locator {
  return page.locator(`.part.activitybar .action-item a[aria-label^="${title}"], .part.activitybar .action-item[aria-label^="${title}"]`).first();
}

/**
 * F1, the command's title, Enter: runs a command as a user does. The palette
 * lists the commands known when it opens, so a palette opened before the
 * extension host registered its extensions is closed and opened again.
 */
export async function runCommand(page: Page, title: string): Promise<void> {
  const widget = page.locator(QUICK_INPUT);
  const wanted = title.replace(/^[^:]+:\s*/, '');
  for (let attempt = 1; ; attempt++) {
    // F1 reaches the workbench from anywhere, a focused webview included (webviews forward keybindings).
    await page.keyboard.press('F1');
    await widget.waitFor({ state: 'visible' });
    await page.keyboard.type(title);
    const first = widget.locator('.quick-input-list .monaco-list-row').first();
    try {
      await first.filter({ hasText: wanted }).waitFor({ timeout: 5_000 });
      break;
    } catch (err) {
      if (attempt === 6) throw new Error(`the command palette has no "${title}": ${(err as Error).message}`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
  await page.keyboard.press('Enter');
}

export interface QuickInputState {
  title: string;
  placeholder: string;
  message: string;
  value: string;
  /** Whether it is a pick list (rows shown) rather than a plain input box. */
  isPick: boolean;
  rows: string[];
}

/** What the open quick input asks, or null when none is open. */
export async function quickInput(page: Page): Promise<QuickInputState | null> {
  const widget = page.locator(QUICK_INPUT);
  if (!(await widget.isVisible())) return null;
  const input = widget.locator('.quick-input-box input');
  const rows = await widget.locator('.quick-input-list .monaco-list-row').allInnerTexts().catch(() => []);
  const listVisible = await widget.locator('.quick-input-list').isVisible().catch(() => false);
  return {
    title: (await widget.locator('.quick-input-title').innerText().catch(() => '')).trim(),
    placeholder: (await input.getAttribute('placeholder').catch(() => null)) ?? '',
    message: (await widget.locator('.quick-input-message').innerText().catch(() => '')).trim(),
    value: await input.inputValue().catch(() => ''),
    isPick: listVisible && rows.length > 0,
    rows,
  };
}

/**
 * Answers each prompt the command opens with the keyboard until no quick input
 * is left. `answer` gets what the prompt says and returns the text to type
 * (replacing the proposed value), or null to accept what is proposed (Enter).
 * `until` (what the command shows once it stops asking, e.g. its progress
 * notification) ends the wait for a next prompt early.
 */
export async function answerPrompts(page: Page, answer: (q: QuickInputState) => string | null, until?: Locator): Promise<QuickInputState[]> {
  const widget = page.locator(QUICK_INPUT);
  const seen: QuickInputState[] = [];
  for (let step = 0; step < 12; step++) {
    // The first prompt may take a moment (the command loads the lab first); after an answer, either the
    // next prompt shows or the command gets going.
    const next = widget.waitFor({ state: 'visible', timeout: step === 0 ? 30_000 : 10_000 }).then(() => 'prompt' as const);
    const going = until ? until.first().waitFor({ state: 'visible', timeout: step === 0 ? 30_000 : 10_000 }).then(() => 'done' as const) : new Promise<never>(() => undefined);
    const what = await Promise.race([next, going]).catch(() => 'timeout' as const);
    next.catch(() => undefined);
    going.catch(() => undefined);
    if (what !== 'prompt') {
      if (step === 0 && what === 'timeout') throw new Error('the command opened no prompt');
      return seen;
    }
    await page.waitForTimeout(150);
    const q = await quickInput(page);
    if (!q) continue;
    const previous = seen[seen.length - 1];
    // The same prompt still showing means our Enter has not been handled yet.
    if (previous && JSON.stringify(previous) === JSON.stringify(q)) {
      await page.waitForTimeout(500);
      const again = await quickInput(page);
      if (again && JSON.stringify(again) === JSON.stringify(q)) throw new Error(`the prompt "${q.title || q.placeholder}" did not accept the answer: ${q.message}`);
      continue;
    }
    seen.push(q);
    const text = answer(q);
    const input = widget.locator('.quick-input-box input');
    // The box takes the keys (a question opened from a walkthrough button can leave the focus on the walkthrough's page).
    if (text !== null) await input.fill(text);
    await enterInPrompt(page, q.title, 3, 10_000).catch(() => undefined);
  }
  throw new Error(`more than 12 prompts: ${seen.map((q) => q.title || q.placeholder).join(' → ')}`);
}

/**
 * Enter in the open prompt's box, until the prompt titled `title` goes or is
 * replaced. A prompt opened from a walkthrough button can leave the keyboard
 * on the walkthrough's page, so an Enter may land there: the box gets the
 * focus and Enter again while the same prompt still shows (a few times, each
 * after a generous wait, so an Enter that is only slow is not doubled).
 */
export async function enterInPrompt(page: Page, title: string, tries = 3, waitMs = 30_000): Promise<void> {
  const gone = (timeout: number): Promise<boolean> =>
    page
      .waitForFunction(
        ([sel, before]) => {
          const w = document.querySelector(sel as string) as HTMLElement | null;
          if (!w || w.style.display === 'none' || w.offsetParent === null) return true;
          return (w.querySelector('.quick-input-title')?.textContent ?? '').trim() !== (before as string).trim();
        },
        [QUICK_INPUT, title],
        { timeout },
      )
      .then(() => true, () => false);
  for (let i = 0; i < tries; i++) {
    await page.locator(`${QUICK_INPUT} .quick-input-box input`).focus();
    await page.keyboard.press('Enter');
    if (await gone(waitMs)) return;
  }
  throw new Error(`the prompt "${title}" stayed open after ${tries} Enters in its box`);
}

/** The toast notifications' text, newest first. */
export async function notifications(page: Page): Promise<string[]> {
  return page.locator('.notifications-toasts .notification-toast').allInnerTexts();
}

/** Waits until a notification's text matches. */
export async function waitForNotification(page: Page, pattern: RegExp, timeoutMs = 180_000): Promise<string> {
  const toast = page.locator('.notifications-toasts .notification-toast').filter({ hasText: pattern }).first();
  await toast.waitFor({ state: 'visible', timeout: timeoutMs });
  return toast.innerText();
}

/** Opens a view container from the activity bar by its title (a click, as a user would). */
export async function openViewContainer(page: Page, title: string): Promise<void> {
  const item = activityBarItem(page, title);
  await item.waitFor({ state: 'visible', timeout: 60_000 });
  const checked = await item.getAttribute('aria-checked');
  if (checked !== 'true') await item.click();
}

/** The content document of the webview that is showing now (the visible editor's). */
export function visibleWebview(page: Page): FrameLocator {
  return page.locator('iframe.webview.ready').filter({ visible: true }).last().contentFrame().locator('#active-frame').contentFrame();
}

/** The rows of the tree in the side bar (the view container that is open), by depth: 1 = top level. */
export function sideBarTreeRows(page: Page, level?: number): Locator {
  return page.locator(`.part.sidebar .monaco-list-row${level ? `[aria-level="${level}"]` : ''}`);
}

/** Closes every toast, so the screenshots after it show the panels rather than an old message. */
export async function clearNotifications(page: Page): Promise<void> {
  await runCommand(page, 'Notifications: Clear All Notifications');
  await page.locator('.notifications-toasts .notification-toast').first().waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
}

export async function screenshot(page: Page, file: string): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  await page.screenshot({ path: file });
}

/**
 * Ctrl+P, a file's name, Enter: opens a workspace file through Quick Open as a
 * user does. Waits for the file to be listed first (the file search runs in
 * the background as the name is typed).
 */
export async function quickOpen(page: Page, fileName: string): Promise<void> {
  const widget = page.locator(QUICK_INPUT);
  for (let attempt = 1; ; attempt++) {
    // A key pressed in a webview reaches the workbench through the webview host, so an early one can be lost
    // while focus moves (a palette closing); it is pressed again then.
    await page.keyboard.press('Control+P');
    try {
      await widget.waitFor({ state: 'visible', timeout: 5_000 });
      break;
    } catch (err) {
      if (attempt === 4) throw new Error(`Ctrl+P opened no Quick Open: ${(err as Error).message}`);
    }
  }
  await page.keyboard.type(fileName);
  await widget.locator('.quick-input-list .monaco-list-row').first().filter({ hasText: fileName }).waitFor({ timeout: 30_000 });
  await page.keyboard.press('Enter');
  await widget.waitFor({ state: 'hidden' });
}

/** The visible code editor showing the file whose path ends with `pathSuffix` (e.g. "/prompts/Supervisor.md"). */
export function textEditor(page: Page, pathSuffix: string): Locator {
  return page.locator(`.part.editor .monaco-editor[data-uri$="${pathSuffix}"]`).filter({ visible: true }).first();
}

/** The CodeLens rows of a code editor (each row's lenses, joined by " | " as the editor draws them). */
export function codeLenses(editor: Locator): Locator {
  return editor.locator('.contentWidgets .codelens-decoration');
}

/** The editor hover that is showing now (the workbench draws it outside the editor's element). */
export function visibleHover(page: Page): Locator {
  return page.locator('.monaco-hover').filter({ visible: true }).first();
}
