import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildWebview } from './fixtures/buildWebview';
import type { TraceFixture } from './fixtures/realTraces';
import { syntheticTrace } from './fixtures/syntheticTrace';
import { closeBrowser, openPanel, waitReady } from './harness';
import { pagedTrace } from './fixtures/pagedTrace';
import { buildTraceModel } from '../../webview/traceExplorer/traceModel';

let huge: TraceFixture;

before(async () => {
  await buildWebview('traceExplorer');
  huge = syntheticTrace(100_000, { logprobsEvery: 7 });
});
after(async () => {
  await closeBrowser();
});

test('100,000 spans open without truncation: every span counted, the last one reachable', async () => {
  for (const theme of ['dark', 'light'] as const) {
    const h = await openPanel('traceExplorer', pagedTrace(huge), { theme, viewport: { width: 1400, height: 900 } });
    try {
      await waitReady(h);
      const t0 = Date.now();
      await h.notify('trace/show', { rolloutId: huge.rollout.id });
      await h.page.waitForFunction(() => document.body.dataset.paintedAt, undefined, { timeout: 120_000 });
      console.log(`${theme}: first rows of 100,000 spans painted ${Date.now() - t0} ms after trace/show (harness transport included)`);
      const page = h.page;
      assert.ok((await page.locator('.te-row').count()) > 10, 'rows from the first page');
      await page.screenshot({ path: `test-results/trace-100k-loading-${theme}.png` });
      await page.waitForFunction(() => document.body.dataset.spansShown === '100000', undefined, { timeout: 600_000 });
      console.log(`${theme}: all 100,000 spans shown ${Date.now() - t0} ms after trace/show`);
      assert.equal(await page.$eval('.te-spacer', (e) => parseFloat((e as HTMLElement).style.height)), 100_000 * 22, 'one row height per span');
      await page.screenshot({ path: `test-results/trace-100k-top-${theme}.png` });
      await page.focus('.te-viewport');
      await page.keyboard.press('End');
      const m = buildTraceModel(huge.spans);
      const last = m.spans[m.spans.length - 1]!;
      await page.waitForFunction((id) => Array.from(document.querySelectorAll<HTMLElement>('.te-row:not([hidden])')).some((r) => r.dataset.spanId === id), last.spanId);
      assert.ok((await page.locator('.te-row').count()) < 300, 'the rows are virtualised');
      await page.screenshot({ path: `test-results/trace-100k-end-${theme}.png` });
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  }
});
