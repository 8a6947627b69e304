import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/core/config/loader';
import { registerModelVersion } from '../../src/core/config/modelRegistry';
import type { Lab } from '../../src/core/lab/lab';
import { rewardSeries } from '../../src/core/analysis/rewardSeries';
import { learningCurve, type LearningCurve } from '../../src/core/train/pipeline/learningCurve';
import { registerTrainedModel } from '../../src/core/train/phases/trainedModel';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';
import { tempLab, type TempLab } from './labViewsData';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL_VERSION = '<img src=x onerror=window.__xss=1>';

/*
 * The Reward Curve panel's "Validation per model version" view: the learning
 * curve of a real simulated lab evaluated before and after a junior version
 * was registered, drawn from what core's learningCurve answers.
 */
describe('reward curve: validation reward per model version', () => {
  let t: TempLab;
  let empty: TempLab;
  let lab: Lab;
  let emptyLab: Lab;
  let curve: LearningCurve;
  const open: WebviewHarness[] = [];

  const panel = async (of: () => Lab, opts: { theme?: 'dark' | 'light'; state?: unknown } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'rewardCurve',
      {
        'rewards/series': (p: { runId?: string }) => rewardSeries(of().store, Object.keys(of().loaded.config.reward.criteria), p),
        'runs/list': () => ({ runs: of().store.listRuns() }),
        'rewards/learningCurve': (p: { agent?: string }) => learningCurve(of().store, of().loaded, p),
      },
      { theme: opts.theme, state: opts.state, viewport: { width: 1200, height: 900 } },
    );
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    return h;
  };

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await tempLab('rl-learning-curve-');
    await t.run({ limit: 6, seed: 3, split: 'val' });
    registerTrainedModel(await loadConfig(t.dir), 'junior', { version: 'sft-1', phase: 'sft-juniors' });
    await t.run({ limit: 6, seed: 3, split: 'val' });
    // Registered after the evaluations: a version with no point yet, whose label is markup.
    registerModelVersion(join(t.dir, '.rollout-lab'), 'junior', { version: EVIL_VERSION });
    lab = await t.open();
    curve = learningCurve(lab.store, lab.loaded);
    empty = await tempLab('rl-learning-curve-empty-');
    await empty.run({ limit: 2, seed: 1 });
    emptyLab = await empty.open();
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await lab?.close();
    await emptyLab?.close();
    t?.remove();
    empty?.remove();
  });

  it('draws a dot with its interval bar per evaluated version, the paired change, and a table of the same numbers', async () => {
    const h = await panel(() => lab);
    await h.page.click('.rc-view');
    await h.page.locator('.rc-view').getByText('Validation per model version', { exact: true }).click();
    await h.page.waitForSelector('.lc-series[data-model="junior"] .lc-point');
    const junior = curve.series.find((s) => s.model === 'junior')!;
    const drawn = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll('.lc-series[data-model="junior"] .lc-point')).map((g) => ({
        version: g.getAttribute('data-version'),
        rollouts: Number(g.getAttribute('data-rollouts')),
        mean: g.getAttribute('data-mean') === null ? null : Number(g.getAttribute('data-mean')),
        ci: JSON.parse(g.getAttribute('data-ci') ?? 'null') as [number, number] | null,
        bars: g.querySelectorAll('line.lc-ci').length,
        hollow: g.classList.contains('lc-simulated'),
        active: g.classList.contains('lc-active'),
      })),
    );
    assert.deepEqual(
      drawn,
      junior.points.map((p) => ({
        version: p.label,
        rollouts: p.rollouts,
        mean: p.rollouts ? p.reward.mean : null,
        ci: p.rollouts ? p.reward.ci : null,
        bars: p.rollouts && p.reward.ci ? 3 : 0,
        hollow: p.simulated > 0,
        active: p.active,
      })),
    );
    assert.deepEqual(drawn.map((d) => [d.version, d.rollouts]), [['base', 6], ['junior@sft-1', 6], [`junior@${EVIL_VERSION}`, 0]]);
    // The interval bar spans the interval on the chart's 0..1 axis: lower end lower on screen.
    const bar = await h.page.evaluate(() => {
      const l = document.querySelector('.lc-series[data-model="junior"] .lc-point line.lc-ci')!;
      return [Number(l.getAttribute('y1')), Number(l.getAttribute('y2'))];
    });
    assert.ok(bar[0]! >= bar[1]!, `interval bar from ${bar[0]} down to ${bar[1]}`);

    const change = await h.page.textContent('.lc-series[data-model="junior"] .lc-change[data-version="junior@sft-1"]');
    const c = junior.points[1]!.change!;
    assert.ok(change!.startsWith(`${c.delta! >= 0 ? '+' : '−'}${Math.abs(c.delta!).toFixed(3)}`), change!);

    const rows = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll('.lc-series[data-model="junior"] .lc-table tbody tr')).map((tr) => Array.from(tr.children).map((td) => td.textContent)),
    );
    assert.equal(rows.length, 3);
    assert.equal(rows[0]![0], 'base');
    assert.equal(rows[0]![3], junior.points[0]!.reward.mean!.toFixed(3));
    assert.equal(rows[0]![4], `[${junior.points[0]!.reward.ci![0].toFixed(3)}, ${junior.points[0]!.reward.ci![1].toFixed(3)}]`);
    assert.match(rows[1]![1]!, /^sft-juniors, /);
    assert.match(rows[1]![5]!, /\(6 pairs with base\)$/);
    assert.deepEqual(rows[2]!.slice(0, 3), [`junior@${EVIL_VERSION} (active)`, 'registered by hand', 'not evaluated']);
    assert.ok(await h.page.isVisible('text=Hollow dots: some of the version\'s rollouts were answered by the SIMULATED endpoint'));

    // Keyboard: the chart takes focus and the arrows read each version out.
    await h.page.focus('.lc-series[data-model="junior"] .lc-chart');
    await h.page.keyboard.press('ArrowRight');
    await h.page.waitForFunction(() => /^base: mean reward \d\.\d{3}, 95 % interval/.test(document.querySelector('.lc-root [aria-live]')?.textContent ?? ''));
    await h.page.keyboard.press('ArrowRight');
    await h.page.waitForFunction(() => (document.querySelector('.lc-root [aria-live]')?.textContent ?? '').startsWith('junior@sft-1: mean reward'));
    assert.equal(await h.page.getAttribute('.lc-series[data-model="junior"] .lc-point.lc-cursor', 'data-version'), 'junior@sft-1');

    // The per-rollout controls are out of the way; the choice is kept for the next time the panel opens.
    assert.equal(await h.page.isVisible('.rc-stage'), false);
    assert.equal(await h.page.isVisible('.rc-split'), false);
    const injected = await h.page.evaluate(() => ({ xss: (window as unknown as { __xss?: unknown }).__xss, imgs: document.querySelectorAll('img').length }));
    assert.deepEqual(injected, { xss: undefined, imgs: 0 });
    assert.ok(h.sent.some((m) => m.kind === 'request' && m.method === 'rewards/learningCurve'));
    assert.deepEqual(h.errors, []);
  });

  it('says how to get points when no version was evaluated on validation, and switches view when the host asks', async () => {
    const h = await panel(() => emptyLab);
    assert.equal(await h.page.isVisible('.lc-root'), false);
    await h.notify('rewards/showLearningCurve', {});
    await h.page.waitForSelector('.lc-empty');
    const text = await h.page.textContent('.lc-empty');
    assert.match(text!, /No validation reward per model version yet\./);
    assert.match(text!, /run `rollout-lab eval` \(or Evaluate on Validation Set\) after each training phase/);
    assert.equal(await h.page.isVisible('.rc-stage'), false);
    assert.deepEqual(h.errors, []);
  });

  it('saves screenshots in dark and light themes', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel(() => lab, { theme, state: { view: 'versions' } });
      await h.page.waitForSelector('.lc-series[data-model="junior"] .lc-point');
      await h.page.screenshot({ path: join(SHOTS, `learning-curve-${theme}.png`), fullPage: true });
      assert.deepEqual(h.errors, []);
    }
  });
});
