import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { Lab } from '../../src/core/lab/lab';
import { buildEvaluationReport, defaultReportRun, reportOptionsFromConfig, type EvaluationReport } from '../../src/core/analysis/evaluationReport';
import type { ReportRunSummary } from '../../src/shared/reportProtocol';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';
import { tempLab, type TempLab } from './labViewsData';
import { textToSqlLab, type TextToSqlLab } from '../fixtures/reports/textToSqlLab';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL_TASK = '<img src=x onerror=window.__xss=1>';
const EVIL_TASK_2 = '</td><script>window.__xss=2</script>|x';

async function selectOption(page: Page, selectSelector: string, label: string): Promise<void> {
  await page.click(selectSelector);
  await page.locator(selectSelector).getByText(label, { exact: false }).click();
}

async function waitFor<T>(what: string, check: () => T | undefined | false): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const v = check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('evaluation report panel', () => {
  let t: TempLab;
  let lab: Lab;
  let trainRun: string;
  let evalRun: string;
  let evilRun: string;
  const exports: Array<{ runId: string; format: string }> = [];
  const open: WebviewHarness[] = [];

  const report = (runId?: string): EvaluationReport | null => {
    const id = runId ?? defaultReportRun(lab.store.listRuns())?.id;
    if (!id) return null;
    if (!lab.store.getRun(id)) throw new Error(`run "${id}" is not in the trace store`);
    return buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, id));
  };
  const runs = (): { runs: ReportRunSummary[]; defaultRunId: string | null } => ({
    runs: lab.store
      .listRuns()
      .sort((a, b) => b.startTime - a.startTime)
      .map((r) => ({
        id: r.id,
        startTime: r.startTime,
        status: r.status,
        command: typeof r.params.command === 'string' ? r.params.command : null,
        split: typeof r.params.split === 'string' ? r.params.split : null,
        simulated: r.simulated,
        rollouts: lab.store.listRollouts({ runId: r.id, limit: 0 }).total,
      })),
    defaultRunId: defaultReportRun(lab.store.listRuns())?.id ?? null,
  });

  const panel = async (opts: { theme?: 'dark' | 'light'; state?: unknown; height?: number; width?: number; get?: (p: { runId?: string }) => EvaluationReport | null } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'evalReport',
      {
        'report/get': opts.get ?? ((p: { runId?: string }) => report(p.runId)),
        'report/runs': () => runs(),
        'report/export': (p: { runId: string; format: string }) => {
          exports.push(p);
          return { saved: true, path: `/tmp/evaluation-${p.runId}.${p.format}` };
        },
      },
      { theme: opts.theme, state: opts.state, viewport: { width: opts.width ?? 1200, height: opts.height ?? 800 } },
    );
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    return h;
  };

  const requests = (h: WebviewHarness, method: string): Array<Record<string, unknown>> =>
    h.sent.filter((m) => m.kind === 'request' && m.method === method).map((m) => m.params as Record<string, unknown>);

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await tempLab('rl-evalreport-');
    trainRun = await t.run({ limit: 3, seed: 3 });
    // An evaluation run (what the panel opens on by default), made as Evaluate makes it.
    const l = await t.open();
    try {
      const ds = await l.loadDataset();
      const env = await l.environment(ds.tasks);
      const { runRollouts } = await import('../../src/core/rollout/runner');
      evalRun = (await runRollouts(env, { tasks: l.selectTasks(ds, { split: 'val', limit: 6, seed: 5 }), samples: 1, concurrency: 3, params: { command: 'eval', split: 'val' }, seed: 5 })).runId;
    } finally {
      await l.close();
    }
    lab = await t.open();
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await lab?.close();
    t?.remove();
  });

  it('opens on the newest evaluation run: SIMULATED banner, the evaluation table with intervals, the same numbers as the report', async () => {
    const h = await panel();
    const r = report(evalRun)!;
    assert.deepEqual(requests(h, 'report/get')[0], {});
    await h.page.waitForSelector('.er-simulated');
    assert.match((await h.page.textContent('.er-simulated'))!, /^SIMULATED endpoint/);
    assert.equal(await h.page.textContent('.er-title'), `Evaluation report: ${evalRun}`);
    const rows = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll('.er-evaluation tbody tr')).map((tr) => Array.from(tr.children).map((c) => c.textContent)),
    );
    const reward = rows.find((x) => x[0] === 'Average final reward')!;
    assert.equal(reward[1], r.table.finalReward.mean!.toFixed(3));
    assert.equal(reward[2], `${r.table.finalReward.ci![0].toFixed(3)} – ${r.table.finalReward.ci![1].toFixed(3)}`);
    const success = rows.find((x) => x[0] === 'Execution success rate')!;
    assert.equal(success[1], `${r.table.executionSuccess.rate!.toFixed(1)} %`);
    assert.equal(success[3], `${r.table.executionSuccess.count}/${r.table.executionSuccess.n}`);
    for (const id of ['facts', 'evaluation', 'criteria', 'agents', 'decisions', 'failures', 'lowest']) {
      assert.equal(await h.page.locator(`section[data-section="${id}"]`).count(), 1, id);
    }
    assert.equal(await h.page.locator('.er-agents tbody tr').count(), r.agents.length);
    assert.equal(await h.page.locator('.er-lowest tbody tr').count(), r.lowest.length);
    const picker = await h.page.evaluate(() => (document.querySelector('.er-run') as unknown as { value: string }).value);
    assert.equal(picker, evalRun);
    assert.deepEqual(h.errors, []);
  });

  it('puts the headline numbers first and the run facts after them, folded; the Agents table fits 1,100 px without scrolling', async () => {
    const h = await panel({ width: 1100 });
    const r = report(evalRun)!;
    const order = await h.page.evaluate(() => Array.from(document.querySelector('.er-content')!.children).map((c) => (c as HTMLElement).dataset.section ?? c.className));
    assert.deepEqual(order.slice(0, 5), ['er-simulated', 'er-title', 'er-headline', 'evaluation', 'facts']);
    assert.equal(await h.page.textContent('.er-kpi[data-kpi="reward"] .er-kpi-value'), r.table.finalReward.mean!.toFixed(3));
    assert.equal(await h.page.textContent('.er-kpi[data-kpi="success"] .er-kpi-value'), `${r.table.executionSuccess.rate!.toFixed(1)} %`);
    // The facts are there, folded, and open on a click.
    assert.equal(await h.page.evaluate(() => (document.querySelector('.er-facts details') as HTMLDetailsElement).open), false);
    assert.equal(await h.page.isVisible('.er-facts tbody'), false);
    await h.page.click('.er-facts summary');
    assert.equal(await h.page.isVisible('.er-facts tbody'), true);
    // No horizontal scrolling in the Agents table at 1,100 px.
    const fit = await h.page.evaluate(() => {
      const w = document.querySelector('.er-agents .er-table-wrap')!;
      return { scroll: w.scrollWidth, client: w.clientWidth };
    });
    assert.ok(fit.scroll <= fit.client, `the Agents table is ${fit.scroll} px wide in ${fit.client} px`);
    assert.deepEqual(h.errors, []);
  });

  it('explains a turn count over runner.maxTurns: the limit beside the average, "over" on the rollout, a note saying what counts', async () => {
    // A limit of 1: every rollout of the research lab (several turns each) goes over it.
    const over = (): EvaluationReport => buildEvaluationReport(lab.store, { ...reportOptionsFromConfig(lab.loaded.config, evalRun), maxTurns: 1 });
    const r = over();
    assert.ok(r.turnLimit && r.turnLimit.over > 0);
    const h = await panel({ get: () => over() });
    assert.equal(await h.page.textContent('.er-kpi[data-kpi="turns"] .er-kpi-sub'), `limit 1 · ${r.turnLimit!.over} over it`);
    assert.match((await h.page.getAttribute('.er-kpi[data-kpi="turns"]', 'title'))!, /handed to the graph.*AI messages/);
    const turnsCells = await h.page.evaluate(() => {
      const s = document.querySelector('section[data-section="lowest"]')!;
      const col = Array.from(s.querySelectorAll('thead th')).findIndex((c) => c.textContent === 'Turns');
      return Array.from(s.querySelectorAll('tbody tr')).map((tr) => tr.children[col]!.textContent);
    });
    assert.ok(turnsCells.every((c) => /^\d+ \(over 1\)$/.test(c ?? '')), turnsCells.join(', '));
    assert.match((await h.page.textContent('.er-notes'))!, /took more turns than runner\.maxTurns \(1\): the limit is handed to the graph/);
    assert.deepEqual(h.errors, []);
  });

  it('draws each criterion as a bar at its mean with a whisker over its interval', async () => {
    const h = await panel();
    const r = report(evalRun)!;
    const drawn = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>('.er-chart-row')).map((row) => {
        const track = row.querySelector<HTMLElement>('.er-chart-track')!.getBoundingClientRect();
        const bar = row.querySelector<HTMLElement>('.er-chart-bar')!.getBoundingClientRect();
        const ci = row.querySelector<HTMLElement>('.er-chart-ci')?.getBoundingClientRect();
        return {
          name: row.dataset.criterion,
          bar: bar.width / track.width,
          low: ci ? (ci.left - track.left) / track.width : null,
          high: ci ? (ci.right - track.left) / track.width : null,
          label: row.getAttribute('aria-label'),
        };
      }),
    );
    assert.deepEqual(drawn.map((d) => d.name), r.criteria.map((c) => c.name));
    drawn.forEach((d, i) => {
      const c = r.criteria[i]!;
      assert.ok(Math.abs(d.bar - c.stat.mean!) < 0.01, `${d.name} bar ${d.bar} vs mean ${c.stat.mean}`);
      if (c.stat.ci) {
        assert.ok(Math.abs(d.low! - Math.max(0, c.stat.ci[0])) < 0.01, `${d.name} whisker low`);
        assert.ok(Math.abs(d.high! - Math.min(1, c.stat.ci[1])) < 0.01, `${d.name} whisker high`);
      }
      assert.match(d.label!, new RegExp(`^${c.name}: mean ${c.stat.mean!.toFixed(3)}`));
    });
  });

  it('rollout links open the trace explorer by mouse and keyboard; arrow keys walk the links', async () => {
    const h = await panel();
    const r = report(evalRun)!;
    await h.page.click('.er-lowest .er-link');
    const cmd = await waitFor('trace/open', () => h.sent.find((m) => m.kind === 'command' && m.command === 'trace/open'));
    assert.deepEqual(cmd.args, { rolloutId: r.lowest[0]!.rolloutId });
    h.sent.length = 0;
    await h.page.focus('.er-lowest .er-link');
    await h.page.keyboard.press('ArrowDown');
    assert.equal(await h.page.evaluate(() => (document.activeElement as HTMLElement).dataset.rolloutId), r.lowest[1]!.rolloutId);
    await h.page.keyboard.press('Enter');
    const byKey = await waitFor('trace/open by Enter', () => h.sent.find((m) => m.kind === 'command' && m.command === 'trace/open'));
    assert.deepEqual(byKey.args, { rolloutId: r.lowest[1]!.rolloutId });
    await h.page.keyboard.press('End');
    assert.equal(await h.page.evaluate(() => (document.activeElement as HTMLElement).dataset.rolloutId), r.lowest[r.lowest.length - 1]!.rolloutId);
    // Failure examples are links too (the simulator's long rollouts reach the turn limit).
    const examples = r.failures.categories.flatMap((c) => c.examples.map((e) => e.rolloutId));
    const linked = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('.er-failures .er-link')).map((b) => b.dataset.rolloutId));
    assert.deepEqual(linked, examples);
    // Tab reaches the controls and the links.
    await h.page.focus('.er-run');
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      await h.page.keyboard.press('Tab');
      order.push(await h.page.evaluate(() => (document.activeElement as HTMLElement).className));
    }
    assert.ok(order.some((c) => /er-export-md/.test(c)) && order.some((c) => /er-export-html/.test(c)), order.join(' / '));
  });

  it('exports Markdown and HTML through the host', async () => {
    const h = await panel();
    exports.length = 0;
    await h.page.click('.er-export-md');
    await h.page.waitForFunction(() => /^Saved .*\.md$/.test(document.querySelector('.er-status')?.textContent ?? ''));
    await h.page.click('.er-export-html');
    await h.page.waitForFunction(() => /^Saved .*\.html$/.test(document.querySelector('.er-status')?.textContent ?? ''));
    assert.deepEqual(exports, [
      { runId: evalRun, format: 'md' },
      { runId: evalRun, format: 'html' },
    ]);
  });

  it('follows the store live, switches runs from the picker and on report/show, keeps the run, and renders task ids as text', async () => {
    const h = await panel();
    const dataset = join(t.dir, 'evil.jsonl');
    writeFileSync(
      dataset,
      [EVIL_TASK, EVIL_TASK_2].map((id) => JSON.stringify({ id, goal: 'Does aspirin lower colorectal cancer risk?', context: 'A cohort of 20,000 adults.', expected_decision: 'yes' })).join('\n') + '\n',
    );
    evilRun = await t.run({ limit: 2, seed: 1, dataset, split: 'all' });
    await lab.store.refresh();
    const before = requests(h, 'report/get').length;
    await h.notify('store/changed', { rollouts: lab.store.listRollouts({ limit: 0 }).total });
    await waitFor('a reload', () => requests(h, 'report/get').length > before);
    await h.page.waitForFunction((n) => (document.querySelector('.er-run') as unknown as { options: unknown[] }).options.length === n, 3);

    await selectOption(h.page, '.er-run', evilRun);
    await h.page.waitForFunction((id) => document.querySelector('.er-title')?.textContent === `Evaluation report: ${id}`, evilRun);
    assert.deepEqual(requests(h, 'report/get').pop(), { runId: evilRun });
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState))!;
    assert.equal(state.runId, evilRun);
    const tasks = await h.page.evaluate(() => Array.from(document.querySelectorAll('.er-lowest tbody tr')).map((tr) => tr.children[1]!.textContent));
    assert.deepEqual(tasks.sort(), [EVIL_TASK, EVIL_TASK_2].sort());
    const injected = await h.page.evaluate(() => ({
      xss: (window as unknown as { __xss?: number }).__xss,
      imgs: document.querySelectorAll('#app img').length,
      scripts: document.querySelectorAll('#app script').length,
    }));
    assert.deepEqual(injected, { xss: undefined, imgs: 0, scripts: 0 });
    await h.page.screenshot({ path: join(SHOTS, 'eval-report-evil.png') });

    // The host shows another run (as after Evaluate).
    await h.notify('report/show', { runId: trainRun });
    await h.page.waitForFunction((id) => document.querySelector('.er-title')?.textContent === `Evaluation report: ${id}`, trainRun);
    assert.equal(((await h.page.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState))!).runId, trainRun);
    assert.deepEqual(h.errors, []);
  });

  it('comes back on the run it showed; a run that is gone falls back to the default one', async () => {
    const h = await panel({ state: { runId: trainRun } });
    assert.deepEqual(requests(h, 'report/get')[0], { runId: trainRun });
    assert.equal(await h.page.textContent('.er-title'), `Evaluation report: ${trainRun}`);
    const gone = await panel({ state: { runId: 'run-gone' } });
    await gone.page.waitForFunction(() => /^Evaluation report: /.test(document.querySelector('.er-title')?.textContent ?? ''));
    assert.equal(await gone.page.textContent('.er-title'), `Evaluation report: ${evalRun}`);
    assert.match((await gone.page.textContent('.er-status'))!, /run-gone is not in the store/);
  });

  it('reads in both themes (screenshots for a look by eye)', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme, width: 1100, height: 1400, state: { runId: evalRun } });
      const colours = await h.page.evaluate(() => {
        const bar = document.querySelector('.er-chart-bar')!;
        const body = document.body;
        return { bar: getComputedStyle(bar).backgroundColor, fg: getComputedStyle(body).color, bg: getComputedStyle(body).backgroundColor };
      });
      assert.notEqual(colours.fg, colours.bg);
      assert.equal(colours.bar, theme === 'dark' ? 'rgb(55, 148, 255)' : 'rgb(26, 133, 255)', 'the bar takes --vscode-charts-blue');
      await h.page.screenshot({ path: join(SHOTS, `eval-report-${theme}.png`), fullPage: true });
      assert.deepEqual(h.errors, []);
    }
  });
});

