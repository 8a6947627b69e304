import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { RolloutTableQuery, RolloutTableRow } from '../../src/core/store/tableQuery';
import type { TableFacets } from '../../src/shared/tableProtocol';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL = '<img src=x onerror="window.__xss=1">';
const TOTAL = 100_000;
const CRITERIA = ['novelty', 'feasibility', 'clarity', 'impact', 'grounding'];

function idOf(i: number): string {
  return i.toString(16).padStart(32, '0');
}

/** Row i of a 100,000-rollout workspace (the scripted host makes them up on demand, in the order asked). */
function row(i: number): RolloutTableRow {
  return {
    id: idOf(i),
    runId: `run-20261127-${String(Math.floor(i / 1000)).padStart(3, '0')}`,
    taskId: i === 3 ? `t-${EVIL}` : `t-${i}`,
    split: i % 5 === 0 ? 'val' : 'train',
    sample: 0,
    status: i % 17 === 0 ? 'failed' : 'succeeded',
    failure: i % 17 === 0 ? 'timeout' : null,
    reward: i % 17 === 0 ? null : (i % 100) / 100,
    criteria: Object.fromEntries(CRITERIA.map((c, k) => [c, ((i + k) % 10) / 10])),
    decision: 'GO',
    expectedDecision: i % 3 === 0 ? 'no' : 'yes',
    alignment: i % 3 === 0 ? 'misaligned' : 'aligned',
    supersededBy: null,
    turns: 5 + (i % 7),
    inputTokens: 1000 + i,
    outputTokens: 200 + (i % 50),
    latencyMs: 1500 + i,
    cost: (1000 + i) / 1e6,
    simulated: i % 2 === 0,
    startTime: 1_790_000_000_000 - i * 1000,
    spans: 40,
    agents: [
      { agent: 'Geneticist', promptVersion: 'a1b2c3d4e5f6', model: 'small', modelVersion: 'v3' },
      { agent: 'Supervisor', promptVersion: '0f9e8d7c6b5a', model: 'senior', modelVersion: 'base' },
    ],
  };
}

function facets(prices: boolean): TableFacets {
  return {
    runs: [{ id: 'run-20261127-000', startTime: 1, simulated: true }],
    agents: ['Geneticist', 'Supervisor'],
    failures: ['timeout'],
    criteria: CRITERIA,
    promptVersions: [{ agent: 'Geneticist', hash: 'a1b2c3d4e5f6', firstSeen: 1 }],
    modelVersions: [{ model: 'small', version: 'v3' }],
    prices,
  };
}

async function open(opts: { theme?: 'dark' | 'light'; width?: number; prices?: boolean } = {}): Promise<WebviewHarness> {
  const h = await openPanel(
    'rolloutsTable',
    {
      'table/facets': () => facets(opts.prices ?? true),
      'table/query': (q: RolloutTableQuery) => {
        const total = q.text ? 0 : q.statuses?.includes('failed') ? Math.ceil(TOTAL / 17) : TOTAL;
        const offset = q.offset ?? 0;
        const n = Math.max(0, Math.min(q.limit ?? 200, total - offset));
        // asc reverses the made-up order, so a sort visibly changes the first row.
        const index = (k: number): number => (q.order === 'asc' ? total - 1 - k : k);
        return { rows: Array.from({ length: n }, (_, k) => row(index(offset + k))), total, offset };
      },
      'table/ids': () => ({ ids: Array.from({ length: TOTAL }, (_, i) => idOf(i)) }),
    },
    { theme: opts.theme ?? 'dark', viewport: { width: opts.width ?? 1400, height: 700 } },
  );
  await waitReady(h);
  await h.page.waitForSelector('.rt-body .rt-row:not(.rt-loading)');
  return h;
}

const queries = (h: WebviewHarness): RolloutTableQuery[] =>
  h.sent.filter((m) => m.kind === 'request' && m.method === 'table/query').map((m) => m.params as RolloutTableQuery);
const commands = (h: WebviewHarness): Array<{ command: string; args: Record<string, unknown> }> =>
  h.sent.filter((m) => m.kind === 'command') as unknown as Array<{ command: string; args: Record<string, unknown> }>;
