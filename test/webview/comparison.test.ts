import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord, RunRecord } from '../../src/core/store/types';
import { compareRuns, type ComparisonResult } from '../../src/core/analysis/comparison';
import { listComparisons } from '../../src/core/analysis/comparisonList';
import { comparisonTask } from '../../src/core/analysis/comparisonTask';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL = '<img src=x onerror="window.__xss=1">';
const EVIL_TASK = `t-${EVIL}`;
const CRITERIA = ['clarity', 'impact'];
const JSON_PROTOCOL = JSON.stringify({ title: 'Knockout study', steps: ['breed mice', 'measure'], controls: ['wild type'] }, null, 2);
const PROSE_PROTOCOL = `Design: a randomised trial of ${EVIL} with a placebo arm. `.repeat(12);

type State = Record<string, unknown>;

function hex(n: number): string {
  return randomBytes(n).toString('hex');
}

/** A real store with two comparisons: A vs B on six tasks (one with markup in its id), and a second small one. */
async function buildStore(dir: string): Promise<TraceStore> {
  const store = await TraceStore.open(dir);
  const run = (id: string, side: 'a' | 'b', cmp: string, label: string, startTime: number): void => {
    const r: RunRecord = { id, startTime, endTime: startTime + 10, status: 'done', params: { command: 'compare', comparison: { id: cmp, side, label, variant: { label } } }, simulated: true, planned: 6 };
    store.startRun(r);
  };
  run('run-a1', 'a', 'cmp-1', `base ${EVIL}`, 1000);
  run('run-b1', 'b', 'cmp-1', 'trained seniors', 2000);
  run('run-a2', 'a', 'cmp-2', 'older A', 100);
  run('run-b2', 'b', 'cmp-2', 'older B', 200);
  const tasks = ['t1', 't2', 't3', 't4', 't5', EVIL_TASK];
  const rewardsA = [0.5, 0.6, 0.7, 0.4, 0.55, 0.3];
  const rewardsB = [0.65, 0.55, 0.7, 0.6, 0.58, 0.2];
  let n = 0;
  const add = (runId: string, taskId: string, reward: number, protocol: string, decision: string): void => {
    const id = hex(16);
    const start = 10_000 + n++;
    const rec: RolloutRecord = {
      id, runId, taskId, split: 'val', sample: 0, status: 'succeeded', finalReward: reward, criteria: { clarity: reward, impact: 1 - reward }, judgeFailed: false,
      decision, expectedDecision: 'yes', turns: 5, error: null, simulated: true, startTime: start, endTime: start + 5, spanCount: 2, agents: [],
    };
    store.startRollout({ ...rec, status: 'running', finalReward: null });
    const root: SpanRecord = {
      traceId: id, spanId: hex(8), parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: start, endTime: start + 5, status: 'ok',
      attributes: { [Attr.finalOutput]: protocol, 'rollout_lab.task.goal': `Does drug X help? ${EVIL}` },
    };
    const judge: SpanRecord = {
      traceId: id, spanId: hex(8), parentSpanId: root.spanId, name: 'judge', kind: 'reward', startTime: start + 4, endTime: start + 5, status: 'ok',
      attributes: { [Attr.rewardKind]: 'judge', 'rollout_lab.judge.rationale': `Rationale for ${runId}: ${EVIL}` },
    };
    store.writeSpan(root);
    store.writeSpan(judge);
    store.finishRollout(rec);
  };
  tasks.forEach((t, i) => {
    add('run-a1', t, rewardsA[i]!, PROSE_PROTOCOL, 'NO-GO');
    add('run-b1', t, rewardsB[i]!, JSON_PROTOCOL, 'GO');
  });
  add('run-a2', 't1', 0.2, 'old A', 'GO');
  add('run-b2', 't1', 0.3, 'old B', 'GO');
  return store;
}

