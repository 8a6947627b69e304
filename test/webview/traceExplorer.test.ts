import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import { closeBrowser, openPanel, REPO, THEMES, waitReady, type HarnessOptions, type WebviewHarness } from './harness';
import { buildWebview } from './fixtures/buildWebview';
import { realTraces, type TraceFixture } from './fixtures/realTraces';
import { syntheticTrace } from './fixtures/syntheticTrace';
import { buildTraceModel, keepForMatches, visibleRows } from '../../webview/traceExplorer/traceModel';
import { parseChatMessages } from '../../webview/traceExplorer/chatMessages';
import { parseRewardBreakdown } from '../../webview/traceExplorer/rewardBreakdown';
import { summarizeLogprobs } from '../../webview/traceExplorer/logprobSummary';
import { computeTotals } from '../../webview/traceExplorer/traceTotals';
import { SpanSearch } from '../../webview/traceExplorer/spanSearch';

const AGENTS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'Supervisor', 'HypothesisRefiner', 'ProtocolDesigner', 'PeerReviewer', 'SafetyOfficer', 'PrincipalInvestigator'];
const SHOTS = join(REPO, 'test-results/webview');
const XSS = '<img src=x onerror="window.__xss=1"></script><script>window.__xss=2</script>';

let real: TraceFixture;
let big: TraceFixture;
const traces = new Map<string, TraceFixture>();
const open: WebviewHarness[] = [];

before(async () => {
  await buildWebview('traceExplorer');
  // Seed 1: a rollout of 32 spans with tool calls, short enough for the rendered window.
  [real] = (await realTraces({ tasks: 1, seed: 1 })) as [TraceFixture];
  big = syntheticTrace(10_000, { logprobsEvery: 7 });
  traces.set(real.rollout.id, real);
  traces.set(big.rollout.id, big);
});
after(async () => {
  for (const h of open.splice(0)) await h.close();
  await closeBrowser();
});

/** Opens the panel with a host that answers `trace/get` from the fixtures (or `answer`), and waits for `ready`. */
async function panel(opts: HarnessOptions = {}, answer?: (id: string) => TraceFixture | Promise<TraceFixture>): Promise<WebviewHarness> {
  const h = await openPanel(
    'traceExplorer',
    {
      'trace/get': async (p: { rolloutId: string }) => {
        const t = answer ? await answer(p.rolloutId) : traces.get(p.rolloutId);
        if (!t) throw new Error(`no rollout ${p.rolloutId}`);
        return t;
      },
    },
    opts,
  );
  open.push(h);
  await waitReady(h);
  return h;
}

async function show(h: WebviewHarness, t: TraceFixture, node?: string): Promise<void> {
  const before = await h.page.evaluate(() => document.body.dataset.renderedAt ?? '');
  await h.notify('trace/show', node ? { rolloutId: t.rollout.id, node } : { rolloutId: t.rollout.id });
  await h.page.waitForFunction((b) => document.body.dataset.renderedAt && document.body.dataset.renderedAt !== b, before);
}

function rowLabels(page: Page): Promise<string[]> {
  return page.$$eval('.te-row:not([hidden]) .te-label', (els) => els.map((e) => e.textContent ?? ''));
}
function selectedSpan(page: Page): Promise<string | null> {
  return page.$eval('.te-viewport', (v) => {
    const id = v.getAttribute('aria-activedescendant');
    return id ? (document.getElementById(id)?.dataset.spanId ?? null) : null;
  });
}
async function selectSpan(page: Page, spanId: string): Promise<void> {
  await page.click(`.te-row[data-span-id="${spanId}"] .te-label`);
  await page.waitForFunction((id) => document.querySelector('.te-details')?.getAttribute('data-span-id') === id, spanId);
}
function spanOf(t: TraceFixture, pred: (s: SpanRecord) => boolean): SpanRecord {
  const s = t.spans.find(pred);
  assert.ok(s, 'the fixture has such a span');
  return s;
}
const toolCallingLlm = (s: SpanRecord): boolean => s.kind === 'llm' && String(s.attributes[Attr.outputMessages]).includes('"tool_calls"');

