import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Lab } from '../../src/core/lab/lab';
import { rewardSeries } from '../../src/core/analysis/rewardSeries';
import type { RequestParamsOf, RewardPoint } from '../../src/shared/protocol';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';
import { tempLab, type TempLab } from './labViewsData';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL_TASK = '<img src=x onerror=window.__xss=1>';
const EVIL_TASK_2 = '=HYPERLINK("http://x")</script><b>bold</b>';

/** The expected rolling mean, written out independently of the panel's code. */
function expectedMean(values: number[], window: number): number[] {
  return values.map((_v, i) => {
    const slice = values.slice(Math.max(0, i - window + 1), i + 1);
    return slice.reduce((a, b) => a + b, 0) / slice.length;
  });
}

function assertClose(actual: Array<number | null>, expected: number[], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  actual.forEach((v, i) => assert.ok(v !== null && Math.abs(v - expected[i]!) < 1e-9, `${what}[${i}]: ${v} vs ${expected[i]}`));
}

function pathValues(page: Page, selector: string): Promise<Array<number | null> | null> {
  return page.evaluate((sel) => {
    const p = document.querySelector(sel);
    return p ? (JSON.parse(p.getAttribute('data-values') ?? 'null') as Array<number | null>) : null;
  }, selector);
}

/** Parses RFC 4180 CSV (quoted cells with doubled quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return rows;
}

async function selectOption(page: Page, selectSelector: string, label: string, exact = true): Promise<void> {
  await page.click(selectSelector);
  await page.locator(selectSelector).getByText(label, { exact }).click();
}

/** The last command the webview posted, once one matching `command` has arrived. */
async function lastCommand(h: WebviewHarness, command: string): Promise<unknown> {
  for (let i = 0; i < 200; i++) {
    const c = h.sent.filter((m) => m.kind === 'command' && m.command === command).pop();
    if (c) return c;
    await new Promise((r) => setTimeout(r, 25));
  }
  return undefined;
}