describe('comparison panel', () => {
  let dir: string;
  let store: TraceStore;
  let expected: ComparisonResult;
  const open: WebviewHarness[] = [];

  const panel = async (opts: { theme?: 'dark' | 'light'; state?: unknown } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'comparison',
      {
        'comparison/list': () => ({ comparisons: listComparisons(store) }),
        'comparison/get': (p: { runA: string; runB: string }) => compareRuns(store, p.runA, p.runB, CRITERIA),
        'comparison/task': (p: { runA: string; runB: string; taskId: string }) => comparisonTask(store, p, p.taskId),
      },
      { theme: opts.theme, state: opts.state, viewport: { width: 1300, height: 900 } },
    );
    open.push(h);
    await waitReady(h);
    return h;
  };
  const requests = (h: WebviewHarness, method: string): Array<Record<string, unknown>> =>
    h.sent.filter((m) => m.kind === 'request' && m.method === method).map((m) => m.params as Record<string, unknown>);
  const selectedTask = (h: WebviewHarness): Promise<string | null> =>
    h.page.evaluate(() => document.querySelector<HTMLElement>('.cmp-task.selected')?.dataset.taskId ?? null);
  const shownTask = (h: WebviewHarness, taskId: string): Promise<unknown> =>
    h.page.waitForFunction((t) => document.querySelector('.cmp-task-title')?.textContent === `Task ${t}`, taskId);
  const state = (h: WebviewHarness): Promise<State> => h.page.evaluate(() => (window as unknown as { __lastState: State }).__lastState);

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    dir = mkdtempSync(join(tmpdir(), 'rl-cmp-webview-'));
    store = await buildStore(dir);
    expected = compareRuns(store, 'run-a1', 'run-b1', CRITERIA);
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens the newest comparison: labels, aggregate, criteria and a task list sorted by difference, all as text', async () => {
    const h = await panel();
    await h.page.waitForSelector('.cmp-aggregate-table');
    assert.deepEqual(requests(h, 'comparison/get')[0], { runA: 'run-a1', runB: 'run-b1' });
    const labels = await h.page.$$eval('.cmp-header .cmp-side-name', (es) => es.map((e) => e.textContent));
    assert.deepEqual(labels, [`base ${EVIL}`, 'trained seniors']);
    const cells = await h.page.$$eval('.cmp-aggregate-table tbody tr', (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent)));
    const g = expected.aggregate;
    const pm = (m: number, ci: [number, number]): string => `${m.toFixed(3)} ± ${((ci[1] - ci[0]) / 2).toFixed(3)}`;
    assert.deepEqual(cells[0], ['Mean reward', pm(g.meanA!, g.ciA!), pm(g.meanB!, g.ciB!), `+${g.meanDifference!.toFixed(3)}`]);
    assert.deepEqual(cells[1], ['95 % CI', `${g.ciA![0].toFixed(3)} to ${g.ciA![1].toFixed(3)}`, `${g.ciB![0].toFixed(3)} to ${g.ciB![1].toFixed(3)}`, `${g.ciDifference![0].toFixed(3)} to ${g.ciDifference![1].toFixed(3)}`]);
    assert.match((await h.page.textContent('.cmp-p-t'))!, new RegExp(`^p ${g.pairedT!.pValue.toFixed(3)} \\(t = ${g.pairedT!.t.toFixed(2)}, df 5\\)$`));
    assert.match((await h.page.textContent('.cmp-p-w'))!, new RegExp(`^p ${g.wilcoxon!.pValue.toFixed(3)} \\(exact`));
    assert.equal(await h.page.textContent('.cmp-wtl'), `${g.wins} / ${g.ties} / ${g.losses}`);
    assert.equal(await h.page.textContent('.cmp-significance'), 'not significant at the 5 % level');
    assert.match((await h.page.textContent('.cmp-verdict'))!, /no significant difference — B \(trained seniors\) scores/);
    const crit = await h.page.$$eval('.cmp-criteria-table tbody tr', (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent)));
    assert.deepEqual(crit.map((r) => r[0]), CRITERIA);
    assert.equal(crit[0]![3], `+${g.criteria[0]!.difference!.toFixed(3)}`);
    // Sorted by difference, largest first, as the core computed them.
    const ids = await h.page.$$eval('.cmp-task', (es) => es.map((e) => (e as HTMLElement).dataset.taskId));
    assert.deepEqual(ids, [...expected.tasks].sort((x, y) => y.difference - x.difference).map((t) => t.taskId));
    assert.ok(ids.includes(EVIL_TASK));
    assert.equal(await h.page.locator('img').count(), 0, 'markup in labels and task ids is text');
    assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.deepEqual(h.errors, []);
  });

  it('shows the two protocols side by side with judge scores, decisions and links to the trace explorer', async () => {
    const h = await panel();
    const first = [...expected.tasks].sort((x, y) => y.difference - x.difference)[0]!;
    await shownTask(h, first.taskId);
    const sides = await h.page.$$eval('.cmp-side', (es) => es.map((e) => e.querySelector('.cmp-side-name')?.textContent));
    assert.deepEqual(sides, [`base ${EVIL}`, 'trained seniors']);
    const protocolA = await h.page.$eval('.cmp-side-a .cmp-protocol', (e) => ({ tag: e.tagName, text: e.textContent, font: getComputedStyle(e).fontFamily, wrap: getComputedStyle(e).whiteSpace }));
    const protocolB = await h.page.$eval('.cmp-side-b .cmp-protocol', (e) => ({ tag: e.tagName, text: e.textContent, font: getComputedStyle(e).fontFamily, wrap: getComputedStyle(e).whiteSpace }));
    assert.equal(protocolA.text, PROSE_PROTOCOL, 'prose protocol shown literally, markup included');
    assert.equal(protocolA.tag, 'DIV');
    assert.equal(protocolA.wrap, 'pre-wrap');
    assert.notEqual(protocolA.font, 'monospace');
    assert.equal(protocolB.text, JSON_PROTOCOL);
    assert.equal(protocolB.tag, 'PRE');
    assert.equal(protocolB.font, 'monospace', 'JSON in the editor font');
    // Side by side: B's column starts to the right of A's, at the same height.
    const boxes = await h.page.$$eval('.cmp-side', (es) => es.map((e) => e.getBoundingClientRect().toJSON() as DOMRect));
    assert.ok(boxes[1]!.left >= boxes[0]!.right - 1 && Math.abs(boxes[1]!.top - boxes[0]!.top) < 2);
    // The protocol wraps: no horizontal overflow out of its column.
    assert.ok(await h.page.$eval('.cmp-side-a .cmp-protocol', (e) => e.scrollWidth <= e.clientWidth + 1));
    const scoresB = await h.page.$$eval('.cmp-side-b .cmp-scores tbody tr', (rows) => rows.map((r) => Array.from(r.children).map((c) => c.textContent)));
    assert.deepEqual(scoresB[0]!.slice(0, 2), ['clarity', first.rewardB.toFixed(3)]);
    assert.match(scoresB[0]![2]!, /vs A$/);
    assert.equal(await h.page.textContent('.cmp-side-a .cmp-decision'), 'NO-GO · expected yes · not aligned');
    assert.equal(await h.page.textContent('.cmp-side-b .cmp-decision'), 'GO · expected yes · aligned');
    assert.equal(await h.page.textContent('.cmp-side-b .cmp-rationale'), `Rationale for run-b1: ${EVIL}`);
    assert.equal(await h.page.textContent('.cmp-goal'), `Does drug X help? ${EVIL}`);
    await h.page.click('.cmp-side-b .cmp-open-trace');
    const cmd = h.sent.filter((m) => m.kind === 'command').pop();
    assert.deepEqual(cmd, { kind: 'command', command: 'trace/open', args: { rolloutId: first.rolloutIdsB[0] } });
    // The task's trace diff: A's rollout on the left, B's on the right.
    await h.page.click('.cmp-trace-diff');
    const diff = h.sent.filter((m) => m.kind === 'command').pop();
    assert.deepEqual(diff, { kind: 'command', command: 'trace/diff', args: { left: first.rolloutIdsA[0], right: first.rolloutIdsB[0] } });
    assert.equal(await h.page.locator('img').count(), 0);
    assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    await h.page.screenshot({ path: join(SHOTS, 'comparison-dark.png'), fullPage: false });
    assert.deepEqual(h.errors, []);
  });

  it('keyboard: one tab stop in the task list, arrows, Home and End move the selection and load that task', async () => {
    const h = await panel({ theme: 'light' });
    const order = [...expected.tasks].sort((x, y) => y.difference - x.difference).map((t) => t.taskId);
    await shownTask(h, order[0]!);
    assert.equal(await h.page.$$eval('.cmp-task[tabindex="0"]', (es) => es.length), 1);
    await h.page.focus('.cmp-task.selected');
    await h.page.keyboard.press('ArrowDown');
    await shownTask(h, order[1]!);
    assert.equal(await selectedTask(h), order[1]);
    assert.equal(await h.page.evaluate(() => (document.activeElement as HTMLElement).dataset.taskId), order[1], 'focus follows the selection');
    await h.page.keyboard.press('End');
    await shownTask(h, order[order.length - 1]!);
    await h.page.keyboard.press('ArrowDown');
    assert.equal(await selectedTask(h), order[order.length - 1], 'stays on the last row');
    await h.page.keyboard.press('Home');
    await shownTask(h, order[0]!);
    await h.page.keyboard.press('ArrowUp');
    assert.equal(await selectedTask(h), order[0]);
    // The task request is made per selection, never for all tasks at once.
    const asked = requests(h, 'comparison/task').map((p) => p.taskId);
    assert.deepEqual([...new Set(asked)].sort(), [order[0], order[1], order[order.length - 1]].sort());
    // Tab leaves the list for the detail's controls.
    await h.page.keyboard.press('Tab');
    assert.ok(await h.page.evaluate(() => !document.activeElement?.classList.contains('cmp-task')));
    await h.page.screenshot({ path: join(SHOTS, 'comparison-light.png'), fullPage: false });
    assert.deepEqual(h.errors, []);
  });

  it('sorts the task list and keeps what it shows across a reload; the host can show another comparison', async () => {
    const h = await panel();
    await h.page.waitForSelector('.cmp-task.selected');
    await h.page.click('.cmp-sort');
    await h.page.locator('.cmp-sort').getByText('Difference B − A, smallest first', { exact: true }).click();
    const asc = [...expected.tasks].sort((x, y) => x.difference - y.difference).map((t) => t.taskId);
    await h.page.waitForFunction((first) => (document.querySelector('.cmp-task') as HTMLElement | null)?.dataset.taskId === first, asc[0]);
    assert.deepEqual(await h.page.$$eval('.cmp-task', (es) => es.map((e) => (e as HTMLElement).dataset.taskId)), asc);
    await h.page.click(`.cmp-task[data-task-id="t3"]`);
    await shownTask(h, 't3');
    const saved = await state(h);
    assert.equal(saved.runA, 'run-a1');
    assert.equal(saved.runB, 'run-b1');
    assert.equal(saved.taskId, 't3');
    assert.equal(saved.sort, 'diff-asc');

    const again = await panel({ state: saved });
    await shownTask(again, 't3');
    assert.equal(await selectedTask(again), 't3');
    assert.deepEqual(await again.page.$$eval('.cmp-task', (es) => es.map((e) => (e as HTMLElement).dataset.taskId)), asc);

    await again.notify('comparison/show', { runA: 'run-a2', runB: 'run-b2' });
    await again.page.waitForFunction(() => document.querySelector('.cmp-header .cmp-side-name')?.textContent === 'older A');
    await shownTask(again, 't1');
    assert.equal(await again.page.$$eval('.cmp-task', (es) => es.length), 1);
    assert.equal((await state(again)).runA, 'run-a2');

    // Two runs that are not one comparison, and a run that does not exist.
    await again.notify('comparison/show', { runA: 'run-a1', runB: 'run-nope' });
    await again.page.waitForFunction(() => document.querySelector('.cmp-message')?.classList.contains('error'));
    assert.match((await again.page.textContent('.cmp-message'))!, /Cannot compare run-a1 with run-nope: side B run "run-nope" is not in this workspace's store/);
    assert.deepEqual(again.errors.filter((e) => !/run-nope/.test(e)), []);
  });
});