describe('trace explorer model (pure)', () => {
  test('pre-order tree: every span once, parents first, subtrees contiguous; collapse and search pick the rows', () => {
    const m = buildTraceModel(real.spans);
    assert.equal(m.spans.length, real.spans.length);
    assert.equal(m.spans[0]!.kind, 'rollout');
    for (let i = 0; i < m.spans.length; i++) {
      const p = m.parent[i]!;
      if (p >= 0) {
        assert.ok(p < i && m.subtreeEnd[p]! >= m.subtreeEnd[i]!, 'a child lies inside its parent subtree');
        assert.equal(m.spans[i]!.parentSpanId, m.spans[p]!.spanId);
      }
    }
    const none = new Uint8Array(m.spans.length);
    assert.equal(visibleRows(m, none, null).length, m.spans.length);
    const collapsed = new Uint8Array(m.spans.length);
    collapsed[0] = 1;
    assert.deepEqual([...visibleRows(m, collapsed, null)], [0]);
    const r = new SpanSearch(m.spans).match('clinical_trials_search')!;
    assert.ok(r.count >= 1);
    const { keep } = keepForMatches(m, r.match);
    const rows = [...visibleRows(m, none, keep)];
    for (const i of rows) assert.ok(r.match[i] || rows.some((j) => m.parent[j] === i), 'a kept row matches or leads to a match');
  });

  test('a parent cycle or a missing parent loses no span', () => {
    const s = (id: string, parent: string | null): SpanRecord => ({ traceId: 'a'.repeat(32), spanId: id, parentSpanId: parent, name: id, kind: 'node', startTime: 1, endTime: 2, status: 'ok', attributes: {} });
    const m = buildTraceModel([s('a', 'b'), s('b', 'a'), s('c', 'gone'), s('d', 'c')]);
    assert.equal(m.spans.length, 4);
    assert.equal(m.spans[m.parent[m.indexById.get('d')!]!]!.spanId, 'c');
    assert.equal(m.inCycle, 2);
  });

  test('spans in a parent cycle (two spans, a span its own parent) are shown under the rollout root', () => {
    const s = (id: string, parent: string | null, kind: SpanRecord['kind'] = 'node', start = 1): SpanRecord => ({ traceId: 'a'.repeat(32), spanId: id, parentSpanId: parent, name: id, kind, startTime: start, endTime: 5, status: 'ok', attributes: {} });
    const m = buildTraceModel([s('root', null, 'rollout', 0), s('self', 'self', 'node', 3), s('c', 'd', 'node', 1), s('d', 'c', 'node', 2), s('kid', 'root')]);
    assert.deepEqual(m.spans.map((x) => x.spanId), ['root', 'kid', 'c', 'd', 'self']);
    assert.deepEqual([...m.parent], [-1, 0, 0, 2, 0]);
    assert.deepEqual([...m.setSize].slice(1), [3, 3, 1, 3], 'the root has three children: kid and one entry per cycle');
    assert.equal(m.inCycle, 3);
    assert.equal(m.subtreeEnd[0], 5);
  });

  test('messages in the tracer, OpenAI and OpenTelemetry shapes; breakdowns; logprobs; totals', () => {
    const tracer = parseChatMessages(JSON.stringify([{ role: 'assistant', content: '', tool_calls: [{ id: 'c1', name: 'pubmed_search', arguments: '{"query":"x"}' }] }, { role: 'tool', content: '{}', tool_call_id: 'c1' }]))!;
    assert.deepEqual(tracer[0]!.toolCalls, [{ id: 'c1', name: 'pubmed_search', arguments: '{"query":"x"}' }]);
    assert.equal(tracer[1]!.toolCallId, 'c1');
    const openai = parseChatMessages(JSON.stringify([{ role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'f', arguments: '{}' } }] }]))!;
    assert.equal(openai[0]!.toolCalls[0]!.name, 'f');
    const otel = parseChatMessages(JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'hi' }] }, { role: 'assistant', parts: [{ type: 'tool_call', id: 'c3', name: 'g', arguments: { a: 1 } }] }]))!;
    assert.equal(otel[0]!.content, 'hi');
    assert.equal(otel[1]!.toolCalls[0]!.arguments, '{"a":1}');
    assert.equal(parseChatMessages('not json'), null);

    const final = spanOf(real, (s) => s.kind === 'reward' && s.name === 'final');
    const rows = parseRewardBreakdown(final.attributes[Attr.rewardBreakdown])!;
    assert.equal(rows.length, 6);
    const sum = rows.reduce((t, r) => t + r.contribution!, 0);
    assert.ok(Math.abs(sum - (final.attributes[Attr.rewardValue] as number)) < 1e-9, 'contributions add up to the final reward');

    const lp = summarizeLogprobs([-0.1, -0.5, -2], ['a', 'b', 'c'])!;
    assert.equal(lp.min, -2);
    assert.ok(Math.abs(lp.perplexity - Math.exp(2.6 / 3)) < 1e-12);
    assert.deepEqual(lp.lowest.map((x) => x.token), ['c', 'b', 'a']);

    const t = computeTotals(real.spans);
    assert.equal(t.modelCalls, real.spans.filter((s) => s.kind === 'llm').length);
    assert.equal(t.inputTokens, real.spans.reduce((n, s) => n + ((s.attributes[Attr.inputTokens] as number | undefined) ?? 0), 0));
  });
});

