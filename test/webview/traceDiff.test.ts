import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { diffTraces, type TraceDiff } from '../../src/core/analysis/traceDiff';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import type { RolloutRecord } from '../../src/core/store/types';
import { REPO, closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';
import { buildWebview } from './fixtures/buildWebview';
import { realTraces, type TraceFixture } from './fixtures/realTraces';

const SHOTS = join(REPO, 'test-results', 'webview');
const EVIL = '<img src=x onerror="window.__xss=1">';

async function until(h: WebviewHarness, fn: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}; page errors: ${h.errors.join(' | ')}`);
}

/** The right side: the left rollout with one visit dropped, one answer reworded (with markup in it) and one tool result changed. */
function edited(left: TraceFixture): TraceFixture {
  const right = structuredClone(left);
  right.rollout.id = 'b'.repeat(32);
  const nodeIds = new Set(right.spans.filter((s) => s.kind === 'node').map((s) => s.spanId));
  const tools = right.spans.find((s) => s.kind === 'node' && s.name.endsWith('_tools'))!;
  const gone = new Set([tools.spanId]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of right.spans) if (s.parentSpanId && gone.has(s.parentSpanId) && !gone.has(s.spanId)) (gone.add(s.spanId), (grew = true));
  }
  right.spans = right.spans.filter((s) => !gone.has(s.spanId));
  const llm = right.spans.filter((s) => s.kind === 'llm' && nodeIds.has(s.parentSpanId ?? '') && String(s.attributes[Attr.outputMessages]).includes('"content":"{')).at(-1)!;
  llm.attributes[Attr.outputMessages] = String(llm.attributes[Attr.outputMessages]).replace('"content":"{', `"content":"REWORDED ${EVIL.replace(/"/g, '\\"')} {`);
  const tool = right.spans.filter((s) => s.kind === 'tool').at(-1)!;
  tool.attributes[Attr.toolResult] = '{"results":[]}';
  right.rollout.finalReward = (right.rollout.finalReward ?? 0) + 0.1;
  return right;
}

/** A long synthetic rollout: `n` agent steps in a loop of four nodes, each with one model call. */
function longTrace(id: string, n: number, changedAt: readonly number[]): TraceFixture {
  const root: SpanRecord = { traceId: id, spanId: 'f'.repeat(16), parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: 0, endTime: n * 10, status: 'ok', attributes: {} };
  const spans: SpanRecord[] = [root];
  for (let i = 0; i < n; i++) {
    const node = `N${i % 4}`;
    const nodeId = (2 * i + 1).toString(16).padStart(16, '0');
    spans.push({ traceId: id, spanId: nodeId, parentSpanId: root.spanId, name: node, kind: 'node', startTime: i * 10, endTime: i * 10 + 5, status: 'ok', attributes: { [Attr.nodeStep]: i + 1 } });
    const text = changedAt.includes(i) ? `answer ${i} was changed here` : `answer ${i} stays`;
    spans.push({
      traceId: id, spanId: (2 * i + 2).toString(16).padStart(16, '0'), parentSpanId: nodeId, name: 'chat', kind: 'llm', startTime: i * 10 + 1, endTime: i * 10 + 4, status: 'ok',
      attributes: { [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: text }]), [Attr.inputTokens]: 10, [Attr.outputTokens]: 5 },
    });
  }
  const rollout: RolloutRecord = {
    id, runId: 'run-long', taskId: 'long', split: 'train', sample: 0, status: 'succeeded', finalReward: 0.5, criteria: null, judgeFailed: false, decision: null, expectedDecision: null,
    turns: n, error: null, simulated: true, startTime: 0, endTime: n * 10, spanCount: spans.length, agents: [],
  };
  return { rollout, spans };
}

describe('trace diff panel (Chromium)', () => {
  let traces: TraceFixture[];
  let diffs: Map<string, TraceDiff>;
  let edit: TraceFixture;
  before(async () => {
    await buildWebview('traceDiff');
    mkdirSync(SHOTS, { recursive: true });
    traces = await realTraces({ tasks: 2, seed: 5, logprobs: false });
    edit = edited(traces[1]!);
    const long = [longTrace('1'.repeat(32), 4000, []), longTrace('2'.repeat(32), 4000, [5, 2000, 3990])];
    const busy = longTrace('3'.repeat(32), 4000, Array.from({ length: 2000 }, (_, i) => 2 * i));
    diffs = new Map([
      [`${traces[1]!.rollout.id}:${edit.rollout.id}`, diffTraces(traces[1]!, edit)],
      [`${traces[0]!.rollout.id}:${traces[0]!.rollout.id}`, diffTraces(traces[0]!, traces[0]!)],
      [`${traces[0]!.rollout.id}:${traces[1]!.rollout.id}`, diffTraces(traces[0]!, traces[1]!)],
      [`${long[0]!.rollout.id}:${long[1]!.rollout.id}`, diffTraces(long[0]!, long[1]!)],
      [`${long[0]!.rollout.id}:${busy.rollout.id}`, diffTraces(long[0]!, busy)],
    ]);
  });
  after(closeBrowser);

  const open = async (left: string, right: string, opts: { theme?: 'dark' | 'light'; onlyDifferences?: boolean } = {}): Promise<WebviewHarness> => {
    const h = await openPanel(
      'traceDiff',
      {
        'diff/get': ({ left: l, right: r }: { left: string; right: string }) => {
          const d = diffs.get(`${l}:${r}`);
          if (!d) throw new Error(`the left rollout ${l} is not in this workspace's store`);
          return d;
        },
      },
      { theme: opts.theme, state: { left, right, onlyDifferences: opts.onlyDifferences ?? false }, viewport: { width: 1300, height: 900 } },
    );
    await waitReady(h);
    await until(h, async () => (await h.page.locator('.td-list > li').count()) > 0, 'rows');
    return h;
  };

  it('draws the aligned steps with a removed visit, word marks built as nodes, and the deltas', async () => {
    const left = traces[1]!;
    const d = diffs.get(`${left.rollout.id}:${edit.rollout.id}`)!;
    const h = await open(left.rollout.id, edit.rollout.id);
    try {
      const p = h.page;
      // One only-left row (the dropped tool visit), two changed rows, the identical ones drawn or folded.
      assert.equal(await p.locator('.td-row[data-kind="left"]').count(), 1);
      assert.equal(await p.locator('.td-row[data-kind="right"]').count(), 0);
      assert.equal(await p.locator('.td-row[data-kind="changed"]').count(), 2);
      const drawnSame = await p.locator('.td-row[data-kind="same"]').count();
      const folded = await p.locator('.td-fold').evaluateAll((els) => els.map((e) => Number(/^(\d+)/.exec(e.querySelector('.td-fold-text')!.textContent!)![1])).reduce((a, b) => a + b, 0));
      assert.equal(drawnSame + folded, d.counts.same);
      assert.ok(folded > 0, 'a run of identical steps is folded');
      // The only-left row: the node on the left, "not on the right" opposite.
      const only = p.locator('.td-row[data-kind="left"]');
      assert.match((await only.locator('.td-left .td-node').textContent())!, /_tools$/);
      assert.equal(await only.locator('.td-right').textContent(), 'not on the right');
      // The reworded answer: <ins> on the right only, the markup shown as text.
      const changed = p.locator('.td-row[data-kind="changed"]').filter({ has: p.locator('ins') });
      assert.equal(await changed.count(), 1);
      const ins = await changed.locator('.td-right ins').allTextContents();
      assert.ok(ins.join('').includes('REWORDED') && ins.join('').includes(EVIL), ins.join('|'));
      assert.equal(await changed.locator('.td-left ins').count(), 0);
      assert.equal(await p.locator('img').count(), 0);
      assert.equal(await p.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
      // The changed tool result is marked on the tool call.
      const toolRow = p.locator('.td-row[data-kind="changed"]').filter({ has: p.locator('.td-aspect', { hasText: 'tool calls' }) });
      assert.equal(await toolRow.count(), 1);
      assert.ok((await toolRow.locator('.td-right .td-tool.td-changed').count()) >= 1);
      // Header: reward delta and the counts.
      assert.equal(await p.locator('.td-delta-reward').textContent(), '+0.100');
      assert.match((await p.locator('.td-summary').textContent())!, /2 changed.*1 only left.*0 only right/);
      assert.deepEqual(h.errors, []);
      await p.screenshot({ path: join(SHOTS, 'trace-diff-dark.png') });
    } finally {
      await h.close();
    }
  });

  it('shows only the differences when asked, and unfolds a hidden run on Enter', async () => {
    const left = traces[1]!;
    const h = await open(left.rollout.id, edit.rollout.id);
    try {
      const p = h.page;
      await p.locator('#td-only').check();
      await until(h, async () => (await p.locator('.td-row[data-kind="same"]').count()) === 0, 'identical rows hidden');
      assert.equal(await p.locator('.td-row[data-kind]').count(), 3);
      assert.ok((await p.locator('.td-fold').count()) >= 1);
      assert.equal(((await p.evaluate(() => (window as unknown as { __lastState: Record<string, unknown> }).__lastState)) ?? {}).onlyDifferences, true);
      // Unfold the first hidden run with the keyboard.
      await p.locator('.td-list').focus();
      await p.keyboard.press('Home');
      const first = p.locator('.td-list > li').first();
      assert.ok(await first.evaluate((e) => e.classList.contains('td-fold')));
      const before = await p.locator('.td-row[data-kind="same"]').count();
      await p.keyboard.press('Enter');
      await until(h, async () => (await p.locator('.td-row[data-kind="same"]').count()) > before, 'unfolded rows');
      // Unchecking brings every step back.
      await p.locator('#td-only').uncheck();
      await until(h, async () => (await p.locator('.td-row[data-kind="left"]').count()) === 1 && (await p.locator('#td-only').isChecked()) === false, 'all rows');
    } finally {
      await h.close();
    }
  });

  it('moves between differing steps with n and p, and opens a side in the trace explorer', async () => {
    const left = traces[1]!;
    const h = await open(left.rollout.id, edit.rollout.id);
    try {
      const p = h.page;
      const current = (): Promise<string | null> => p.locator('.td-current').getAttribute('data-kind');
      await p.locator('.td-list').focus();
      await p.keyboard.press('n');
      const first = await current();
      assert.ok(first === 'left' || first === 'changed');
      const order: string[] = [first!];
      await p.keyboard.press('n');
      order.push((await current())!);
      await p.keyboard.press('n');
      order.push((await current())!);
      assert.deepEqual([...order].sort(), ['changed', 'changed', 'left']);
      await p.keyboard.press('n');
      assert.equal(await p.locator('.td-status').textContent(), 'no later difference');
      await p.keyboard.press('p');
      assert.equal(await current(), order[1]);
      assert.match((await p.locator('.td-status').textContent())!, /^difference 2 of 3$/);
      // The focused row is the current one (visible focus, keyboard reachable).
      assert.ok(await p.evaluate(() => document.activeElement?.classList.contains('td-current')));
      // Enter opens the left side at that node; Shift+Enter the right one.
      const node = await p.locator('.td-current .td-left .td-node').textContent();
      await p.keyboard.press('Enter');
      await p.keyboard.press('Shift+Enter');
      await until(h, () => h.sent.filter((m) => m.kind === 'command').length >= 2, 'commands');
      const cmds = h.sent.filter((m) => m.kind === 'command');
      assert.deepEqual(cmds.slice(-2), [
        { kind: 'command', command: 'trace/open', args: { rolloutId: left.rollout.id, node } },
        { kind: 'command', command: 'trace/open', args: { rolloutId: edit.rollout.id, node } },
      ]);
      // A click on a cell opens that side; the header's button opens the rollout.
      await p.locator('.td-row[data-kind="left"] .td-left').click();
      await p.locator('.td-card-right .td-open').click();
      await until(h, () => h.sent.filter((m) => m.kind === 'command').length >= 4, 'click commands');
      const more = h.sent.filter((m) => m.kind === 'command').slice(-2) as unknown as Array<{ args: { rolloutId: string; node?: string } }>;
      assert.equal(more[0]!.args.rolloutId, left.rollout.id);
      assert.match(more[0]!.args.node!, /_tools$/);
      assert.deepEqual(more[1]!.args, { rolloutId: edit.rollout.id });
    } finally {
      await h.close();
    }
  });

  it('says there is no difference between a rollout and itself', async () => {
    const id = traces[0]!.rollout.id;
    const h = await open(id, id, { theme: 'light' });
    try {
      const p = h.page;
      assert.match((await p.locator('.td-identical').textContent())!, /^No differences/);
      assert.equal(await p.locator('.td-row[data-kind]').count(), 0);
      assert.equal(await p.locator('.td-fold').count(), 1);
      await p.keyboard.press('n');
      assert.equal(await p.locator('.td-status').textContent(), 'no later difference');
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  });

  it('draws two different tasks (paths of different lengths) in both themes', async () => {
    const [a, b] = [traces[0]!.rollout.id, traces[1]!.rollout.id];
    for (const theme of ['dark', 'light'] as const) {
      const h = await open(a, b, { theme });
      try {
        const d = diffs.get(`${a}:${b}`)!;
        const rows = await h.page.locator('.td-row[data-kind]').count();
        const folded = await h.page.locator('.td-fold').count();
        assert.ok(rows > 0 && rows <= d.rows.length && rows + folded >= 1);
        assert.equal(await h.page.locator('.td-row[data-kind="right"]').count(), d.counts.right);
        await h.page.screenshot({ path: join(SHOTS, `trace-diff-tasks-${theme}.png`) });
        await h.page.locator('.td-final summary').click();
        await h.page.locator('.td-final').screenshot({ path: join(SHOTS, `trace-diff-final-${theme}.png`) });
        assert.deepEqual(h.errors, []);
      } finally {
        await h.close();
      }
    }
  });

  it('keeps a 4,000-step diff light: identical runs folded, rows drawn in batches, n reaches the last difference', async () => {
    const h = await open('1'.repeat(32), '2'.repeat(32));
    try {
      const p = h.page;
      assert.match((await p.locator('.td-summary').textContent())!, /3,997 same.*3 changed/);
      const drawn = await p.locator('.td-list > li').count();
      assert.ok(drawn < 20, `only ${drawn} items: three changed rows and the folds between them`);
      await p.locator('.td-list').focus();
      for (let i = 0; i < 3; i++) await p.keyboard.press('n');
      assert.match((await p.locator('.td-current .td-right ins').textContent())!, /changed/);
      assert.equal(await p.locator('.td-current .td-right .td-node').textContent(), 'N2');
      // Unfolding the 1,994-step run draws a batch, not all of them.
      await p.keyboard.press('p');
      await p.keyboard.press('ArrowDown');
      await p.keyboard.press('Enter');
      await until(h, async () => (await p.locator('.td-row[data-kind="same"]').count()) > 0, 'unfolded rows');
      const rows = await p.locator('.td-row[data-kind="same"]').count();
      assert.ok(rows <= 160, `${rows} identical rows drawn`);
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  });

  it('draws a window of a 4,000-row diff with 2,000 differences: End and Home redraw around the target, scrolling draws more', async () => {
    const h = await open('1'.repeat(32), '3'.repeat(32));
    try {
      const p = h.page;
      const items = (): Promise<number> => p.locator('.td-list > li[data-item]').count();
      assert.ok((await items()) <= 150, `${await items()} items drawn at first`);
      await p.locator('.td-list').focus();
      await p.keyboard.press('End');
      assert.equal(await p.locator('.td-current').getAttribute('data-item'), '3999');
      assert.equal(await p.locator('.td-current .td-right .td-node').textContent(), 'N3');
      assert.ok((await items()) <= 300, `${await items()} items drawn after End`);
      await p.keyboard.press('Home');
      assert.equal(await p.locator('.td-current').getAttribute('data-item'), '0');
      assert.ok((await items()) <= 300);
      // Row 0 differs; the next difference is row 2 (row 1 is the same on both sides).
      await p.keyboard.press('n');
      assert.equal(await p.locator('.td-current').getAttribute('data-item'), '2');
      assert.equal(await p.locator('.td-status').textContent(), 'difference 2 of 2,000');
      // Scrolling to the end of what is drawn draws the next batch.
      const before = await items();
      await p.locator('.td-main').evaluate((e) => (e.scrollTop = e.scrollHeight));
      await until(h, async () => (await items()) > before, 'the next batch');
      assert.deepEqual(h.errors, []);
    } finally {
      await h.close();
    }
  });

  it('says what is wrong when a rollout is missing', async () => {
    const h = await openPanel('traceDiff', { 'diff/get': () => { throw new Error('the left rollout ' + 'c'.repeat(32) + " is not in this workspace's store"); } }, { state: { left: 'c'.repeat(32), right: 'd'.repeat(32) } });
    try {
      await waitReady(h);
      await until(h, async () => /Cannot compare/.test((await h.page.locator('.td-message').textContent()) ?? ''), 'error message');
      assert.match((await h.page.locator('.td-message').textContent())!, /not in this workspace's store/);
    } finally {
      await h.close();
    }
  });
});