describe('reward curve panel', () => {
  let t: TempLab;
  let lab: Lab;
  let firstRun: string;
  let secondRun: string;
  const saved: Array<RequestParamsOf<'export/save'>> = [];
  const open: WebviewHarness[] = [];
  const series = (p: { runId?: string } = {}): ReturnType<typeof rewardSeries> => rewardSeries(lab.store, Object.keys(lab.loaded.config.reward.criteria), p);

  const panel = async (opts: { theme?: 'dark' | 'light'; state?: unknown } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'rewardCurve',
      {
        'rewards/series': (p: { runId?: string }) => series(p),
        'runs/list': () => ({ runs: lab.store.listRuns() }),
        'export/save': (p: RequestParamsOf<'export/save'>) => {
          saved.push(p);
          return { saved: true, path: `/tmp/${p.suggestedName}` };
        },
      },
      { theme: opts.theme, state: opts.state, viewport: { width: 1200, height: 720 } },
    );
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    return h;
  };

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await tempLab('rl-rewardcurve-');
    firstRun = await t.run({ limit: 10, seed: 3 });
    // The next run has a new SafetyOfficer prompt and a new version of the senior model.
    writeFileSync(join(t.dir, '.rollout-lab', 'prompts', 'SafetyOfficer.md'), 'You are the safety officer. Flag CRITICAL and MAJOR risks, briefly.\n');
    t.editConfig((cfg) => (cfg.models.senior.version = 'v2'));
    secondRun = await t.run({ limit: 12, seed: 4 });
    lab = await t.open();
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await lab?.close();
    t?.remove();
  });

  it('draws one point per rollout in start order and the rolling mean with a configurable window', async () => {
    const h = await panel();
    const s = series();
    assert.equal(s.points.length, 22);
    await h.page.waitForSelector('.rc-mean');
    const ids = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGCircleElement>('circle.rc-point')).map((c) => c.dataset.rollout));
    assert.deepEqual(ids, s.points.map((p) => p.rolloutId));
    const rewards = s.points.map((p) => p.finalReward);
    assertClose((await pathValues(h.page, '.rc-mean'))!, expectedMean(rewards, 10), 'default window 10');
    // The line goes through every rollout.
    const segments = await h.page.evaluate(() => (document.querySelector('.rc-mean')!.getAttribute('d') ?? '').split(/[ML]/).filter(Boolean).length);
    assert.equal(segments, s.points.length);
    // The dots sit at their rewards: a higher reward is drawn higher.
    const ys = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGCircleElement>('circle.rc-point')).map((c) => Number(c.getAttribute('cy'))));
    const hi = rewards.indexOf(Math.max(...rewards));
    const lo = rewards.indexOf(Math.min(...rewards));
    assert.ok(ys[hi]! < ys[lo]!);

    await h.page.locator('.rc-window input').fill('3');
    await h.page.waitForFunction(() => document.querySelector('.rc-mean')?.getAttribute('data-window') === '3');
    assertClose((await pathValues(h.page, '.rc-mean'))!, expectedMean(rewards, 3), 'window 3');
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState))!;
    assert.equal(state.window, 3);
    assert.match((await h.page.textContent('.rc-status'))!, new RegExp(`^22 rollouts · rolling mean ${expectedMean(rewards, 3).pop()!.toFixed(3)}$`));
    assert.deepEqual(h.errors, []);
  });

  it('toggles a line per criterion', async () => {
    const h = await panel();
    const s = series();
    assert.equal(await h.page.locator('.rc-criterion').count(), 0);
    assert.deepEqual(
      await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('vscode-checkbox.rc-criterion-toggle')).map((c) => c.dataset.criterion)),
      s.criteria,
    );
    await h.page.click('vscode-checkbox[data-criterion="impact"]');
    await h.page.click('vscode-checkbox[data-criterion="groundedness"]');
    await h.page.waitForFunction(() => document.querySelectorAll('.rc-criterion').length === 2);
    for (const c of ['impact', 'groundedness']) {
      assertClose((await pathValues(h.page, `.rc-criterion[data-criterion="${c}"]`))!, expectedMean(s.points.map((p) => p.criteria![c]!), 10), c);
    }
    assert.deepEqual(
      await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rc-legend-item[data-criterion]')).map((e) => e.textContent)),
      ['impact', 'groundedness'],
    );
    await h.page.click('vscode-checkbox[data-criterion="impact"]');
    await h.page.waitForFunction(() => document.querySelectorAll('.rc-criterion').length === 1);
    assert.equal(await h.page.locator('.rc-criterion[data-criterion="groundedness"]').count(), 1);
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState))!;
    assert.deepEqual(state.criteria, ['groundedness']);
  });

  it('splits by prompt version and by model version: colours, a legend entry per version, a marker where it changes', async () => {
    const h = await panel();
    const s = series();
    const promptVersions = [...new Set(s.points.map((p) => p.promptVersions.SafetyOfficer))];
    assert.equal(promptVersions.length, 2);
    await selectOption(h.page, '.rc-split', 'Prompt version of SafetyOfficer');
    await h.page.waitForSelector('.rc-legend-version');
    const legend = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rc-legend-version')).map((e) => e.dataset.version));
    assert.deepEqual(legend, promptVersions);
    const changes = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGGElement>('.rc-version-change')).map((g) => Number(g.dataset.index)));
    const firstOfSecond = s.points.findIndex((p) => p.runId === secondRun);
    assert.deepEqual(changes, [firstOfSecond]);
    const dotVersions = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGCircleElement>('circle.rc-point')).map((c) => c.dataset.version));
    assert.deepEqual(dotVersions, s.points.map((p) => p.promptVersions.SafetyOfficer));
    const fills = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGCircleElement>('circle.rc-point')).map((c) => getComputedStyle(c).fill));
    assert.notEqual(fills[0], fills[fills.length - 1], 'versions have different colours');

    await selectOption(h.page, '.rc-split', 'Model version of HypothesisRefiner');
    await h.page.waitForFunction(() => Array.from(document.querySelectorAll<HTMLElement>('.rc-legend-version')).some((e) => e.dataset.version === 'senior@v2'));
    assert.deepEqual(
      await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.rc-legend-version')).map((e) => e.textContent)),
      [`senior (${firstOfSecond})`, `senior@v2 (${s.points.length - firstOfSecond})`],
    );
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState))!;
    assert.equal(state.split, 'model:HypothesisRefiner');
    assert.deepEqual(h.errors, []);
  });

  it('exports CSV rows and a PNG through the host', async () => {
    const h = await panel({ state: { split: 'prompt:SafetyOfficer', criteria: ['impact'] } });
    const s = series();
    saved.length = 0;
    await h.page.click('.rc-export-csv');
    await h.page.waitForFunction(() => /^Saved /.test(document.querySelector('.rc-status')?.textContent ?? ''));
    const csv = saved.find((x) => x.format === 'csv')!;
    assert.equal(csv.suggestedName, 'reward-curve-all-runs.csv');
    const rows = parseCsv(csv.data);
    const agents = Object.keys(s.points[0]!.promptVersions).sort();
    assert.deepEqual(rows[0], [
      'rollout_id', 'run_id', 'task_id', 'start_time', 'reward', ...s.criteria,
      ...agents.map((a) => `prompt_version:${a}`), ...agents.map((a) => `model_version:${a}`),
    ]);
    assert.equal(rows.length, s.points.length + 1);
    s.points.forEach((p, i) => {
      const r = rows[i + 1]!;
      assert.equal(r[0], p.rolloutId);
      assert.equal(r[1], p.runId);
      assert.equal(r[2], p.taskId);
      assert.equal(r[3], new Date(p.startTime).toISOString());
      assert.equal(Number(r[4]), p.finalReward);
      s.criteria.forEach((c, k) => assert.equal(Number(r[5 + k]), p.criteria![c]));
      agents.forEach((a, k) => {
        assert.equal(r[5 + s.criteria.length + k], p.promptVersions[a] ?? '');
        assert.equal(r[5 + s.criteria.length + agents.length + k], p.modelVersions[a] ?? '');
      });
    });

    await h.page.click('.rc-export-png');
    await h.page.waitForFunction(() => /\.png$/.test(document.querySelector('.rc-status')?.textContent ?? ''));
    const png = saved.find((x) => x.format === 'png')!;
    assert.equal(png.suggestedName, 'reward-curve-all-runs.png');
    const bytes = Buffer.from(png.data, 'base64');
    assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(bytes.subarray(12, 16).toString('ascii'), 'IHDR');
    const width = bytes.readUInt32BE(16);
    const height = bytes.readUInt32BE(20);
    const svgSize = await h.page.evaluate(() => {
      const svg = document.querySelector('.rc-chart')!;
      return { w: svg.clientWidth, h: svg.clientHeight };
    });
    // The chart at twice its size, with the legend drawn under it.
    assert.equal(width, svgSize.w * 2);
    assert.ok(height > svgSize.h * 2 && height < svgSize.h * 2 + 200, `height ${height} for a chart ${svgSize.h} high`);
    writeFileSync(join(SHOTS, 'reward-curve-export.png'), bytes);
    assert.deepEqual(h.errors, []);
  });

  it('shows a tooltip on hover and walks the points with the keyboard; Enter opens the rollout', async () => {
    const h = await panel();
    const s = series();
    const pos = await h.page.evaluate(() => {
      const c = document.querySelectorAll<SVGCircleElement>('circle.rc-point')[4]!.getBoundingClientRect();
      return { x: c.left + c.width / 2, y: c.top + c.height / 2 };
    });
    await h.page.mouse.move(pos.x, pos.y);
    await h.page.waitForSelector('.rc-tooltip:not([hidden])');
    const tip = await h.page.textContent('.rc-tooltip');
    const p4 = s.points[4]!;
    assert.ok(tip!.includes(p4.rolloutId) && tip!.includes(`Task ${p4.taskId}`) && tip!.includes(`Reward ${p4.finalReward.toFixed(3)}`), tip!);
    await h.page.mouse.click(pos.x, pos.y);
    assert.deepEqual(await lastCommand(h, 'trace/open'), { kind: 'command', command: 'trace/open', args: { rolloutId: p4.rolloutId } });
    h.sent.length = 0;
    await h.page.mouse.move(2, 2);

    await h.page.focus('.rc-chart');
    await h.page.keyboard.press('ArrowRight');
    await h.page.keyboard.press('ArrowRight');
    assert.match((await h.page.textContent('.rc-tooltip'))!, new RegExp(`^Rollout 2 of ${s.points.length}: ${s.points[1]!.rolloutId}`));
    await h.page.keyboard.press('End');
    const last = s.points[s.points.length - 1]!;
    assert.match((await h.page.textContent('.rc-sr-only[aria-live]'))!, new RegExp(`Rollout ${s.points.length}: task ${last.taskId}, reward ${last.finalReward.toFixed(3)}`));
    await h.page.keyboard.press('Enter');
    assert.deepEqual(await lastCommand(h, 'trace/open'), { kind: 'command', command: 'trace/open', args: { rolloutId: last.rolloutId } });

    // The table view lists the same rollouts.
    await h.page.click('.rc-table-toggle');
    await h.page.waitForSelector('.rc-table');
    const cells = await h.page.evaluate(() => Array.from(document.querySelectorAll('.rc-table tbody tr')).map((tr) => tr.children[2]!.textContent));
    assert.deepEqual(cells, s.points.map((p) => p.taskId));
    assert.equal(await h.page.locator('.rc-chart').isVisible(), false);
  });

  it('follows the store live, filters by run, and renders task ids literally', async () => {
    const h = await panel();
    const before = series().points.length;
    // Rollouts finish in another lab instance (as the CLI would); this store catches up and the host notifies.
    const dataset = join(t.dir, 'evil.jsonl');
    writeFileSync(
      dataset,
      [EVIL_TASK, EVIL_TASK_2].map((id) => JSON.stringify({ id, goal: 'Does aspirin lower colorectal cancer risk?', context: 'A cohort of 20,000 adults.', expected_decision: 'yes' })).join('\n') + '\n',
    );
    const evilRun = await t.run({ limit: 2, seed: 1, dataset, split: 'all' });
    await lab.store.refresh();
    const now: RewardPoint[] = series().points;
    assert.equal(now.length, before + 2);
    await h.notify('store/changed', { rollouts: now.length });
    await h.page.waitForFunction((n) => document.querySelectorAll('circle.rc-point').length === n, now.length);
    await h.page.click('.rc-table-toggle');
    const tasks = await h.page.evaluate(() => Array.from(document.querySelectorAll('.rc-table tbody tr')).map((tr) => tr.children[2]!.textContent));
    assert.ok(tasks.includes(EVIL_TASK) && tasks.includes(EVIL_TASK_2));
    await h.page.click('.rc-table-toggle');

    // Only that run.
    await selectOption(h.page, '.rc-run', evilRun, false);
    await h.page.waitForFunction(() => document.querySelectorAll('circle.rc-point').length === 2);
    const req = h.sent.filter((m) => m.kind === 'request' && m.method === 'rewards/series').pop();
    assert.deepEqual(req!.params, { runId: evilRun });
    // Hover the evil task: the tooltip shows it as text.
    const pos = await h.page.evaluate(() => {
      const c = document.querySelectorAll<SVGCircleElement>('circle.rc-point')[0]!.getBoundingClientRect();
      return { x: c.left + c.width / 2, y: c.top + c.height / 2 };
    });
    await h.page.mouse.move(pos.x, pos.y);
    await h.page.waitForSelector('.rc-tooltip:not([hidden])');
    assert.match((await h.page.textContent('.rc-tooltip'))!, /Task (<img src=x onerror=window\.__xss=1>|=HYPERLINK)/);
    saved.length = 0;
    await h.page.click('.rc-export-csv');
    await h.page.waitForFunction(() => /^Saved /.test(document.querySelector('.rc-status')?.textContent ?? ''));
    const rows = parseCsv(saved[0]!.data);
    assert.equal(saved[0]!.suggestedName, `reward-curve-${evilRun}.csv`);
    // A cell a spreadsheet would run as a formula is defused with a leading quote.
    assert.ok(rows.some((r) => r[2] === `'${EVIL_TASK_2}`));
    assert.ok(rows.some((r) => r[2] === EVIL_TASK));
    const injected = await h.page.evaluate(() => ({
      xss: (window as unknown as { __xss?: unknown }).__xss,
      imgs: document.querySelectorAll('img').length,
      bold: document.querySelectorAll('b').length,
    }));
    assert.deepEqual(injected, { xss: undefined, imgs: 0, bold: 0 });
    assert.deepEqual(h.errors, []);
    void firstRun;
  });

  it('fits the reward axis to the rewards (0–1 on a toggle) and marks which run each point came from', async () => {
    // Rewards between 0.6 and 0.75, as a real lab's are: on a fixed 0–1 axis they filled a sixth of the chart.
    const narrow = (p: { runId?: string }): ReturnType<typeof rewardSeries> => {
      const s = series(p);
      return { ...s, points: s.points.map((x, i) => ({ ...x, finalReward: 0.6 + ((i * 7) % 16) / 100 })) };
    };
    const h = await openPanel('rewardCurve', { 'rewards/series': narrow, 'runs/list': () => ({ runs: lab.store.listRuns() }) }, { viewport: { width: 1200, height: 720 } });
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    await h.page.waitForSelector('.rc-runband-label');
    const view = (): Promise<{ domain: [number, number]; spread: number; plot: number }> =>
      h.page.evaluate(() => {
        const svg = document.querySelector('svg.rc-chart')!;
        const ys = Array.from(document.querySelectorAll<SVGCircleElement>('circle.rc-point')).map((c) => Number(c.getAttribute('cy')));
        const axis = svg.querySelector('.rc-axis-y .domain')!.getBoundingClientRect();
        return { domain: JSON.parse(svg.getAttribute('data-y-domain')!) as [number, number], spread: Math.max(...ys) - Math.min(...ys), plot: axis.height };
      });
    const fitted = await view();
    assert.ok(fitted.domain[0] <= 0.6 && fitted.domain[1] >= 0.75, `the domain holds every reward: ${fitted.domain}`);
    assert.ok(fitted.domain[0] >= 0.5 && fitted.domain[1] <= 0.85, `fitted with padding, not 0–1: ${fitted.domain}`);
    assert.ok(fitted.spread > fitted.plot * 0.6, `the points use the chart's height: ${fitted.spread} of ${fitted.plot} px`);
    await h.page.click('.rc-full-scale');
    await h.page.waitForFunction(() => document.querySelector('svg.rc-chart')!.getAttribute('data-y-domain') === '[0,1]');
    assert.ok((await view()).spread < fitted.spread / 3, 'on 0–1 the same points are squashed');
    await h.page.click('.rc-full-scale');
    await h.page.waitForFunction(() => document.querySelector('svg.rc-chart')!.getAttribute('data-y-domain') !== '[0,1]');

    // Two runs: a band each over its own points, named after the run, with a boundary between them.
    const runs = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll<SVGGElement>('g.rc-runband')).map((g) => ({
        run: g.dataset.run,
        first: Number(g.dataset.first),
        last: Number(g.dataset.last),
        text: g.querySelector('.rc-runband-label')?.textContent ?? null,
        boundary: g.querySelector('.rc-runband-boundary') !== null,
      })),
    );
    // (An earlier test may have added a run after these two.)
    assert.deepEqual(
      runs.slice(0, 2).map((r) => [r.run, r.first, r.last, r.boundary]),
      [
        [firstRun, 0, 9, false],
        [secondRun, 10, 21, true],
      ],
    );
    runs.forEach((r, i) => i && assert.equal(r.first, runs[i - 1]!.last + 1, 'the bands tile the points'));
    for (const r of runs) assert.ok(r.text?.endsWith(r.run!.slice(-6)), `the band names its run: ${r.text}`);
    await h.page.screenshot({ path: join(SHOTS, 'reward-curve-fitted-runs.png') });
    assert.deepEqual(h.errors, []);
  });

  it('saves screenshots in dark and light themes', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme, state: { split: 'prompt:SafetyOfficer', criteria: ['impact', 'groundedness'], runId: undefined } });
      await h.page.waitForSelector('.rc-legend-version');
      await h.page.waitForFunction(() => document.querySelectorAll('.rc-criterion').length === 2);
      const pos = await h.page.evaluate(() => {
        const c = document.querySelectorAll<SVGCircleElement>('circle.rc-point')[6]!.getBoundingClientRect();
        return { x: c.left + c.width / 2, y: c.top + c.height / 2 };
      });
      await h.page.mouse.move(pos.x, pos.y);
      await h.page.waitForSelector('.rc-tooltip:not([hidden])');
      await h.page.screenshot({ path: join(SHOTS, `reward-curve-${theme}.png`) });
      assert.deepEqual(h.errors, []);
    }
  });
});