describe('trace explorer in Chromium', () => {
  test('ready handshake, then the rollout named by trace/show: header, banner, the nine agents, footer totals', async () => {
    const h = await panel();
    assert.deepEqual(h.sent[0], { kind: 'ready', panel: 'traceExplorer' });
    assert.equal(h.sent.filter((m) => m.kind === 'request').length, 0, 'without state it waits for trace/show');
    await show(h, real);
    assert.deepEqual(h.sent.find((m) => m.kind === 'request'), { kind: 'request', id: 1, method: 'trace/get', params: { rolloutId: real.rollout.id, limit: 1000 } });

    const labels = await rowLabels(h.page);
    assert.equal(labels.length, real.spans.length, 'a 32-span rollout fits in the rendered window');
    for (const a of AGENTS) assert.ok(labels.includes(a), `node ${a} is in the tree`);

    const header = await h.page.textContent('.te-header');
    assert.match(header!, new RegExp(real.rollout.id.slice(0, 12)));
    assert.match(header!, new RegExp(real.rollout.taskId));
    assert.match(header!, /succeeded/);
    assert.match(header!, new RegExp(real.rollout.finalReward!.toFixed(3)));
    assert.match(header!, new RegExp(`decision${real.rollout.decision}`));
    assert.ok(await h.page.isVisible('.te-simulated'), 'a simulated rollout says so');
    assert.match((await h.page.textContent('.te-simulated'))!, /SIMULATED/);

    const totals = Object.fromEntries(await h.page.$$eval('.te-total', (els) => els.map((e) => [(e as HTMLElement).dataset.total, Number((e as HTMLElement).dataset.value)])));
    const llm = real.spans.filter((s) => s.kind === 'llm');
    const num = (s: SpanRecord, k: string): number => (s.attributes[k] as number | undefined) ?? 0;
    assert.equal(totals.spans, real.spans.length);
    assert.equal(totals.modelCalls, llm.length);
    assert.equal(totals.toolCalls, real.spans.filter((s) => s.kind === 'tool').length);
    assert.equal(totals.errors, real.spans.filter((s) => s.status === 'error').length);
    assert.equal(totals.inputTokens, llm.reduce((n, s) => n + num(s, Attr.inputTokens), 0));
    assert.equal(totals.outputTokens, llm.reduce((n, s) => n + num(s, Attr.outputTokens), 0));
    assert.equal(totals.durationMs, Math.max(...real.spans.map((s) => s.endTime)) - Math.min(...real.spans.map((s) => s.startTime)));
    assert.deepEqual(h.errors, []);
  });

  test('a model call shows its conversation, tool call arguments and result, tokens and logprobs; screenshots in both themes', async () => {
    const call = spanOf(real, toolCallingLlm);
    const out = parseChatMessages(call.attributes[Attr.outputMessages])!;
    const tc = out[0]!.toolCalls[0]!;
    const tool = spanOf(real, (s) => s.kind === 'tool' && s.attributes[Attr.toolCallId] === tc.id);
    mkdirSync(SHOTS, { recursive: true });
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme });
      await show(h, real);
      await selectSpan(h.page, call.spanId);
      const roles = await h.page.$$eval('.te-details .te-msg', (els) => els.map((e) => (e as HTMLElement).dataset.role));
      assert.deepEqual(roles.slice(0, 2), ['system', 'user']);
      assert.equal(roles[roles.length - 1], 'assistant');
      const toolcall = h.page.locator(`.te-details .te-toolcall[data-tool="${tc.name}"]`);
      assert.equal(JSON.parse((await toolcall.locator('.te-toolcall-args').textContent())!).query, JSON.parse(tc.arguments).query);
      assert.equal(JSON.stringify(JSON.parse((await toolcall.locator('.te-toolcall-result').textContent())!)), JSON.stringify(JSON.parse(tool.attributes[Attr.toolResult] as string)));
      const details = (await h.page.textContent('.te-details'))!;
      assert.match(details, new RegExp(`${(call.attributes[Attr.inputTokens] as number).toLocaleString('en-US')} in`));
      assert.match(details, new RegExp(String(call.attributes[Attr.responseModel]).replace(/[.]/g, '\\.')));
      if (Array.isArray(call.attributes[Attr.logprobs])) {
        assert.match(details, /Perplexity/);
        const mean = summarizeLogprobs(call.attributes[Attr.logprobs])!.mean;
        assert.match(details, new RegExp(mean.toFixed(4)));
      }
      // The follow-up call of the same agent carries the tool message in its input.
      const followUp = spanOf(real, (s) => s.kind === 'llm' && String(s.attributes[Attr.inputMessages]).includes(`"tool_call_id":"${tc.id}"`));
      await selectSpan(h.page, call.spanId);
      await h.page.focus('.te-viewport');
      await h.page.screenshot({ path: join(SHOTS, `trace-explorer-${theme}.png`) });
      await h.page.$eval('.te-details', (d) => {
        const divider = d.querySelector('.te-conv-divider') as HTMLElement;
        d.scrollTop = divider.offsetTop - d.clientHeight / 3;
      });
      await h.page.screenshot({ path: join(SHOTS, `trace-explorer-${theme}-conversation.png`) });
      await selectSpan(h.page, followUp.spanId);
      const roles2 = await h.page.$$eval('.te-details .te-msg', (els) => els.map((e) => (e as HTMLElement).dataset.role));
      assert.ok(roles2.includes('tool'), 'the tool result appears as a tool message');
      assert.deepEqual(h.errors, []);
    }
  });

  test('the final reward shows its criterion breakdown; the judge its scores and rationale', async () => {
    const h = await panel();
    await show(h, real);
    const final = spanOf(real, (s) => s.kind === 'reward' && s.name === 'final');
    await selectSpan(h.page, final.spanId);
    const rows = await h.page.$$eval('.te-breakdown tbody tr', (trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
    const expected = parseRewardBreakdown(final.attributes[Attr.rewardBreakdown])!;
    assert.deepEqual(rows.map((r) => r[0]), expected.map((r) => r.criterion));
    for (let i = 0; i < rows.length; i++) {
      assert.equal(rows[i]![1], expected[i]!.score.toFixed(2));
      assert.equal(rows[i]![2], expected[i]!.weight!.toFixed(2));
    }
    assert.match((await h.page.textContent('.te-breakdown tfoot'))!, new RegExp(`Final value${(final.attributes[Attr.rewardValue] as number).toFixed(3)}`));
    const judge = spanOf(real, (s) => s.kind === 'reward' && s.name === 'judge');
    await selectSpan(h.page, judge.spanId);
    assert.equal(await h.page.locator('.te-breakdown tbody tr').count(), 6);
    assert.match((await h.page.textContent('.te-details'))!, /Judge rationale/);
  });

  test('a node span jumps to its agent prompt file through the host', async () => {
    const h = await panel();
    await show(h, real);
    const node = spanOf(real, (s) => s.kind === 'node' && s.name === 'Supervisor');
    await selectSpan(h.page, node.spanId);
    await h.page.click('.te-open-prompt');
    await h.page.waitForFunction(() => true);
    for (let i = 0; i < 20 && !h.sent.some((m) => m.kind === 'command'); i++) await new Promise((r) => setTimeout(r, 25));
    assert.deepEqual(h.sent.find((m) => m.kind === 'command'), { kind: 'command', command: 'prompt/open', args: { agent: 'Supervisor' } });
  });

  test('keyboard: arrows move, Left/Right collapse, expand and walk the tree, Home/End, Enter opens details, / and Escape drive search', async () => {
    const h = await panel();
    await show(h, real);
    const page = h.page;
    await page.focus('.te-viewport');
    await page.keyboard.press('Home');
    const root = spanOf(real, (s) => s.kind === 'rollout');
    assert.equal(await selectedSpan(page), root.spanId);
    assert.equal(await page.getAttribute('.te-viewport', 'role'), 'tree');
    await page.keyboard.press('ArrowDown');
    const firstNode = (await selectedSpan(page))!;
    assert.equal(real.spans.find((s) => s.spanId === firstNode)!.kind, 'node');
    assert.equal(await page.getAttribute(`.te-row[data-span-id="${firstNode}"]`, 'aria-level'), '2');
    assert.equal(await page.getAttribute(`.te-row[data-span-id="${firstNode}"]`, 'aria-expanded'), 'true');
    const all = (await rowLabels(page)).length;

    await page.keyboard.press('ArrowLeft'); // collapse the node
    assert.equal(await page.getAttribute(`.te-row[data-span-id="${firstNode}"]`, 'aria-expanded'), 'false');
    assert.equal((await rowLabels(page)).length, all - 1);
    await page.keyboard.press('ArrowLeft'); // to the parent
    assert.equal(await selectedSpan(page), root.spanId);
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowRight'); // expand again
    assert.equal((await rowLabels(page)).length, all);
    await page.keyboard.press('ArrowRight'); // into the child
    const childId = await selectedSpan(page);
    const child = real.spans.find((s) => s.spanId === childId)!;
    assert.equal(child.parentSpanId, firstNode);
    assert.equal(await page.getAttribute('.te-details', 'data-span-id'), child.spanId, 'the details follow the selection');

    await page.keyboard.press('End');
    const labels = await rowLabels(page);
    const lastId = await selectedSpan(page);
    assert.equal(real.spans.find((s) => s.spanId === lastId)!.name, labels[labels.length - 1]);
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'te-details');
    await page.keyboard.press('Escape');
    assert.equal(await page.evaluate(() => document.activeElement?.className), 'te-viewport');

    // Search: "/" focuses it, typing filters to matches and their ancestors, Escape clears.
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'VSCODE-TEXTFIELD');
    await page.keyboard.type('clinical_trials_search');
    await page.waitForFunction(() => document.querySelector('.te-search-info')?.textContent?.includes('match'));
    const filtered = await page.$$eval('.te-row:not([hidden])', (rows) => rows.map((r) => ({ id: (r as HTMLElement).dataset.spanId!, match: r.classList.contains('te-match') })));
    assert.ok(filtered.length < all && filtered.length > 1);
    const shown = await page.$$eval('.te-row', (rows) => rows.filter((r) => r.checkVisibility()).length);
    assert.equal(shown, filtered.length, 'recycled rows beyond the list are not displayed');
    const ids = new Set(filtered.map((r) => r.id));
    for (const r of filtered) {
      const s = real.spans.find((x) => x.spanId === r.id)!;
      const text = [s.name, ...Object.values(s.attributes).map(String)].join(' ');
      if (r.match) assert.ok(text.includes('clinical_trials_search'));
      else assert.ok(real.spans.some((x) => x.parentSpanId === s.spanId && ids.has(x.spanId)), 'a non-matching row is the ancestor of a shown one');
    }
    await page.keyboard.press('Escape');
    await page.waitForFunction((n) => document.querySelectorAll('.te-row:not([hidden])').length === n, all);
    await page.keyboard.press('Control+f');
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'VSCODE-TEXTFIELD');
    assert.deepEqual(h.errors, []);
  });

  test('span details: keys break only at dots and underscores, values keep their underscores, numbers without float noise, errors without a repeated type, penalties look like penalties', async () => {
    const t: TraceFixture = structuredClone(real);
    t.rollout.id = 'd'.repeat(32);
    for (const s of t.spans) s.traceId = t.rollout.id;
    const llm = t.spans.find((s) => s.kind === 'llm')!;
    llm.attributes['rollout_lab.some_ratio'] = 0.7394999999999998;
    llm.attributes['rollout_lab.ratios'] = [0.1 + 0.2, 1.5];
    llm.attributes['rollout_lab.ratio_json'] = JSON.stringify({ score: 0.7394999999999998, n: 3 });
    llm.attributes['rollout_lab.snake_case_value'] = 'clinical_trials_search';
    llm.attributes[Attr.requestTemperature] = 0.7000000000000001;
    llm.status = 'error';
    llm.attributes[Attr.errorType] = 'Error';
    llm.statusMessage = 'the endpoint closed the connection';
    const tool = t.spans.find((s) => s.kind === 'tool')!;
    tool.status = 'error';
    tool.attributes[Attr.errorType] = 'TimeoutError';
    tool.statusMessage = 'TimeoutError: no answer in 30 s';
    const node = t.spans.find((s) => s.kind === 'node')!;
    const reward = (name: string, value: number): SpanRecord => ({
      traceId: t.rollout.id,
      spanId: `${name}`.padEnd(16, '0').slice(0, 16),
      parentSpanId: node.spanId,
      name,
      kind: 'reward',
      startTime: node.endTime,
      endTime: node.endTime,
      status: 'ok',
      attributes: { [Attr.rewardName]: name, [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: value, 'rollout_lab.reward.rule': 'a rule', [Attr.agentName]: node.name },
    });
    const penalty = reward('penaltyrule', -0.2);
    const bonus = reward('bonusrule', 0.1);
    t.spans.push(penalty, bonus);

    for (const width of [1200, 720]) {
      const h = await panel({ viewport: { width, height: 800 } }, () => t);
      await show(h, t);
      await selectSpan(h.page, llm.spanId);
      await h.page.evaluate(() => document.querySelector('.te-raw')?.setAttribute('open', ''));
      // Every line break inside a key follows a dot or an underscore.
      const keys = await h.page.$$eval('.te-attr-key', (ths) =>
        ths.map((th) => {
          const range = document.createRange();
          const bad: string[] = [];
          let lines = 1;
          let prevTop: number | null = null;
          let prev = '';
          const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
          for (let n = walker.nextNode() as Text | null; n; n = walker.nextNode() as Text | null) {
            for (let i = 0; i < n.data.length; i++) {
              range.setStart(n, i);
              range.setEnd(n, i + 1);
              const r = range.getClientRects()[0];
              if (!r) continue;
              if (prevTop !== null && r.top > prevTop + 2) {
                lines++;
                if (prev !== '.' && prev !== '_') bad.push(`${th.textContent} breaks after "${prev}"`);
              }
              prevTop = r.top;
              prev = n.data[i]!;
            }
          }
          return { key: th.textContent ?? '', bad, lines };
        }),
      );
      assert.ok(keys.some((k) => k.key === 'gen_ai.operation.name'));
      for (const k of keys) assert.deepEqual(k.bad, [], `${width}px: ${k.key}`);
      if (width === 1200) for (const k of keys) assert.equal(k.lines, 1, `${k.key} fits on one line in a wide pane`);
      // A one-line value keeps the bottom of its underscores inside its (scrolling) box.
      const clip = await h.page.evaluate(() => {
        const th = Array.from(document.querySelectorAll('.te-attr-key')).find((e) => e.textContent === 'rollout_lab.snake_case_value')!;
        const pre = th.parentElement!.querySelector('.te-pre') as HTMLElement;
        const text = pre.firstChild as Text;
        const range = document.createRange();
        range.selectNodeContents(text);
        const rects = range.getClientRects();
        const cs = getComputedStyle(pre);
        const ctx = document.createElement('canvas').getContext('2d')!;
        ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
        const m = ctx.measureText(text.data);
        const under = ctx.measureText('_');
        const box = pre.getBoundingClientRect();
        const baseline = rects[0]!.top + m.fontBoundingBoxAscent;
        return {
          lines: rects.length,
          ink: baseline + Math.max(under.actualBoundingBoxDescent, m.fontBoundingBoxDescent),
          descent: baseline + m.fontBoundingBoxDescent,
          visible: box.top + pre.clientTop + pre.clientHeight,
        };
      });
      assert.equal(clip.lines, 1);
      assert.ok(clip.ink <= clip.visible + 0.01, `the underscore's bottom (${clip.ink}) is inside the box (${clip.visible})`);
      // Editor fonts draw the underscore at or just below their descent line: the box keeps room below it.
      assert.ok(clip.visible - clip.descent >= 1, `room below the descent: ${clip.visible - clip.descent}px`);

      const details = (await h.page.textContent('.te-details'))!;
      assert.ok(!/\d\.\d{7,}/.test(details), `no float noise in: ${details.match(/\d\.\d{7,}/)?.[0]}`);
      assert.match(details, /0\.7395/);
      assert.match(details, /Temperature0\.7(?!\d)/);
      assert.match(details, /"score": 0\.7395/);
      assert.match(details, /\[\s*0\.3,\s*1\.5\s*\]/);
      // An error whose type says nothing more than "Error" shows once, with its message.
      assert.equal((await h.page.textContent('.te-error-head'))!.trim(), 'Error');
      assert.doesNotMatch(details, /Error: Error/);
      assert.match((await h.page.textContent('.te-error-box'))!, /the endpoint closed the connection/);
      await selectSpan(h.page, tool.spanId);
      assert.equal((await h.page.textContent('.te-error-head'))!.trim(), 'Error·TimeoutError');
      const box = (await h.page.textContent('.te-error-box'))!;
      assert.equal(box.split('TimeoutError').length - 1, 1, `the type shows once: ${box}`);
      assert.match(box, /no answer in 30 s/);

      // A penalty has its own icon, colour and words; a bonus keeps the star.
      await h.page.click(`.te-row[data-span-id="${penalty.spanId}"] .te-label`);
      const look = await h.page.evaluate(([p, b]) => {
        const pRow = document.querySelector(`.te-row[data-span-id="${p}"]`)!;
        const pIcon = pRow.querySelector('.te-kind-icon')!;
        const bIcon = document.querySelector(`.te-row[data-span-id="${b}"] .te-kind-icon`)!;
        return {
          penaltyIcon: pIcon.className,
          bonusIcon: bIcon.className,
          penaltyColour: getComputedStyle(pIcon).color,
          bonusColour: getComputedStyle(bIcon).color,
          penaltyRow: pRow.textContent,
          badge: document.querySelector('.te-details-title vscode-badge')?.textContent,
          titleIcon: document.querySelector('.te-details-title .te-kind-icon')?.className,
        };
      }, [penalty.spanId, bonus.spanId]);
      assert.match(look.penaltyIcon, /codicon-thumbsdown/);
      assert.match(look.bonusIcon, /codicon-star-full/);
      assert.notEqual(look.penaltyColour, look.bonusColour);
      assert.match(look.penaltyRow!, /penalty −?-?0\.200/);
      assert.equal(look.badge, 'reward · penalty');
      assert.match(look.titleIcon!, /codicon-thumbsdown/);
      if (width === 1200) {
        for (const theme of ['dark', 'light'] as const) {
          const th = await panel({ theme, viewport: { width: 1200, height: 800 } }, () => t);
          await show(th, t);
          await selectSpan(th.page, llm.spanId);
          await th.page.evaluate(() => {
            document.querySelector('.te-raw')?.setAttribute('open', '');
            const d = document.querySelector('.te-details')!;
            d.scrollTop = (document.querySelector('.te-raw') as HTMLElement).offsetTop - 40;
          });
          await th.page.screenshot({ path: join(SHOTS, `trace-explorer-details-${theme}.png`) });
          await th.page.click(`.te-row[data-span-id="${penalty.spanId}"] .te-label`);
          await th.page.screenshot({ path: join(SHOTS, `trace-explorer-penalty-${theme}.png`) });
          assert.deepEqual(th.errors, []);
        }
      } else {
        await h.page.screenshot({ path: join(SHOTS, 'trace-explorer-details-narrow-dark.png') });
      }
      assert.deepEqual(h.errors, []);
    }
  });

  test('a rollout without duration draws no time axis; a short one no repeated ticks', async () => {
    const one = real.spans.find((s) => s.kind === 'rollout')!;
    const flat: TraceFixture = { rollout: { ...real.rollout, id: 'a'.repeat(32) }, spans: [{ ...one, traceId: 'a'.repeat(32), endTime: one.startTime }] };
    const short: TraceFixture = { rollout: { ...real.rollout, id: 'b'.repeat(32) }, spans: [{ ...one, traceId: 'b'.repeat(32), endTime: one.startTime + 1 }] };
    const empty: TraceFixture = { rollout: { ...real.rollout, id: 'c'.repeat(32) }, spans: [] };
    const byId = new Map([flat, short, empty].map((x) => [x.rollout.id, x]));
    const h = await panel({}, (id) => byId.get(id)!);
    const ticks = (): Promise<string[]> => h.page.$$eval('.te-axis .tick text', (ts) => ts.map((x) => x.textContent ?? ''));
    await show(h, flat);
    assert.deepEqual(await ticks(), []);
    await show(h, short);
    const labels = await ticks();
    assert.ok(labels.length >= 2, labels.join(' '));
    assert.equal(new Set(labels).size, labels.length, `no repeated tick: ${labels.join(' ')}`);
    assert.equal(labels[labels.length - 1], '1ms');
    await show(h, empty);
    assert.deepEqual(await ticks(), []);
    assert.deepEqual(h.errors, []);
  });

  test('search: a clear button and Escape clear it; matches are marked in the details as text', async () => {
    const h = await panel();
    await show(h, real);
    const page = h.page;
    const all = (await rowLabels(page)).length;
    assert.equal(await page.locator('.te-search-clear').count(), 1, 'the search has a clear button');
    assert.ok(await page.locator('.te-search-clear').isHidden(), 'no clear button without a query');
    await page.focus('.te-viewport');
    await page.keyboard.press('/');
    await page.keyboard.type('clinical_trials_search');
    await page.waitForFunction(() => document.querySelector('.te-search-info')?.textContent?.includes('match'));
    assert.ok(await page.locator('.te-search-clear').isVisible());
    assert.equal(await page.getAttribute('.te-search-clear', 'aria-label'), 'Clear search');
    const firstMatch = await page.$eval('.te-row.te-match', (r) => (r as HTMLElement).dataset.spanId!);
    await selectSpan(page, firstMatch);
    await page.waitForFunction(() => document.querySelectorAll('.te-details mark.te-hit').length > 0, undefined, { timeout: 10_000 });
    const marks = await page.$$eval('.te-details mark.te-hit', (ms) =>
      ms.map((m) => ({ text: m.textContent, kids: m.childNodes.length, visible: (m as HTMLElement).checkVisibility(), background: getComputedStyle(m).backgroundColor })),
    );
    for (const m of marks) {
      assert.equal(m.text!.toLowerCase(), 'clinical_trials_search');
      assert.equal(m.kids, 1, 'a mark holds one text node');
      assert.notEqual(m.background, 'rgba(0, 0, 0, 0)', 'a mark is coloured by the theme');
    }
    assert.ok(marks.some((m) => m.visible), 'a match is visible in the details');
    await page.screenshot({ path: join(SHOTS, 'trace-explorer-search-dark.png') });
    // Another matching span: its details are marked too.
    const matching = (await page.$$eval('.te-row.te-match', (rows) => rows.map((r) => (r as HTMLElement).dataset.spanId!))).filter((id) => id !== null);
    await selectSpan(page, matching[matching.length - 1]!);
    assert.ok((await page.locator('.te-details mark.te-hit').count()) > 0);
    await page.click('.te-search-clear', { timeout: 10_000 });
    await page.waitForFunction((n) => document.querySelectorAll('.te-row:not([hidden])').length === n, all);
    assert.equal(await page.locator('.te-details mark.te-hit').count(), 0);
    assert.ok(await page.locator('.te-search-clear').isHidden());
    assert.equal(await page.evaluate(() => (document.querySelector('.te-search') as HTMLInputElement).value), '');
    // Escape in the field clears it as well.
    await page.focus('.te-search');
    await page.keyboard.type('Supervisor');
    await page.waitForFunction(() => /match/.test(document.querySelector('.te-search-info')?.textContent ?? ''));
    await page.keyboard.press('Escape');
    await page.waitForFunction((n) => document.querySelectorAll('.te-row:not([hidden])').length === n, all);
    assert.equal(await page.locator('.te-details mark.te-hit').count(), 0);
    assert.deepEqual(h.errors, []);
  });

  test('a search for markup marks it as text and runs nothing', async () => {
    const evil: TraceFixture = structuredClone(real);
    evil.rollout.id = 'f'.repeat(31) + '0';
    for (const s of evil.spans) s.traceId = evil.rollout.id;
    const node = evil.spans.find((s) => s.kind === 'node')!;
    node.attributes['custom.payload'] = XSS;
    const h = await panel({}, () => evil);
    await show(h, evil);
    await h.page.focus('.te-viewport');
    await h.page.keyboard.press('/');
    await h.page.keyboard.type('<img src=x');
    await h.page.waitForTimeout(300);
    await h.page.waitForFunction(() => /match/.test(document.querySelector('.te-search-info')?.textContent ?? ''), undefined, { timeout: 10_000 });
    await h.page.click(`.te-row[data-span-id="${node.spanId}"] .te-label`, { timeout: 10_000 });
    await h.page.waitForFunction(() => document.querySelectorAll('.te-details mark.te-hit').length > 0, undefined, { timeout: 10_000 });
    assert.deepEqual([...new Set(await h.page.$$eval('.te-details mark.te-hit', (ms) => ms.map((m) => m.textContent)))].sort(), ['<img', 'src=x']);
    assert.equal(await h.page.locator('img').count(), 0);
    assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.ok((await h.page.textContent('.te-details'))!.includes(XSS));
    assert.deepEqual(h.errors, []);
  });

  test('model and user text shows literally and runs nothing', async () => {
    const evil: TraceFixture = structuredClone(real);
    evil.rollout.id = 'e'.repeat(32);
    for (const s of evil.spans) s.traceId = evil.rollout.id;
    const call = evil.spans.find(toolCallingLlm)!;
    const out = JSON.parse(call.attributes[Attr.outputMessages] as string);
    out[0].content = XSS;
    out[0].tool_calls[0].arguments = JSON.stringify({ query: XSS });
    call.attributes[Attr.outputMessages] = JSON.stringify(out);
    call.attributes['custom.payload'] = XSS;
    call.name = `chat ${XSS}`;
    call.statusMessage = XSS;
    const h = await panel({}, () => evil);
    await show(h, evil);
    await selectSpan(h.page, call.spanId);
    await h.page.evaluate(() => document.querySelector('.te-raw')?.setAttribute('open', ''));
    await h.page.waitForTimeout(100);
    assert.equal(await h.page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);
    assert.equal(await h.page.locator('img').count(), 0);
    assert.equal(await h.page.locator('#app script').count(), 0);
    const details = (await h.page.textContent('.te-details'))!;
    assert.ok(details.includes(XSS), 'the payload is shown as text');
    assert.ok((await rowLabels(h.page)).includes(`chat ${XSS}`));
    assert.ok(await h.page.locator('.te-attrs').getByText('custom.payload').isVisible());
    assert.deepEqual(h.errors, [], 'no page errors, no CSP violations');
  });

  test('dark and light themes come from the VS Code variables', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme });
      await show(h, real);
      const colours = await h.page.evaluate((vars) => {
        const probe = document.createElement('div');
        document.body.append(probe);
        const want = [vars['--vscode-editor-background']!, vars['--vscode-foreground']!, vars['--vscode-charts-blue']!].map((c) => {
          probe.style.color = c;
          return getComputedStyle(probe).color;
        });
        const res = {
          body: getComputedStyle(document.body).backgroundColor,
          bodyWant: want[0],
          text: getComputedStyle(document.querySelector('.te-label')!).color,
          textWant: want[1],
          llm: getComputedStyle(document.querySelector('.te-bar-llm')!).backgroundColor,
          llmWant: want[2],
        };
        probe.remove();
        return res;
      }, THEMES[theme]);
      assert.equal(colours.body, colours.bodyWant, `${theme} background`);
      assert.equal(colours.text, colours.textWant, `${theme} foreground`);
      assert.equal(colours.llm, colours.llmWant, `${theme} llm bars use --vscode-charts-blue`);
    }
  });

  test('10,000 spans: few rows in the DOM, scrolling reaches the last span, End and search still work', async () => {
    const h = await panel({ viewport: { width: 1200, height: 800 } });
    await show(h, big);
    const page = h.page;
    const rendered = await page.locator('.te-row').count();
    assert.ok(rendered > 10 && rendered < 300, `${rendered} row elements for 10,000 spans`);
    assert.equal(await page.$eval('.te-spacer', (e) => (e as HTMLElement).style.height), `${10_000 * 22}px`);
    await page.$eval('.te-viewport', (v) => (v.scrollTop = v.scrollHeight));
    await page.waitForFunction(() => Array.from(document.querySelectorAll('.te-row:not([hidden]) .te-label')).some((e) => e.textContent === 'final'));
    const m = buildTraceModel(big.spans);
    const lastIds = await page.$$eval('.te-row:not([hidden])', (rows) => rows.map((r) => (r as HTMLElement).dataset.spanId));
    assert.equal(lastIds[lastIds.length - 1], m.spans[m.spans.length - 1]!.spanId, 'the last row is the last span');
    assert.ok((await page.locator('.te-row').count()) < 300);

    await page.focus('.te-viewport');
    await page.keyboard.press('Home');
    assert.equal(await page.$eval('.te-viewport', (v) => v.scrollTop), 0);
    await page.keyboard.press('End');
    assert.equal(await selectedSpan(page), m.spans[m.spans.length - 1]!.spanId);

    await page.fill('.te-search input', 'tool_error').catch(async () => {
      await page.focus('.te-search');
      await page.keyboard.type('tool_error');
    });
    await page.waitForFunction(() => /of 10,000 spans match/.test(document.querySelector('.te-search-info')?.textContent ?? ''));
    const errors = big.spans.filter((s) => s.name === 'tool_error').length;
    assert.ok(errors > 0);
    assert.match((await page.textContent('.te-search-info'))!, new RegExp(`^${errors} of`));
    assert.ok((await page.locator('.te-row').count()) < 300);
    assert.deepEqual(h.errors, []);
  });

  test('state: a restored panel requests its rollout without a notification, and keeps the selection', async () => {
    const node = spanOf(real, (s) => s.kind === 'node' && s.name === 'PeerReviewer');
    const h = await panel({ state: { rolloutId: real.rollout.id, selected: node.spanId } });
    await h.page.waitForFunction(() => document.body.dataset.renderedAt);
    assert.deepEqual(h.sent.find((m) => m.kind === 'request'), { kind: 'request', id: 1, method: 'trace/get', params: { rolloutId: real.rollout.id, limit: 1000 } });
    assert.equal(await h.page.getAttribute('.te-details', 'data-span-id'), node.spanId);
    // After a window reload the host repeats the rollout from the saved state: the view stays as it was.
    await h.notify('trace/show', { rolloutId: real.rollout.id });
    await h.page.waitForTimeout(100);
    assert.equal(h.sent.filter((m) => m.kind === 'request').length, 1);
    assert.equal(await h.page.getAttribute('.te-details', 'data-span-id'), node.spanId);
    const llm = spanOf(real, (s) => s.kind === 'llm');
    await selectSpan(h.page, llm.spanId);
    await h.page.waitForFunction((id) => (window as unknown as { __lastState?: { selected?: string } }).__lastState?.selected === id, llm.spanId);
    // VS Code keeps the state as JSON: keys set to undefined (cleared) drop out.
    const state = await h.page.evaluate(() => JSON.parse(JSON.stringify((window as unknown as { __lastState: unknown }).__lastState)));
    assert.deepEqual(state, { rolloutId: real.rollout.id, selected: llm.spanId, collapsed: [] });
  });

  test('trace/show with a node selects that node and opens its visits', async () => {
    const h = await panel();
    await show(h, real, 'Neurologist');
    const visits = real.spans.filter((s) => s.kind === 'node' && s.name === 'Neurologist').sort((a, b) => a.startTime - b.startTime);
    assert.ok(visits.length >= 1);
    assert.equal(await selectedSpan(h.page), visits[0]!.spanId);
    assert.match((await h.page.textContent('.te-search-info'))!, new RegExp(`Node Neurologist: ${visits.length} visit`));
    // Another node of the rollout already shown: no new request, the selection moves.
    await h.notify('trace/show', { rolloutId: real.rollout.id, node: 'SafetyOfficer' });
    const safety = spanOf(real, (s) => s.kind === 'node' && s.name === 'SafetyOfficer');
    await h.page.waitForFunction((id) => document.querySelector('.te-details')?.getAttribute('data-span-id') === id, safety.spanId);
    assert.equal(h.sent.filter((m) => m.kind === 'request').length, 1);
  });

  test('store/changed reloads a running rollout as its spans arrive; a finished one stays', async () => {
    const partial: TraceFixture = { rollout: { ...real.rollout, status: 'running', finalReward: null, endTime: null }, spans: real.spans.filter((s) => s.kind !== 'reward' && s.kind !== 'rollout') };
    let calls = 0;
    const h = await panel({}, () => (++calls === 1 ? partial : real));
    await show(h, partial);
    assert.equal((await rowLabels(h.page)).length, partial.spans.length);
    assert.match((await h.page.textContent('.te-header'))!, /running/);
    await h.notify('store/changed', { rollouts: 1 });
    await h.page.waitForFunction((n) => document.querySelectorAll('.te-row:not([hidden])').length === n, real.spans.length);
    assert.match((await h.page.textContent('.te-header'))!, /succeeded/);
    await h.notify('store/changed', { rollouts: 2 });
    await h.page.waitForTimeout(100);
    assert.equal(calls, 2, 'a finished rollout is not fetched again');
  });

  test('a rollout that failed without a final output says so in the header', async () => {
    const noOutput: TraceFixture = { rollout: { ...real.rollout, status: 'failed', failure: 'no_output', finalReward: 0 }, spans: real.spans };
    const h = await panel({}, () => noOutput);
    await show(h, noOutput);
    assert.match((await h.page.textContent('.te-header'))!, /failed \(no output\)/);
  });

  test('spans in a parent cycle are rows under the rollout, and a banner says how many', async () => {
    const root = real.spans.find((x) => x.kind === 'rollout')!;
    const c: SpanRecord = { ...root, kind: 'node', spanId: 'c'.repeat(16), parentSpanId: 'd'.repeat(16), name: 'cycle-c', attributes: {} };
    const d: SpanRecord = { ...c, spanId: 'd'.repeat(16), parentSpanId: 'c'.repeat(16), name: 'cycle-d' };
    const cyclic: TraceFixture = { rollout: real.rollout, spans: [...real.spans, c, d] };
    const h = await panel({}, () => cyclic);
    await show(h, cyclic);
    const labels = await rowLabels(h.page);
    assert.equal(labels.length, real.spans.length + 2, 'every span is a row');
    assert.ok(labels.includes('cycle-c') && labels.includes('cycle-d'), labels.join(', '));
    assert.ok(await h.page.isVisible('.te-cycle'), 'the banner is visible');
    assert.match((await h.page.textContent('.te-cycle'))!, /2 spans are in a parent cycle .*shown under the rollout/);
  });

  test('a failed request shows the error instead of a blank panel', async () => {
    const h = await panel({}, () => {
      throw new Error('rollout not found in the store');
    });
    await h.notify('trace/show', { rolloutId: 'f'.repeat(32) });
    await h.page.waitForSelector('.te-message.te-error-text');
    assert.match((await h.page.textContent('.te-message'))!, /rollout not found in the store/);
    assert.deepEqual(h.errors, []);
  });
});
