import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HostMessage } from '../../src/shared/protocol';
import type { CurvesJob, CurvesPoint } from '../../src/shared/trainingCurvesProtocol';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL = '<img src=x onerror=window.__xss=1>';
const PANEL = 'trainingCurves';

function job(over: Partial<CurvesJob> = {}): CurvesJob {
  return {
    id: `grpo-seniors-${EVIL}`,
    kind: 'grpo',
    phase: `phase ${EVIL}`,
    state: 'running',
    targetName: 'gpu-box',
    targetKind: 'ssh',
    baseModel: 'Qwen/Qwen2.5-1.5B-Instruct',
    createdAt: Date.UTC(2026, 10, 21, 10),
    endedAt: null,
    error: null,
    ...over,
  };
}

/** GRPO metrics events as python-trainer prints them; the first has no clip_frac. */
function grpoPoints(from: number, to: number): CurvesPoint[] {
  const out: CurvesPoint[] = [];
  for (let step = from; step <= to; step++) {
    const values: Record<string, number> = { epoch: 0, loss: 1 / step, reward_mean: 0.1 * step, kl: 0.001 * step, lr: 1e-6 };
    if (step > 1) values.clip_frac = 0.05 * step;
    out.push({ step, values });
  }
  return out;
}

/** Posts a host message to the webview, as the extension host does. */
function post(h: WebviewHarness, msg: HostMessage): Promise<void> {
  return h.page.evaluate((m) => window.postMessage(m, '*'), msg as never);
}

interface ChartShape {
  metric: string;
  dots: number;
  count: number | null;
  vertices: number;
}