describe('evaluation report panel of a lab without a judge', () => {
  let sql: TextToSqlLab;
  let report: EvaluationReport;
  const open: WebviewHarness[] = [];

  before(async () => {
    sql = await textToSqlLab();
    report = buildEvaluationReport(sql.lab.store, reportOptionsFromConfig(sql.lab.loaded.config, sql.runId));
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await sql?.close();
  });

  it('shows what the lab has: its decisions, its reward breakdown and info, a rollout without output; no criteria, no judge', async () => {
    const run = sql.lab.store.getRun(sql.runId)!;
    const h = await openPanel(
      'evalReport',
      {
        'report/get': () => report,
        'report/runs': () => ({
          runs: [{ id: run.id, startTime: run.startTime, status: run.status, command: 'eval', split: 'all', simulated: run.simulated, rollouts: sql.rollouts.length }],
          defaultRunId: run.id,
        }),
        'report/export': () => ({ saved: false, path: null }),
      },
      { viewport: { width: 1200, height: 900 } },
    );
    open.push(h);
    await waitReady(h);
    await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
    const sections = await h.page.evaluate(() => Array.from(document.querySelectorAll<HTMLElement>('section[data-section]')).map((s) => s.dataset.section));
    assert.deepEqual(sections, ['evaluation', 'facts', 'agents', 'decisions', 'failures', 'lowest']);
    assert.equal(await h.page.locator('.er-chart-row').count(), 0, 'no criteria chart');
    const table = (section: string): Promise<{ head: string[]; rows: string[][] }> =>
      h.page.evaluate((id) => {
        const s = document.querySelector(`section[data-section="${id}"]`)!;
        return {
          head: Array.from(s.querySelectorAll('thead th')).map((c) => c.textContent ?? ''),
          rows: Array.from(s.querySelectorAll('tbody tr')).map((tr) => Array.from(tr.children).map((c) => c.textContent ?? '')),
        };
      }, section);
    const evaluation = await table('evaluation');
    assert.deepEqual(evaluation.rows.map((r) => r[0]), ['Execution success rate', 'No final output', 'Average final reward', 'Average turn count', 'Reward: execution_match', 'Reward: valid_sql']);
    const decisions = await table('decisions');
    assert.deepEqual(decisions.head, ['Decision', 'Rollouts', 'Mean reward', '95 % CI']);
    assert.deepEqual(decisions.rows.map((r) => [r[0], r[1]]), [['CORRECT', '3'], ['INCORRECT', '2'], ['(none)', '1']]);
    const lowest = await table('lowest');
    assert.deepEqual(lowest.head, ['Rollout', 'Task', 'Status', 'Reward', 'execution_match', 'valid_sql', 'Decision', 'Expected', 'Turns', 'Reward info']);
    const empty = lowest.rows.find((r) => r[2] === 'failed (no output)')!;
    assert.deepEqual(empty.slice(3, 6), ['0.000', '0.000', '0.000']);
    assert.equal(empty.at(-1), 'nothing to run');
    assert.equal(await h.page.textContent('.er-status'), '6 rollouts · 5 succeeded · 1 failed (1 without output)');
    const failures = await table('failures');
    assert.equal(failures.rows[0]![0], 'No final output');
    await h.page.screenshot({ path: join(SHOTS, 'eval-report-custom-reward.png'), fullPage: true });
    assert.deepEqual(h.errors, []);
  });
});