const statusText = (h: WebviewHarness): Promise<string> => h.page.locator('.rt-status').innerText();

describe('rollouts table webview', () => {
  after(closeBrowser);

  it('draws only the visible rows of 100,000, paging them from the host as it scrolls', async () => {
    const h = await open();
    try {
      assert.match(await statusText(h), /^100,000 rollouts/);
      const drawn = await h.page.locator('.rt-body .rt-row:not([hidden])').count();
      assert.ok(drawn > 10 && drawn < 80, `only the rows in view (and a few more) are in the DOM, got ${drawn}`);
      assert.ok(queries(h).every((q) => (q.limit ?? 0) <= 200), 'pages of at most 200 rows');
      await h.page.evaluate(() => {
        const s = document.querySelector('.rt-scroller')!;
        s.scrollTop = s.scrollHeight;
      });
      await h.page.waitForFunction(() => Array.from(document.querySelectorAll('.rt-body .rt-row:not([hidden])')).some((r) => r.textContent?.includes('t-99999')));
      const offsets = queries(h).map((q) => q.offset);
      assert.ok(offsets.includes(99_800), 'the last page was fetched');
      assert.ok(queries(h).length <= 4, `only the pages looked at were fetched, got ${queries(h).length}`);
      assert.ok((await h.page.locator('.rt-body .rt-row:not([hidden])').count()) < 80);
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  });

  it('shows text as text, never as markup', async () => {
    const h = await open();
    try {
      const cell = h.page.locator('.rt-body .rt-row', { hasText: 't-<img' });
      assert.equal(await cell.count(), 1);
      assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
      assert.equal(await h.page.locator('.rt-body img').count(), 0);
    } finally {
      await h.close();
    }
  });

  it('sorts by a column on click and from the keyboard', async () => {
    const h = await open();
    try {
      await h.page.getByRole('button', { name: 'Reward' }).click();
      await h.page.waitForFunction(() => document.querySelector('[aria-sort="descending"]')?.textContent?.startsWith('Reward'));
      assert.deepEqual({ sort: queries(h).at(-1)!.sort, order: queries(h).at(-1)!.order }, { sort: 'reward', order: 'desc' });
      await h.page.keyboard.press('Enter'); // focus stays on the header button
      await h.page.waitForFunction(() => document.querySelector('[aria-sort="ascending"]')?.textContent?.startsWith('Reward'));
      assert.deepEqual({ sort: queries(h).at(-1)!.sort, order: queries(h).at(-1)!.order }, { sort: 'reward', order: 'asc' });
      await h.page.waitForFunction(() => document.querySelector('.rt-body .rt-row:not([hidden])')?.textContent?.includes('t-99999'));
      await h.page.getByRole('button', { name: 'novelty' }).click();
      assert.equal(queries(h).at(-1)!.sort, 'criterion:novelty');
    } finally {
      await h.close();
    }
  });

  it('filters by status, reward, criterion and text, and says when nothing matches', async () => {
    const h = await open();
    try {
      await h.page.selectOption('select[data-filter="statuses"]', 'failed');
      await h.page.waitForFunction(() => document.querySelector('.rt-status')?.textContent?.startsWith('5,883 rollouts'));
      assert.deepEqual(queries(h).at(-1)!.statuses, ['failed']);
      await h.page.getByRole('button', { name: 'More filters' }).click();
      await h.page.fill('input[data-range="Reward:min"]', '0.5');
      await h.page.press('input[data-range="Reward:min"]', 'Tab');
      assert.deepEqual(queries(h).at(-1)!.reward, { min: 0.5 });
      await h.page.fill('input[data-range="clarity:max"]', '0.3');
      await h.page.press('input[data-range="clarity:max"]', 'Tab');
      assert.deepEqual(queries(h).at(-1)!.criteria, { clarity: { max: 0.3 } });
      await h.page.fill('.rt-search', 'amyloid');
      await h.page.press('.rt-search', 'Enter');
      await h.page.waitForFunction(() => document.querySelector('.rt-message')?.textContent === 'No rollout matches these filters.');
      assert.equal(queries(h).at(-1)!.text, 'amyloid');
      assert.deepEqual(queries(h).at(-1)!.statuses, ['failed'], 'filters add up');
    } finally {
      await h.close();
    }
  });

  it('selects with the keyboard, opens with Enter, and the actions post the right commands', async () => {
    const h = await open();
    try {
      await h.page.focus('.rt-grid');
      await h.page.keyboard.press('ArrowDown');
      await h.page.keyboard.press('Shift+ArrowDown');
      await h.page.keyboard.press('Shift+ArrowDown');
      await h.page.waitForFunction(() => document.querySelector('.rt-status')?.textContent?.includes('3 selected'));
      assert.equal(await h.page.locator('.rt-row[aria-selected="true"]').count(), 3);
      await h.page.keyboard.press('Enter');
      assert.deepEqual(commands(h).at(-1), { kind: 'command', command: 'trace/open', args: { rolloutId: idOf(3) } });

      await h.page.getByRole('button', { name: 'Export…' }).click();
      assert.deepEqual(commands(h).at(-1)!.args, { rolloutIds: [idOf(1), idOf(2), idOf(3)] });
      assert.equal(commands(h).at(-1)!.command, 'table/export');
      await h.page.getByRole('button', { name: 'Re-score…' }).click();
      assert.equal(commands(h).at(-1)!.command, 'table/rescore');
      await h.page.getByRole('button', { name: 'Add to dataset…' }).click();
      assert.deepEqual(commands(h).at(-1), { kind: 'command', command: 'table/addToDataset', args: { rolloutIds: [idOf(1), idOf(2), idOf(3)] } });

      const before = commands(h).length;
      await h.page.getByRole('button', { name: 'Compare' }).click();
      assert.equal(commands(h).length, before, 'three selected: nothing is compared');
      assert.match(await h.page.locator('.rt-message').innerText(), /two rollouts side by side; 3 are selected/);

      // Ctrl+click takes one out: two left, compared left to right in table order.
      await h.page.locator('.rt-row[aria-selected="true"]', { hasText: 't-2' }).first().click({ modifiers: ['Control'] });
      await h.page.waitForFunction(() => document.querySelector('.rt-status')?.textContent?.includes('2 selected'));
      await h.page.getByRole('button', { name: 'Compare' }).click();
      assert.deepEqual(commands(h).at(-1), { kind: 'command', command: 'trace/diff', args: { left: idOf(1), right: idOf(3) } });

      await h.page.focus('.rt-grid');
      await h.page.keyboard.press('Control+a');
      await h.page.waitForFunction(() => document.querySelector('.rt-status')?.textContent?.includes('100,000 selected'));
      await h.page.keyboard.press('Escape');
      await h.page.waitForFunction(() => !document.querySelector('.rt-status')?.textContent?.includes('selected'));
      // A plain click selects one row and opens it.
      await h.page.locator('.rt-body .rt-row', { hasText: 't-5' }).first().click();
      assert.deepEqual(commands(h).at(-1), { kind: 'command', command: 'trace/open', args: { rolloutId: idOf(5) } });
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  });

  it('looks right in both themes, with many columns at 1,100 px', async () => {
    mkdirSync(SHOTS, { recursive: true });
    for (const theme of ['dark', 'light'] as const) {
      const h = await open({ theme, width: 1100 });
      try {
        await h.page.focus('.rt-grid');
        await h.page.keyboard.press('ArrowDown');
        await h.page.keyboard.press('Shift+ArrowDown');
        await h.page.getByRole('button', { name: 'More filters' }).click();
        await h.page.screenshot({ path: join(SHOTS, `rolloutsTable-${theme}.png`) });
        await h.page.evaluate(() => (document.querySelector('.rt-scroller')!.scrollLeft = 10_000));
        await h.page.screenshot({ path: join(SHOTS, `rolloutsTable-${theme}-right.png`) });
        // Without prices there is no cost column.
        assert.equal(await h.page.getByRole('button', { name: 'Cost' }).count(), 1);
      } finally {
        await h.close();
      }
    }
    const h = await open({ prices: false });
    try {
      assert.equal(await h.page.getByRole('button', { name: 'Cost' }).count(), 0, 'no prices configured: no cost column');
    } finally {
      await h.close();
    }
  });
});