/** Each chart as drawn: its metric, its dots, the count its line says it drew, and the vertices of the line's path. */
function charts(h: WebviewHarness): Promise<ChartShape[]> {
  return h.page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>('.tc-card')).map((card) => {
      const path = card.querySelector('path.tc-line');
      const d = path?.getAttribute('d') ?? '';
      return {
        metric: card.dataset.metric ?? '',
        dots: card.querySelectorAll('circle.tc-point').length,
        count: path ? Number(path.getAttribute('data-count')) : null,
        vertices: d ? (d.match(/[ML]/g) ?? []).length : 0,
      };
    }),
  );
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('training curves panel', () => {
  const open: WebviewHarness[] = [];
  const panel = async (theme: 'dark' | 'light' = 'dark'): Promise<WebviewHarness> => {
    const h = await openPanel(PANEL, {}, { theme, viewport: { width: 1100, height: 760 } });
    open.push(h);
    await waitReady(h);
    return h;
  };

  before(() => mkdirSync(SHOTS, { recursive: true }));
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
  });

  it('draws one chart per metric the log has (GRPO ones first, then lr, epoch last), a point per step, and grows as points arrive', async () => {
    const h = await panel();
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job(), points: grpoPoints(1, 3), folder: '/work/lab' } });
    await h.page.waitForSelector('body[data-ready="true"]');
    assert.deepEqual(await charts(h), [
      { metric: 'loss', dots: 3, count: 3, vertices: 3 },
      { metric: 'reward_mean', dots: 3, count: 3, vertices: 3 },
      { metric: 'kl', dots: 3, count: 3, vertices: 3 },
      { metric: 'clip_frac', dots: 2, count: 2, vertices: 2 },
      { metric: 'lr', dots: 3, count: 3, vertices: 3 },
      { metric: 'epoch', dots: 3, count: 3, vertices: 3 },
    ]);
    // Each chart has its axes.
    assert.equal(await h.page.locator('.tc-card .tc-axis-x').count(), 6);
    assert.equal(await h.page.locator('.tc-card .tc-axis-y').count(), 6);

    await post(h, { kind: 'notification', type: 'curves/append', params: { points: grpoPoints(4, 5) } });
    const grown = await until('the appended points', async () => {
      const c = await charts(h);
      return c[0]!.dots === 5 ? c : undefined;
    });
    assert.deepEqual(
      grown.map((c) => [c.metric, c.dots, c.count, c.vertices]),
      [
        ['loss', 5, 5, 5],
        ['reward_mean', 5, 5, 5],
        ['kl', 5, 5, 5],
        ['clip_frac', 4, 4, 4],
        ['lr', 5, 5, 5],
        ['epoch', 5, 5, 5],
      ],
    );
    const dotSteps = await h.page.$$eval('.tc-card[data-metric="loss"] circle.tc-point', (cs) => cs.map((c) => Number(c.getAttribute('data-step'))));
    assert.deepEqual(dotSteps, [1, 2, 3, 4, 5]);
    assert.match((await h.page.textContent('.tc-status'))!, /^last step 5 · 5 metrics events$/);
    assert.match((await h.page.textContent('.tc-card[data-metric="reward_mean"] .tc-last'))!, /^0\.5 at step 5$/);

    // A log replayed from the start (a reattach) replaces the points instead of adding to them.
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job(), points: grpoPoints(1, 2), folder: '/work/lab' } });
    await until('the reset', async () => (await charts(h))[0]!.dots === 2);

    await post(h, { kind: 'notification', type: 'curves/job', params: { job: job({ state: 'succeeded', endedAt: Date.now() }) } });
    await until('the new state', async () => (await h.page.textContent('.tc-state')) === 'succeeded');
    assert.deepEqual(h.errors, []);
  });

  it('shows the job\'s name, phase and error as text, never as HTML', async () => {
    const h = await panel();
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job({ state: 'failed', error: `boom ${EVIL}` }), points: grpoPoints(1, 2), folder: '/work/lab' } });
    await h.page.waitForSelector('body[data-ready="true"]');
    const seen = await h.page.evaluate(() => ({
      title: document.querySelector('.tc-title')?.textContent,
      meta: document.querySelector('.tc-meta')?.textContent,
      error: document.querySelector('.tc-error')?.textContent,
      images: document.querySelectorAll('img').length,
      xss: (window as unknown as { __xss?: unknown }).__xss,
    }));
    assert.equal(seen.title, `grpo-seniors-${EVIL}`);
    assert.match(seen.meta!, /phase phase <img src=x onerror=window\.__xss=1> on gpu-box \(ssh\)/);
    assert.equal(seen.error, `boom ${EVIL}`);
    assert.equal(seen.images, 0);
    assert.equal(seen.xss, undefined);
    // The state the serializer restores after a reload names the job and its lab.
    assert.deepEqual(await h.page.evaluate(() => (window as unknown as { __lastState?: unknown }).__lastState), { jobId: `grpo-seniors-${EVIL}`, folder: '/work/lab' });
    assert.deepEqual(h.errors, []);
  });

  it('an SFT job gets the loss chart; the keyboard reads each step out; Show Log asks the host', async () => {
    const h = await panel();
    const points: CurvesPoint[] = [1, 2, 3, 4].map((step) => ({ step, values: { epoch: 0, loss: 2 / step, lr: 2e-4, grad_norm: 1, tokens: 100 } }));
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job({ id: 'sft-juniors-1', kind: 'sft', phase: 'sft-juniors' }), points, folder: '/work/lab' } });
    await h.page.waitForSelector('body[data-ready="true"]');
    // loss first, then the other metrics the trainer logs (lr, grad_norm), then the rest; epoch last.
    assert.deepEqual((await charts(h)).map((c) => [c.metric, c.dots]), [['loss', 4], ['lr', 4], ['grad_norm', 4], ['tokens', 4], ['epoch', 4]]);

    await h.page.focus('.tc-card[data-metric="loss"] svg.tc-chart');
    await h.page.keyboard.press('End');
    await until('the last step read out', async () => (await h.page.textContent('.tc-sr-only')) === 'loss at step 4: 0.5');
    await h.page.keyboard.press('ArrowLeft');
    await until('step 3 read out', async () => (await h.page.textContent('.tc-sr-only')) === 'loss at step 3: 0.6667');
    assert.equal(await h.page.locator('.tc-cursor-dot').count(), 1);
    await h.page.keyboard.press('Escape');
    assert.equal(await h.page.locator('.tc-cursor-dot').count(), 0);

    await h.page.click('.tc-show-log');
    await until('the Show Log command', async () => h.sent.some((m) => m.kind === 'command' && m.command === 'job/showLog'));
    assert.deepEqual(h.errors, []);
  });

  it('a job that failed (or was cancelled) before any metrics says so, instead of waiting for them', async () => {
    const h = await panel();
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job({ state: 'failed', error: 'the trainer exited with status 1' }), points: [], folder: '/work/lab' } });
    await h.page.waitForSelector('body[data-ready="true"]');
    const status = (await h.page.textContent('.tc-status'))!;
    assert.doesNotMatch(status, /Waiting/);
    assert.match(status, /^No metrics: the job failed before it reported a step/);
    assert.equal(await h.page.textContent('.tc-error'), 'the trainer exited with status 1');
    assert.equal(await h.page.isVisible('.tc-grid-host'), false, 'no empty charts for a job that ended');
    await h.page.screenshot({ path: join(SHOTS, 'training-curves-failed-dark.png') });
    await post(h, { kind: 'notification', type: 'curves/job', params: { job: job({ state: 'cancelled', error: 'cancelled' }) } });
    await until('the cancelled line', async () => /cancelled before it reported a step/.test((await h.page.textContent('.tc-status'))!));
    // A running job with no metrics yet does wait.
    await post(h, { kind: 'notification', type: 'curves/job', params: { job: job({ state: 'running' }) } });
    await until('the waiting line', async () => (await h.page.textContent('.tc-status')) === 'Waiting for the first metrics…');
    assert.equal(await h.page.isVisible('.tc-grid-host'), true);
    assert.deepEqual(h.errors, []);
  });

  it('shows step N of M and the time left from the step rate once the trainer said how many steps it plans', async () => {
    const h = await panel();
    const t0 = Date.now() - 60_000;
    // Steps 1-5 read 10 s apart: 10 s a step, 15 steps to go, about 2 min 30 s left.
    const points = grpoPoints(1, 5).map((p, i) => ({ ...p, at: t0 + i * 10_000 }));
    await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job({ createdAt: t0 - 30_000 }), points, folder: '/work/lab', totalSteps: 20 } });
    await h.page.waitForSelector('body[data-ready="true"]');
    assert.equal(await h.page.textContent('.tc-status'), 'step 5 of 20 · about 2 min 30 s left · 5 metrics events');
    // Ended: no time left to show.
    await post(h, { kind: 'notification', type: 'curves/job', params: { job: job({ state: 'succeeded', endedAt: Date.now() }) } });
    await until('the ended line', async () => (await h.page.textContent('.tc-status')) === 'step 5 of 20 · 5 metrics events');
    assert.deepEqual(h.errors, []);
  });

  it('saves screenshots in dark and light themes', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel(theme);
      const t0 = Date.now() - 120_000;
      const points = grpoPoints(1, 12).map((p, i) => ({ ...p, values: { ...p.values, grad_norm: 2 / (i + 1) + 0.3 }, at: t0 + i * 9_000 }));
      await post(h, { kind: 'notification', type: 'curves/reset', params: { job: job({ id: 'grpo-seniors-20261121-100000-ab12', phase: 'grpo-seniors', createdAt: t0 }), points, folder: '/work/lab', totalSteps: 40 } });
      await h.page.waitForSelector('body[data-ready="true"]');
      await h.page.screenshot({ path: join(SHOTS, `training-curves-${theme}.png`) });
      assert.deepEqual(h.errors, []);
    }
  });
});
