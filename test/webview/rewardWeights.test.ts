import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'jsonc-parser';
import type { Page } from 'playwright-core';
import { writeLabJsonChanges } from '../../src/core/config/labJsonEdit';
import { loadConfig } from '../../src/core/config/loader';
import { previewAirRules } from '../../src/core/reward/airRules';
import { rescore } from '../../src/core/analysis/rescore';
import type { Lab } from '../../src/core/lab/lab';
import { airPreview, criteriaList, validateAir, weightsConfig, whatIf } from '../../src/extension/rewardWeights/weightsData';
import type { RequestParamsOf } from '../../src/shared/protocol';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';
import { tempLab, type TempLab } from './labViewsData';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL_TASK = '<img src=x onerror=window.__xss=1>';
const EVIL_AGENT = '<script>window.__xss=2</script>';

type WhatIfParams = RequestParamsOf<'weights/whatIf'>;

async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** The bars the page drew for a series, bin by bin: the bin's edges and its count. */
function bars(page: Page, series: 'before' | 'after'): Promise<Array<{ x0: number; x1: number; count: number }>> {
  return page.evaluate(
    (s) =>
      Array.from(document.querySelectorAll<SVGRectElement>(`rect.rw-bar-${s}`)).map((r) => ({
        x0: Number(r.dataset.x0),
        x1: Number(r.dataset.x1),
        count: Number(r.dataset.count),
      })),
    series,
  );
}

/** A side's rewards counted into the drawn bins here (x0 ≤ v < x1, the last bin closed), independently of the panel. */
function countedIn(result: ReturnType<typeof rescore>, side: 'before' | 'after', drawn: Array<{ x0: number; x1: number }>): number[] {
  const values = result.rows.map((r) => r[side]).filter((v): v is number => v !== null);
  return drawn.map((b, i) => values.filter((v) => v >= b.x0 && (i === drawn.length - 1 ? v <= b.x1 : v < b.x1)).length);
}

/** The drawn bins hold every reward of both sides, are contiguous, and are 8 to 40 bins chosen from the data. */
async function assertBins(page: Page, result: ReturnType<typeof rescore>): Promise<void> {
  for (const side of ['before', 'after'] as const) {
    const drawn = await bars(page, side);
    assert.ok(drawn.length >= 8 && drawn.length <= 40, `${drawn.length} bins`);
    drawn.forEach((b, i) => i && assert.equal(b.x0, drawn[i - 1]!.x1, 'contiguous bins'));
    assert.deepEqual(
      drawn.map((b) => b.count),
      countedIn(result, side, drawn),
      `${side}: each bar counts the rewards in its bin`,
    );
    assert.equal(drawn.reduce((a, b) => a + b.count, 0), result[side].count, `${side}: every reward in a bin`);
  }
}

describe('reward weights panel', () => {
  let t: TempLab;
  let lab: Lab;
  const open: WebviewHarness[] = [];
  const saves: Array<RequestParamsOf<'weights/save'>> = [];
  const rescores: Array<RequestParamsOf<'weights/rescore'>> = [];

  /** The succeeded rollouts a what-if covers, straight from the store. */
  const stored = (): ReturnType<Lab['store']['listRollouts']>['rollouts'] => lab.store.listRollouts({ status: 'succeeded' }).rollouts;

  const panel = async (opts: { theme?: 'dark' | 'light'; state?: unknown } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'rewardWeights',
      {
        // The host's own answers (src/extension/rewardWeights/weightsData.ts) over the real lab.
        'weights/get': async () => weightsConfig(await loadConfig(t.dir), lab.store),
        'weights/whatIf': (p: WhatIfParams) => whatIf(lab.store, p),
        'weights/save': async (p: RequestParamsOf<'weights/save'>) => {
          saves.push(p);
          const loaded = await loadConfig(t.dir);
          const { config } = await writeLabJsonChanges(loaded.file, { criteria: p.criteria, air: p.air });
          return { file: loaded.file, criteria: criteriaList(config), air: config.air };
        },
        'weights/rescore': (p: RequestParamsOf<'weights/rescore'>) => {
          rescores.push(p);
          return { confirmed: true, rescoreId: 'rs_000000000000', rescored: 1, kept: 0, changed: 1 };
        },
        'air/validate': async (p: { rules: unknown[] }) => validateAir((await loadConfig(t.dir)).config, p.rules),
        'air/preview': async (p: { rules: unknown[]; rolloutId: string }) =>
          airPreview((await loadConfig(t.dir)).config, lab.store, lab.store.getRollout(p.rolloutId)!, p.rules),
        'rollouts/list': (q: { limit?: number }) => lab.store.listRollouts({ ...q, sort: 'startTime', order: 'desc' }),
        'runs/list': () => ({ runs: lab.store.listRuns() }),
      },
      { theme: opts.theme, state: opts.state, viewport: { width: 1280, height: 900 } },
    );
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    return h;
  };

  const whatIfRequests = (h: WebviewHarness): WhatIfParams[] =>
    h.sent.filter((m) => m.kind === 'request' && m.method === 'weights/whatIf').map((m) => m.params as WhatIfParams);

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await tempLab('rl-weights-');
    await t.run({ limit: 14, seed: 7 });
    // Two rollouts whose task ids are markup: they must show as text in the top-10 and movers lists.
    const dataset = join(t.dir, 'evil.jsonl');
    writeFileSync(
      dataset,
      [EVIL_TASK, `${EVIL_TASK}-2`].map((id) => JSON.stringify({ id, goal: 'Does aspirin lower colorectal cancer risk?', context: 'A cohort of 20,000 adults.', expected_decision: 'yes' })).join('\n') + '\n',
    );
    await t.run({ limit: 2, seed: 1, dataset, split: 'all' });
    lab = await t.open();
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await lab?.close();
    t?.remove();
  });

  it('shows the criteria from lab.json and the stored rewards as the before histogram', async () => {
    const h = await panel();
    const { config } = await loadConfig(t.dir);
    const names = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-criterion')).map((r) => r.dataset.name));
    assert.deepEqual(names, Object.keys(config.reward.criteria));
    const expected = rescore(stored(), config.reward.criteria);
    assert.ok(expected.before.count >= 10, `enough rollouts with a reward (${expected.before.count})`);
    await h.page.waitForSelector('rect.rw-bar-before', { state: 'attached' });
    await assertBins(h.page, expected);
    // Bins from the data, not ten fixed tenths of 0–1 (which put a lab's rewards in two or three bars).
    const drawn = await bars(h.page, 'before');
    const lo = Math.min(expected.before.min!, expected.after.min!);
    const hi = Math.max(expected.before.max!, expected.after.max!);
    assert.ok(drawn[0]!.x0 <= lo && drawn.at(-1)!.x1 >= hi, 'the bins cover the rewards');
    assert.ok(drawn[0]!.x1 - drawn[0]!.x0 < 0.1, `bins finer than tenths for rewards in ${lo.toFixed(3)}–${hi.toFixed(3)}: ${JSON.stringify(drawn.map((b) => b.x0))}`);
    // The shares are the weights over their sum.
    const sum = Object.values(config.reward.criteria).reduce((a, c) => a + c.weight, 0);
    const impactShare = await h.page.textContent('.rw-criterion[data-name="impact"] .rw-share');
    assert.equal(impactShare, `${((config.reward.criteria.impact!.weight / sum) * 100).toFixed(1)} %`);
    assert.equal(await h.page.locator('.rw-save').evaluate((b) => (b as HTMLElement & { disabled: boolean }).disabled), true, 'nothing to save yet');
    await h.page.screenshot({ path: join(SHOTS, 'reward-weights-open-dark.png') });
    assert.deepEqual(h.errors, []);
  });

  it('editing a weight asks for a what-if with the new weights and draws the new distribution', async () => {
    const h = await panel();
    await h.page.waitForSelector('rect.rw-bar-after', { state: 'attached' });
    await h.page.locator('.rw-criterion[data-name="novelty"] .rw-weight input').fill('0.9');
    const req = await until('a what-if with novelty 0.9', () => whatIfRequests(h).find((p) => p.criteria.novelty?.weight === 0.9));
    const { config } = await loadConfig(t.dir);
    const weights = Object.fromEntries(Object.entries(config.reward.criteria).map(([k, c]) => [k, { weight: k === 'novelty' ? 0.9 : c.weight }]));
    assert.deepEqual(req.criteria, weights);
    const expected = rescore(stored(), weights);
    assert.notDeepEqual(expected.after.histogram, expected.before.histogram, 'the new weights move some rewards across bins');
    await until('the after bars redrawn', async () => {
      const drawn = await bars(h.page, 'after');
      return JSON.stringify(drawn.map((b) => b.count)) === JSON.stringify(countedIn(expected, 'after', drawn));
    });
    await assertBins(h.page, expected);
    assert.equal(await h.page.textContent('.rw-stat-mean'), `${expected.before.mean!.toFixed(3)} → ${expected.after.mean!.toFixed(3)}`);
    assert.equal(await h.page.textContent('.rw-stat-median'), `${expected.before.median!.toFixed(3)} → ${expected.after.median!.toFixed(3)}`);
    assert.equal(await h.page.textContent('.rw-stat-rho'), expected.rankCorrelation === null ? '– (needs two or more differing rewards)' : expected.rankCorrelation.toFixed(3));
    // Top 10 after, in order, with those that entered marked.
    const topAfter = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-top-after .rw-top-item')).map((li) => li.dataset.rollout));
    assert.deepEqual(topAfter, expected.changedTop.after);
    const enteredMarked = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-top-after .rw-entered')).map((li) => li.dataset.rollout));
    assert.deepEqual(enteredMarked, expected.changedTop.entered);
    const leftMarked = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-top-before .rw-left')).map((li) => li.dataset.rollout));
    assert.deepEqual(leftMarked, expected.changedTop.left);
    // The slider follows the number field; the unsaved edit is kept in the panel state.
    assert.equal(await h.page.locator('.rw-criterion[data-name="novelty"] .rw-slider').inputValue(), '0.9');
    const state = await h.page.evaluate(() => (window as unknown as { __lastState: { draft: { criteria: Array<{ name: string; weight: string }> } } }).__lastState);
    assert.equal(state.draft.criteria.find((c) => c.name === 'novelty')!.weight, '0.9');
    // Re-score waits for a save and says why.
    assert.equal(await h.page.locator('.rw-rescore').evaluate((b) => (b as HTMLElement & { disabled: boolean }).disabled), true);
    assert.match((await h.page.textContent('.rw-rescore-hint'))!, /Save first/);

    // An invalid weight is marked on its row and no what-if is asked for it.
    const count = whatIfRequests(h).length;
    await h.page.locator('.rw-criterion[data-name="impact"] .rw-weight input').fill('-1');
    await h.page.waitForSelector('.rw-criterion[data-name="impact"].rw-invalid');
    assert.match((await h.page.textContent('.rw-criterion[data-name="impact"] .rw-problem'))!, /number of 0 or more/);
    await h.page.locator('.rw-criterion[data-name="impact"] .rw-weight input').fill('0.3');
    await until('a what-if after the fix', () => whatIfRequests(h).length > count && whatIfRequests(h).slice(count).every((p) => p.criteria.impact!.weight >= 0));
    assert.deepEqual(h.errors, []);
  });

  it('a click (or Enter) on a rank mover opens that rollout in the trace explorer', async () => {
    const h = await panel();
    await h.page.locator('.rw-criterion[data-name="efficiency"] .rw-weight input').fill('1');
    const { config } = await loadConfig(t.dir);
    const weights = Object.fromEntries(Object.entries(config.reward.criteria).map(([k, c]) => [k, { weight: k === 'efficiency' ? 1 : c.weight }]));
    const movers = whatIf(lab.store, { criteria: weights }).movers;
    assert.ok(movers.length > 0, 'some rollout changes rank');
    await h.page.waitForFunction((id) => document.querySelector('.rw-movers-table tbody tr')?.getAttribute('data-rollout') === id, movers[0]!.rolloutId);
    const rows = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-movers-table tbody tr')).map((tr) => tr.dataset.rollout));
    assert.deepEqual(rows, movers.map((m) => m.rolloutId));
    await h.page.click('.rw-movers-table tbody tr:nth-child(2)');
    await until('trace/open', () => h.sent.find((m) => m.kind === 'command' && m.command === 'trace/open'));
    assert.deepEqual(h.sent.filter((m) => m.command === 'trace/open').pop(), { kind: 'command', command: 'trace/open', args: { rolloutId: movers[1]!.rolloutId } });
    await h.page.focus('.rw-movers-table tbody tr:nth-child(1)');
    await h.page.keyboard.press('ArrowDown');
    await h.page.keyboard.press('ArrowDown');
    await h.page.keyboard.press('Enter');
    await until('a second trace/open', () => h.sent.filter((m) => m.command === 'trace/open').length === 2);
    assert.deepEqual(h.sent.filter((m) => m.command === 'trace/open').pop(), { kind: 'command', command: 'trace/open', args: { rolloutId: movers[Math.min(2, movers.length - 1)]!.rolloutId } });
  });

  it('Save sends the form (changed weight, new criterion, AIR rules) and lab.json gets it', async () => {
    const h = await panel();
    await h.page.locator('.rw-criterion[data-name="groundedness"] .rw-weight input').fill('0.35');
    await h.page.click('.rw-add-criterion');
    const row = h.page.locator('.rw-criterion').last();
    await row.locator('.rw-name input').fill('safety');
    await row.locator('.rw-description input').fill('Flags risks to patients.');
    await row.locator('.rw-weight input').fill('0.15');
    await until('save enabled', () => h.page.locator('.rw-save').evaluate((b) => !(b as HTMLElement & { disabled: boolean }).disabled));
    await h.page.click('.rw-save');
    await h.page.waitForFunction(() => /^Saved to /.test(document.querySelector('.rw-status')?.textContent ?? ''));
    const sent = saves.pop()!;
    assert.equal(sent.criteria.groundedness!.weight, 0.35);
    assert.deepEqual(sent.criteria.safety, { weight: 0.15, description: 'Flags risks to patients.' });
    const { config: before } = await loadConfig(t.dir);
    assert.deepEqual(sent.air, before.air, 'the AIR rules in the form go with it');
    const file = parse(readFileSync(join(t.dir, '.rollout-lab', 'lab.json'), 'utf8'));
    assert.equal(file.reward.criteria.groundedness.weight, 0.35);
    assert.deepEqual(file.reward.criteria.safety, { weight: 0.15, description: 'Flags risks to patients.' });
    // Saved: nothing to save; Re-score is on and sends the saved weights it expects lab.json to hold.
    assert.equal(await h.page.locator('.rw-save').evaluate((b) => (b as HTMLElement & { disabled: boolean }).disabled), true);
    await h.page.click('.rw-rescore');
    const r = await until('weights/rescore', () => rescores.pop());
    assert.equal(r.expect!.safety!.weight, 0.15);
    assert.equal(r.expect!.groundedness!.weight, 0.35);
    await h.page.waitForFunction(() => /^Re-scored 1 rollouts/.test(document.querySelector('.rw-status')?.textContent ?? ''));
    // The new criterion has no stored scores: the what-if (recomputed after the re-score) says it counts as 0.
    await h.page.waitForFunction(() => /safety/.test(document.querySelector('.rw-missing-note')?.textContent ?? ''));
    assert.match((await h.page.textContent('.rw-missing-note'))!, /safety/);
    assert.deepEqual(h.errors, []);
  });

  it('AIR rules: issues are shown beside the row they concern; the preview lists the rewards per span', async () => {
    const h = await panel({ theme: 'light' });
    const rolloutId = stored()[0]!.id;
    await h.notify('air/selectRollout', { rolloutId });
    await h.page.waitForSelector('.rw-preview-table tbody tr');
    const { config } = await loadConfig(t.dir);
    const expected = previewAirRules(config.air, lab.store.getSpans(rolloutId));
    assert.ok(expected.rewards.length > 0, 'the default rules fire on a research-lab rollout');
    const spans = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-preview-table tbody tr')).map((tr) => [tr.dataset.span, tr.dataset.rule]));
    assert.deepEqual(spans, expected.rewards.map((r) => [r.spanId, r.rule]));
    const firstCells = await h.page.evaluate(() => Array.from(document.querySelector('.rw-preview-table tbody tr')!.children).map((td) => td.textContent));
    const r0 = expected.rewards[0]!;
    assert.deepEqual(firstCells, [r0.spanName, r0.agent ?? '–', r0.tool ?? '–', r0.rule, `${r0.reward > 0 ? '+' : ''}${r0.reward.toFixed(3)}`]);
    assert.match((await h.page.textContent('.rw-preview-total'))!, new RegExp(`${expected.total > 0 ? '\\+' : ''}${expected.total.toFixed(3).replace('.', '\\.')}$`));
    const byRule = await h.page.evaluate(() => Array.from(document.querySelectorAll('.rw-by-rule dt')).map((d) => d.textContent));
    assert.deepEqual(byRule, Object.keys(expected.byRule));
    const picked = await h.page.evaluate(() => (document.querySelector('.rw-rollout-picker') as HTMLElement & { value: string }).value);
    assert.equal(picked, rolloutId);

    // An out-of-range reward on the second rule: an error under that row, and no preview.
    await h.page.locator('.rw-rule').nth(1).locator('.rw-rule-reward input').fill('5');
    await h.page.waitForSelector('.rw-rule:nth-child(2) .rw-issue-error');
    assert.equal(await h.page.locator('.rw-rule').nth(1).locator('.rw-issue-error .rw-issue-path').textContent(), 'air[1].reward');
    assert.equal(await h.page.locator('.rw-rule').nth(0).locator('.rw-issue').count(), 0, 'the other rows stay clean');
    assert.match((await h.page.textContent('.rw-preview-status'))!, /Fix the errors/);
    assert.equal(await h.page.locator('.rw-save').evaluate((b) => (b as HTMLElement & { disabled: boolean }).disabled), true, 'no save with an error');
    // An unknown agent on the first rule is a warning beside that row, with the name shown as text.
    await h.page.locator('.rw-rule').nth(1).locator('.rw-rule-reward input').fill('-0.05');
    await h.page.locator('.rw-rule').nth(0).locator('.rw-rule-agents input').fill(EVIL_AGENT);
    await h.page.waitForSelector('.rw-rule:nth-child(1) .rw-issue-warning');
    const warning = await h.page.locator('.rw-rule').nth(0).locator('.rw-issue-warning .rw-issue-message').textContent();
    assert.ok(warning!.includes(EVIL_AGENT), warning!);
    await h.page.waitForSelector('.rw-preview-table');
    // The rule now fires for no agent: the preview drops its rewards.
    const withRule0 = await h.page.locator('.rw-preview-table tbody tr[data-rule="tool_ok"]').count();
    assert.equal(withRule0, 0);
    const injected = await h.page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss);
    assert.equal(injected, undefined);
    await h.page.screenshot({ path: join(SHOTS, 'reward-weights-air-light.png'), fullPage: true });
    assert.deepEqual(h.errors, []);
  });

  it('renders markup in task ids as text, in both themes, with theme colours', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme });
      // The newest rollouts (the evil-task run) head the AIR preview's picker; preview one of them.
      const evil = stored().filter((r) => r.taskId.startsWith(EVIL_TASK));
      assert.equal(evil.length, 2);
      await h.notify('air/selectRollout', { rolloutId: evil[0]!.id });
      await h.page.waitForFunction(() => /spans of task/.test(document.querySelector('.rw-preview-status')?.textContent ?? ''));
      assert.ok((await h.page.textContent('.rw-preview-status'))!.includes(`task ${evil[0]!.taskId};`));
      const options = await h.page.evaluate(() => (document.querySelector('.rw-rollout-picker') as HTMLElement & { options: Array<{ label: string }> }).options.map((o) => o.label));
      assert.ok(options.some((o) => o.startsWith(`${EVIL_TASK} · `)), options.join(' | '));
      // In the top-10 and movers lists, task ids are text too.
      await h.page.locator('.rw-criterion[data-name="clarity"] .rw-weight input').fill('1');
      await h.page.waitForFunction(() => document.querySelectorAll('.rw-top-item').length > 0);
      const tasks = await h.page.evaluate(() => Array.from(document.querySelectorAll('.rw-top-item .rw-task, .rw-movers-table .rw-task')).map((e) => e.textContent));
      const rows = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rw-top-item, .rw-movers-table tbody tr')).map((e) => e.dataset.rollout));
      for (const r of evil) if (rows.includes(r.id)) assert.ok(tasks.includes(r.taskId), `${r.taskId} shown as text`);
      assert.equal(await h.page.locator('.rw-main img, .rw-main script').count(), 0);
      assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: unknown }).__xss), undefined);
      const colours = await h.page.evaluate(() => ({
        before: getComputedStyle(document.querySelector('rect.rw-bar-before')!).fill,
        after: getComputedStyle(document.querySelector('rect.rw-bar-after')!).fill,
        bg: getComputedStyle(document.body).backgroundColor,
      }));
      assert.notEqual(colours.before, colours.after, 'before and after differ');
      assert.equal(colours.bg, theme === 'dark' ? 'rgb(30, 30, 30)' : 'rgb(255, 255, 255)');
      assert.equal(colours.after, theme === 'dark' ? 'rgb(209, 134, 22)' : 'rgb(209, 134, 22)');
      assert.equal(colours.before, theme === 'dark' ? 'rgb(55, 148, 255)' : 'rgb(26, 133, 255)');
      await h.page.screenshot({ path: join(SHOTS, `reward-weights-${theme}.png`), fullPage: true });
      assert.deepEqual(h.errors, []);
    }
  });

  it('brings back unsaved edits from the panel state, and Reset goes back to lab.json', async () => {
    const { config } = await loadConfig(t.dir);
    const criteria = Object.entries(config.reward.criteria).map(([name, c], i) => ({ key: `k${i}`, name, description: c.description, weight: name === 'impact' ? '0.77' : String(c.weight) }));
    const h = await panel({ state: { draft: { criteria, air: [] } } });
    assert.equal(await h.page.locator('.rw-criterion[data-name="impact"] .rw-weight input').inputValue(), '0.77');
    assert.equal(await h.page.evaluate(() => document.body.dataset.dirty), 'true');
    assert.equal(await h.page.locator('.rw-rule').count(), 0);
    const first = whatIfRequests(h)[0]!;
    assert.equal(first.criteria.impact!.weight, 0.77);
    await h.page.click('.rw-reset');
    await h.page.waitForFunction(() => document.body.dataset.dirty === 'false');
    assert.equal(await h.page.locator('.rw-criterion[data-name="impact"] .rw-weight input').inputValue(), String(config.reward.criteria.impact!.weight));
    assert.equal(await h.page.locator('.rw-rule').count(), config.air.length);
  });

  it('recomputes when the store changes', async () => {
    const h = await panel();
    const n = whatIfRequests(h).length;
    await h.notify('store/changed', { rollouts: stored().length });
    await until('a what-if after store/changed', () => whatIfRequests(h).length > n);
    assert.ok(h.sent.filter((m) => m.kind === 'request' && m.method === 'weights/get').length >= 2);
  });
});
