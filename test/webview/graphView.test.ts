import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { RESEARCH_LAB_AGENTS } from '../../src/core/graph/researchLab/outputs';
import type { Lab } from '../../src/core/lab/lab';
import { startSimServer } from '../../src/core/sim/simServer';
import { nodeAggregates, rolloutOverlay } from '../../src/core/analysis/graphStats';
import { describeLabGraph } from '../../src/core/lab/graphDescription';
import type { RequestResults } from '../../src/shared/protocol';
import { REPO, closeBrowser, openPanel, waitReady, type ScriptedHandlers, type WebviewHarness } from './harness';
import { tempLab, tempModuleLab, type TempLab } from './labViewsData';

const SHOTS = join(REPO, 'test-results', 'webview');
const WITH_TOOLS = ['Geneticist', 'Pharmacologist', 'Neurologist', 'HypothesisRefiner', 'ProtocolDesigner'];
const EVIL = '<img src=x onerror=window.__xss=1>';
const EVIL_SCRIPT = '</script><b>bold</b>';
const EVIL_LABEL = '<svg onload=window.__xss=2>';

interface DrawnNode {
  name: string;
  detail: string;
  classes: string;
  visits: string | null;
  badges: string[];
  label: string;
}

/** What the page shows for one node, found by its data attribute (never by a selector built from its name). */
function drawnNode(page: Page, id: string): Promise<DrawnNode | null> {
  return page.evaluate((id) => {
    const g = Array.from(document.querySelectorAll<SVGGElement>('.gv-node')).find((n) => n.dataset.node === id);
    if (!g) return null;
    return {
      name: g.querySelector('.gv-node-name')?.textContent ?? '',
      detail: g.querySelector('.gv-node-detail')?.textContent ?? '',
      classes: g.getAttribute('class') ?? '',
      visits: g.getAttribute('data-visits'),
      badges: Array.from(g.querySelectorAll('.gv-badge text')).map((t) => t.textContent ?? ''),
      label: g.getAttribute('aria-label') ?? '',
    };
  }, id);
}

function drawnEdges(page: Page): Promise<Array<{ source: string; target: string; label: string | null; classes: string }>> {
  return page.evaluate(() =>
    Array.from(document.querySelectorAll<SVGGElement>('.gv-edge')).map((e) => ({
      source: e.dataset.source ?? '',
      target: e.dataset.target ?? '',
      label: e.dataset.label ?? null,
      classes: e.getAttribute('class') ?? '',
    })),
  );
}

async function clickNode(page: Page, id: string): Promise<void> {
  const box = await page.evaluate((id) => {
    const g = Array.from(document.querySelectorAll<SVGGElement>('.gv-node')).find((n) => n.dataset.node === id)!;
    const r = g.querySelector('rect')!.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2 };
  }, id);
  await page.mouse.click(box.x, box.y);
}

/** Commands the webview posted, once at least `n` have arrived (messages reach the scripted host asynchronously). */
async function commands(h: WebviewHarness, n: number): Promise<Array<{ command: unknown; args: unknown }>> {
  const list = (): Array<{ command: unknown; args: unknown }> => h.sent.filter((m) => m.kind === 'command').map((m) => ({ command: m.command, args: m.args }));
  for (let i = 0; i < 200 && list().length < n; i++) await new Promise((r) => setTimeout(r, 25));
  return list();
}

async function ready(h: WebviewHarness, theme: 'dark' | 'light' = 'dark'): Promise<void> {
  await waitReady(h);
  await h.page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
}

function handlersFor(lab: Lab, describe: RequestResults['graph/describe']): ScriptedHandlers {
  return {
    'graph/describe': () => describe,
    'rollouts/list': (p) => lab.store.listRollouts(p),
    'runs/list': () => ({ runs: lab.store.listRuns() }),
    'graph/rolloutOverlay': (p: { rolloutId: string }) => ({ rolloutId: p.rolloutId, ...rolloutOverlay(lab.store.getSpans(p.rolloutId)) }),
    'graph/aggregate': (p: { runId?: string }) => nodeAggregates(lab.store, p),
  };
}

describe('graph view panel', () => {
  let t: TempLab;
  let lab: Lab;
  let graph: RequestResults['graph/describe'];
  let loopRollout: string;
  let loopOverlay: ReturnType<typeof rolloutOverlay>;
  const open: WebviewHarness[] = [];
  const panel = async (opts: { theme?: 'dark' | 'light'; state?: unknown; describe?: RequestResults['graph/describe']; viewport?: { width: number; height: number } } = {}): Promise<WebviewHarness> => {
    const h = await openPanel('graphView', handlersFor(lab, opts.describe ?? graph), { theme: opts.theme, state: opts.state, viewport: opts.viewport });
    open.push(h);
    await ready(h, opts.theme);
    return h;
  };

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    t = await tempLab('rl-graphview-');
    await t.run({ limit: 8, seed: 3 });
    lab = await t.open();
    graph = await describeLabGraph(lab);
    // A rollout that went round a revision loop: the reviewer ran more than once.
    const loops = lab.store
      .listRollouts()
      .rollouts.map((r) => ({ id: r.id, o: rolloutOverlay(lab.store.getSpans(r.id)) }))
      .filter((x) => (x.o.visits.PeerReviewer ?? 0) > 1)
      .sort((a, b) => b.o.path.length - a.o.path.length);
    assert.ok(loops.length, 'the simulated rollouts include a revision loop');
    loopRollout = loops[0]!.id;
    loopOverlay = loops[0]!.o;
  });
  after(async () => {
    for (const h of open) await h.close();
    await closeBrowser();
    await lab?.close();
    t?.remove();
  });

  it('draws the nine agents, their tool nodes, START and END, labelled conditional edges and tool loops', async () => {
    const h = await panel();
    const ids = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGGElement>('.gv-node')).map((n) => n.dataset.node));
    assert.deepEqual([...ids].sort(), graph.nodes.map((n) => n.id).sort());
    for (const a of RESEARCH_LAB_AGENTS) {
      const n = await drawnNode(h.page, a);
      assert.equal(n?.name, a);
      assert.match(n!.classes, /gv-kind-agent/);
    }
    for (const a of WITH_TOOLS) assert.match((await drawnNode(h.page, `${a}_tools`))!.classes, /gv-kind-tools/);
    assert.equal((await drawnNode(h.page, '__start__'))!.name, 'START');
    assert.match((await drawnNode(h.page, '__start__'))!.classes, /gv-kind-start/);
    assert.match((await drawnNode(h.page, '__end__'))!.classes, /gv-kind-end/);

    const edges = await drawnEdges(h.page);
    assert.equal(edges.length, graph.edges.length);
    const labels = await h.page.evaluate(() => Array.from(document.querySelectorAll('.gv-edge-label text')).map((t) => t.textContent));
    for (const l of ['CRITICAL', 'MAJOR', 'approve/turn limit', 'tool call', 'answer']) assert.ok(labels.includes(l), `edge label ${l}`);
    const critical = edges.find((e) => e.label === 'CRITICAL')!;
    assert.deepEqual([critical.source, critical.target], ['SafetyOfficer', 'HypothesisRefiner']);
    assert.match(critical.classes, /gv-conditional/);
    for (const a of WITH_TOOLS) {
      const out = edges.find((e) => e.source === a && e.target === `${a}_tools`);
      const back = edges.find((e) => e.source === `${a}_tools` && e.target === a);
      assert.ok(out && back, `tool loop of ${a}`);
      assert.match(out.classes, /gv-tool-loop/);
      assert.match(back.classes, /gv-tool-loop/);
    }
    // Every edge has a visible path.
    const lengths = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGPathElement>('.gv-edge-line')).map((p) => p.getTotalLength()));
    assert.ok(lengths.every((l) => l > 5));
    assert.match((await h.page.textContent('.gv-status'))!, /research lab · 9 agents · 16 nodes/);
    assert.deepEqual(h.errors, []);
  });

  it('overlays a rollout with a revision loop: path, visit counts on nodes run more than once, persisted state', async () => {
    for (const theme of ['dark', 'light'] as const) {
      const h = await panel({ theme });
      await h.notify('graph/showRollout', { rolloutId: loopRollout });
      await h.page.waitForFunction(() => document.querySelector('.gv-canvas')?.getAttribute('data-mode') === 'rollout' && !!document.querySelector('.gv-visited'));
      await h.page.waitForSelector('.gv-path:not([hidden])');
      const reviewer = (await drawnNode(h.page, 'PeerReviewer'))!;
      const n = loopOverlay.visits.PeerReviewer!;
      assert.equal(reviewer.visits, String(n));
      assert.ok(reviewer.badges.includes(`×${n}`), `badge ×${n} in ${reviewer.badges.join(',')}`);
      assert.equal(reviewer.detail, `visited ${n}×`);
      assert.match(reviewer.classes, /gv-visited/);
      for (const [node, v] of Object.entries(loopOverlay.visits)) {
        const d = (await drawnNode(h.page, node))!;
        assert.equal(d.visits, String(v), node);
        assert.equal(d.badges.includes(`×${v}`), v > 1, `${node}: a badge only when visited more than once`);
      }
      for (const a of graph.nodes.filter((x) => x.kind !== 'start' && x.kind !== 'end' && !loopOverlay.visits[x.id])) {
        assert.match((await drawnNode(h.page, a.id))!.classes, /gv-unvisited/, a.id);
      }
      // The loop edge back out of the safety officer was taken.
      const edges = await drawnEdges(h.page);
      assert.ok(edges.some((e) => e.source === 'SafetyOfficer' && (e.label === 'CRITICAL' || e.label === 'MAJOR') && /gv-taken/.test(e.classes)));
      assert.ok(edges.some((e) => e.source === 'PrincipalInvestigator' && e.target === '__end__' && /gv-taken/.test(e.classes)));
      assert.equal(await h.page.textContent('.gv-path'), `Path: ${loopOverlay.path.join(' → ')}`);
      const state = (await h.page.evaluate(() => (window as unknown as { __lastState: unknown }).__lastState)) as Record<string, unknown>;
      assert.equal(state.mode, 'rollout');
      assert.equal(state.rolloutId, loopRollout);
      await h.page.screenshot({ path: join(SHOTS, `graph-view-${theme}.png`) });
      assert.deepEqual(h.errors, []);
    }
  });

  it('picks a rollout from the rollout picker', async () => {
    const h = await panel({ state: { mode: 'rollout' } });
    const { rollouts } = lab.store.listRollouts({ limit: 200 });
    const other = rollouts.find((r) => r.id !== loopRollout && r.status === 'succeeded')!;
    await h.page.waitForFunction(() => !!document.querySelector('.gv-visited'));
    const options = await h.page.evaluate(() => (document.querySelector('.gv-rollout-picker') as unknown as { options: unknown[] }).options.length);
    assert.equal(options, rollouts.length);
    // Each rollout reads as task, sample, reward and status, never as its raw id; the id is in the tooltip.
    const picker = await h.page.evaluate(() => {
      const p = document.querySelector('.gv-rollout-picker') as unknown as { options: Array<{ label: string; description: string; value: string }>; title: string; value: string };
      return { options: p.options.map((o) => ({ label: o.label, description: o.description, value: o.value })), title: p.title, value: p.value };
    });
    for (const o of picker.options) {
      const r = rollouts.find((x) => x.id === o.value)!;
      assert.equal(o.label, `task ${r.taskId} #${r.sample + 1} · reward ${r.finalReward!.toFixed(3)} · ${r.status}`);
      assert.doesNotMatch(`${o.label} ${o.description}`, /[0-9a-f]{32}/, 'no raw rollout id in the option');
      assert.match(o.description, new RegExp(`^${r.runId} · started `));
    }
    assert.equal(picker.title, `Rollout ${picker.value} · ${rollouts.find((x) => x.id === picker.value)!.runId}`);
    // Open the picker and choose the rollout by its label, as a user does.
    await h.page.click('.gv-rollout-picker');
    await h.page.getByText(`task ${other.taskId} #${other.sample + 1} · reward ${other.finalReward!.toFixed(3)}`, { exact: false }).first().click();
    await h.page.waitForFunction(
      (id) => ((window as unknown as { __lastState?: { rolloutId?: string } }).__lastState?.rolloutId ?? '') === id,
      other.id,
    );
    const requested = h.sent.filter((m) => m.kind === 'request' && m.method === 'graph/rolloutOverlay').map((m) => (m.params as { rolloutId: string }).rolloutId);
    assert.equal(requested[requested.length - 1], other.id);
    const expected = rolloutOverlay(lab.store.getSpans(other.id));
    await h.page.waitForFunction((n) => document.querySelector('.gv-path')?.textContent?.split(' → ').length === n, expected.path.length);
    assert.equal((await drawnNode(h.page, 'Supervisor'))!.visits, String(expected.visits.Supervisor));
    assert.equal(await h.page.getAttribute('.gv-rollout-picker', 'title'), `Rollout ${other.id} · ${other.runId}`);
  });

  it('keeps the toolbar on one row in every mode, down to a narrow panel; screenshots in both themes', async () => {
    for (const width of [1280, 900, 700]) {
      for (const theme of ['dark', 'light'] as const) {
        if (width === 700 && theme === 'light') continue;
        const h = await panel({ theme, viewport: { width, height: 760 }, state: { mode: 'rollout', rolloutId: loopRollout } });
        await h.page.waitForFunction(() => !!document.querySelector('.gv-visited'));
        for (const mode of ['rollout', 'aggregate', 'structure'] as const) {
          if (mode !== 'rollout') {
            await h.page.click(`vscode-radio[data-mode="${mode}"]`);
            await h.page.waitForFunction((m) => document.querySelector('.gv-canvas')?.getAttribute('data-mode') === m, mode);
          }
          const fit = await h.page.evaluate(() => {
            const bar = document.querySelector('.gv-toolbar') as HTMLElement;
            const kids = Array.from(bar.children).filter((c) => !(c as HTMLElement).hidden && (c as HTMLElement).getBoundingClientRect().width > 0);
            const tops = kids.map((c) => Math.round(c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2));
            return { rows: new Set(tops.map((t) => Math.round(t / 12))).size, overflow: bar.scrollWidth - bar.clientWidth, height: bar.getBoundingClientRect().height };
          });
          assert.equal(fit.rows, 1, `${mode} at ${width}px: one row (${JSON.stringify(fit)})`);
          assert.ok(fit.overflow <= 0, `${mode} at ${width}px: nothing overflows (${fit.overflow}px)`);
          assert.ok(fit.height < 44, `${mode} at ${width}px: toolbar ${fit.height}px high`);
          if (mode !== 'structure') await h.page.screenshot({ path: join(SHOTS, `graph-view-${mode}-${width}-${theme}.png`) });
        }
        assert.deepEqual(h.errors, []);
        await h.close();
        open.splice(open.indexOf(h), 1);
      }
    }
  });

  it('shows per-node figures that differ (revisits, latency, errors, rewards when revisited) and edge traffic, restored from state', async () => {
    const h = await panel({ state: { mode: 'aggregate' } });
    await h.page.waitForFunction(() => document.querySelector('.gv-canvas')?.getAttribute('data-mode') === 'aggregate' && /rollout/.test(document.querySelector('.gv-node-detail')?.textContent ?? ''));
    const agg = nodeAggregates(lab.store);
    for (const s of agg.nodes) {
      const d = (await drawnNode(h.page, s.node))!;
      const vpr = String(Number(s.visitsPerRollout!.toPrecision(2)));
      assert.match(d.detail, new RegExp(`^${vpr.replace('.', '\\.')}×/rollout · \\d+(\\.\\d)? (ms|s) · ${Math.round(s.errorRate! * 100)}% err$`), `${s.node}: ${d.detail}`);
      assert.match(d.label, new RegExp(`mean reward when revisited`), s.node);
      assert.match(d.label, /latency p50 .*, p95 /, s.node);
      // A node revisited in some rollouts and not in others shows the reward difference; no node shows the same mean final reward.
      const delta = s.revisited.rollouts && s.once.rollouts ? s.revisited.meanReward! - s.once.meanReward! : null;
      const badge = d.badges.find((b) => b.startsWith('↻'));
      if (delta === null) assert.equal(badge, undefined, s.node);
      else assert.equal(badge, `↻ ${delta >= 0 ? '+' : '−'}${Math.abs(delta).toFixed(3)}`, s.node);
      assert.ok(!d.badges.some((b) => b.startsWith('R ')), `${s.node}: no plain mean final reward badge`);
    }
    const details = await Promise.all(agg.nodes.filter((n) => !n.node.endsWith('_tools')).map(async (n) => (await drawnNode(h.page, n.node))!.detail));
    assert.ok(new Set(details).size > 1, `the agents read differently: ${details.join(' | ')}`);
    assert.ok(agg.nodes.some((n) => n.revisited.rollouts && n.once.rollouts), 'the fixture has a node revisited in some rollouts only');

    // Edges carry their traffic: a count label and a stroke as thick as their share.
    const drawn = await h.page.evaluate(() =>
      Array.from(document.querySelectorAll<SVGGElement>('.gv-edge')).map((e, i) => ({
        source: e.dataset.source!,
        target: e.dataset.target!,
        traversals: Number(e.getAttribute('data-traversals')),
        width: parseFloat(getComputedStyle(e.querySelector('.gv-edge-line')!).strokeWidth),
        label: Array.from(document.querySelectorAll<SVGGElement>(`.gv-edge-label[data-edge="${i}"]`)).filter((l) => !l.hasAttribute('hidden')).map((l) => l.textContent ?? '')[0] ?? null,
        title: e.querySelector('title')?.textContent ?? '',
      })),
    );
    const traffic = new Map(agg.edges.map((e) => [`${e.source}>${e.target}`, e.traversals]));
    for (const e of drawn) {
      const want = traffic.get(`${e.source}>${e.target}`) ?? 0;
      assert.equal(e.traversals, want, `${e.source} → ${e.target}`);
      if (want > 0) {
        assert.ok(e.label !== null && e.label.endsWith(String(want)), `${e.source} → ${e.target} labelled ${e.label}`);
        assert.match(e.title, new RegExp(`taken ${want} times? in \\d+ rollouts?`));
      }
    }
    const byCount = [...drawn].sort((a, b) => a.traversals - b.traversals);
    for (let i = 1; i < byCount.length; i++) assert.ok(byCount[i]!.width >= byCount[i - 1]!.width - 1e-6, 'busier edges are drawn thicker');
    assert.ok(byCount[byCount.length - 1]!.width > byCount[0]!.width + 2);
    const loop = drawn.find((e) => e.source === 'SafetyOfficer' && e.target !== 'PrincipalInvestigator' && e.traversals > 0);
    assert.ok(loop, 'the revision loop back from the safety officer shows its count');
    const reviewerIn = drawn.filter((e) => e.target === 'PeerReviewer').reduce((n, e) => n + e.traversals, 0);
    assert.equal(reviewerIn, agg.nodes.find((n) => n.node === 'PeerReviewer')!.visits, 'every visit of the reviewer came along a counted edge');

    // The full figures of a node are one Tab away, in the info line.
    let focused: string | null = null;
    for (let i = 0; i < 25 && focused !== 'Geneticist' && focused !== 'Pharmacologist' && focused !== 'Neurologist'; i++) {
      await h.page.keyboard.press(focused ? 'ArrowDown' : 'Tab');
      focused = await h.page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset?.node ?? null);
    }
    assert.ok(focused, 'a node has keyboard focus');
    await h.page.waitForFunction((n) => document.querySelector('.gv-info')?.textContent?.startsWith(n + ','), focused);
    const info = (await h.page.textContent('.gv-info'))!;
    assert.match(info, /visits per rollout/);
    assert.match(info, /mean reward when revisited/);
    assert.match((await h.page.textContent('.gv-status'))!, new RegExp(`^${agg.rollouts} rollouts`));
    assert.equal(await h.page.evaluate(() => (document.querySelector('vscode-radio[data-mode="aggregate"]') as unknown as { checked: boolean }).checked), true);
    await h.page.screenshot({ path: join(SHOTS, 'graph-view-aggregate-dark.png') });

    // The mode switch is a radio group: switching back to the structure clears the figures.
    await h.page.click('vscode-radio[data-mode="structure"]');
    await h.page.waitForFunction(() => document.querySelector('.gv-canvas')?.getAttribute('data-mode') === 'structure');
    assert.equal((await drawnNode(h.page, 'Supervisor'))!.detail, 'agent · prompt');
    assert.equal(await h.page.locator('.gv-edge[data-traversals]').count(), 0);
    assert.ok(await h.page.locator('.gv-info').isHidden());
    assert.deepEqual(h.errors, []);
  });

  it('clicking a node offers its prompt file and its spans in the trace explorer', async () => {
    const h = await panel();
    await clickNode(h.page, 'Supervisor');
    await h.page.waitForSelector('.gv-menu:not([hidden])');
    assert.equal(await h.page.textContent('.gv-menu-title'), 'Supervisor');
    await h.page.click('.gv-menu-item[data-action="prompt"]');
    await clickNode(h.page, 'Geneticist_tools');
    await h.page.click('.gv-menu-item[data-action="spans"]');
    await clickNode(h.page, 'Geneticist_tools');
    await h.page.click('.gv-menu-item[data-action="prompt"]');
    assert.deepEqual(await commands(h, 3), [
      { command: 'prompt/open', args: { agent: 'Supervisor' } },
      { command: 'trace/filterNode', args: { node: 'Geneticist_tools' } },
      { command: 'prompt/open', args: { agent: 'Geneticist' } },
    ]);
    // START has neither.
    await clickNode(h.page, '__start__');
    assert.equal(await h.page.locator('.gv-menu-item').count(), 0);
  });

  it('is keyboard reachable: Tab to a node, arrows between nodes, Enter opens the menu, Escape returns', async () => {
    const h = await panel();
    const focused = (): Promise<string | null> => h.page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset?.node ?? null);
    // Tab past the toolbar until a node has focus; the first node in reading order is START.
    let node: string | null = null;
    for (let i = 0; i < 20 && !node; i++) {
      await h.page.keyboard.press('Tab');
      node = await focused();
    }
    assert.equal(node, '__start__');
    await h.page.keyboard.press('ArrowDown');
    const junior = await focused();
    assert.ok(['Geneticist', 'Pharmacologist', 'Neurologist'].includes(junior!), `ArrowDown from START went to ${junior}`);
    await h.page.keyboard.press('Tab');
    assert.notEqual(await focused(), junior);
    await h.page.keyboard.press('Shift+Tab');
    assert.equal(await focused(), junior);
    await h.page.keyboard.press('Enter');
    await h.page.waitForSelector('.gv-menu:not([hidden])');
    assert.equal(await h.page.evaluate(() => (document.activeElement as HTMLElement).dataset.action), 'prompt');
    await h.page.keyboard.press('ArrowDown');
    assert.equal(await h.page.evaluate(() => (document.activeElement as HTMLElement).dataset.action), 'spans');
    await h.page.keyboard.press('Escape');
    assert.equal(await focused(), junior);
    await h.page.keyboard.press('Enter');
    await h.page.keyboard.press('Enter');
    assert.deepEqual(await commands(h, 1), [{ command: 'prompt/open', args: { agent: junior } }]);
    assert.equal(await focused(), junior, 'focus returns to the node after the choice');
  });

  it('marks the nodes where a rollout failed, in the rollout and in the aggregate', async () => {
    // The reviewer answers prose instead of its JSON review, every time: its visits fail after the repair round trip.
    const sim = await startSimServer({ faults: ({ agent }) => (agent === 'PeerReviewer' ? { kind: 'not-json' } : null) });
    const f = await tempLab('rl-graphview-faults-');
    let flab: Lab | null = null;
    try {
      await f.run({ limit: 1, seed: 5, baseUrl: sim.url });
      flab = await f.open();
      const [r] = flab.store.listRollouts().rollouts;
      const o = rolloutOverlay(flab.store.getSpans(r!.id));
      assert.ok((o.errors.PeerReviewer ?? 0) > 0, `the reviewer failed: ${JSON.stringify(o.errors)}`);
      const h = await openPanel('graphView', handlersFor(flab, graph), { state: { mode: 'rollout', rolloutId: r!.id } });
      open.push(h);
      await ready(h);
      await h.page.waitForFunction(() => !!document.querySelector('.gv-has-error'));
      const reviewer = (await drawnNode(h.page, 'PeerReviewer'))!;
      const n = o.errors.PeerReviewer!;
      assert.match(reviewer.classes, /gv-has-error/);
      assert.ok(reviewer.badges.includes(`! ${n}`), reviewer.badges.join(','));
      assert.match(reviewer.detail, new RegExp(`· ${n} errors?$`));
      assert.doesNotMatch((await drawnNode(h.page, 'Supervisor'))!.classes, /gv-has-error/);
      await h.page.screenshot({ path: join(SHOTS, 'graph-view-errors-dark.png') });

      await h.page.click('vscode-radio[data-mode="aggregate"]');
      await h.page.waitForFunction(() => document.querySelector('.gv-canvas')?.getAttribute('data-mode') === 'aggregate' && /rollout/.test(document.querySelector('.gv-node-detail')?.textContent ?? ''));
      assert.match((await drawnNode(h.page, 'PeerReviewer'))!.detail, / · 100% err$/);
      assert.match((await drawnNode(h.page, 'PeerReviewer'))!.classes, /gv-has-error/);
      assert.deepEqual(h.errors, []);
    } finally {
      await flab?.close();
      f.remove();
      await sim.close();
    }
  });

  it('draws a user module graph (examples/custom-graph) with its labelled edges and tool loop', async () => {
    const m = await tempModuleLab('rl-graphview-module-');
    const mlab = await m.open();
    try {
      const d = await describeLabGraph(mlab);
      const h = await panel({ describe: d });
      const ids = await h.page.evaluate(() => Array.from(document.querySelectorAll<SVGGElement>('.gv-node')).map((n) => n.dataset.node));
      assert.deepEqual([...ids].sort(), ['Critic', 'Writer', 'Writer_tools', '__end__', '__start__']);
      const labels = await h.page.evaluate(() => Array.from(document.querySelectorAll('.gv-edge-label:not(.gv-edge-count) text')).map((t) => t.textContent).sort());
      assert.deepEqual(labels, ['done', 'draft', 'revise', 'tool call']);
      assert.match((await h.page.textContent('.gv-status'))!, /your graph module · 2 agents · 5 nodes/);
      await h.page.screenshot({ path: join(SHOTS, 'graph-view-module-dark.png') });
      assert.deepEqual(h.errors, []);
    } finally {
      await mlab.close();
      m.remove();
    }
  });

  it('renders node names and edge labels from a user graph literally and runs none of them', async () => {
    const dir = join(t.dir, 'evil');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'evil.ts');
    writeFileSync(
      file,
      `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ n: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }) });
export default new StateGraph(State)
  .addNode(${JSON.stringify(EVIL)}, async () => ({ n: 1 }))
  .addNode(${JSON.stringify(EVIL_SCRIPT)}, async () => ({ n: 2 }))
  .addEdge(START, ${JSON.stringify(EVIL)})
  .addConditionalEdges(${JSON.stringify(EVIL)}, () => 'ok', { ${JSON.stringify(EVIL_LABEL)}: ${JSON.stringify(EVIL_SCRIPT)}, ok: END })
  .addEdge(${JSON.stringify(EVIL_SCRIPT)}, END)
  .compile();
`,
    );
    const m = await tempModuleLab('rl-graphview-evil-', file);
    const mlab = await m.open();
    try {
      const d = await describeLabGraph(mlab);
      assert.ok(d.nodes.some((n) => n.id === EVIL));
      const h = await panel({ describe: d });
      assert.equal((await drawnNode(h.page, EVIL))!.name, EVIL);
      assert.equal((await drawnNode(h.page, EVIL_SCRIPT))!.name, EVIL_SCRIPT);
      const labels = await h.page.evaluate(() => Array.from(document.querySelectorAll('.gv-edge-label text')).map((t) => t.textContent));
      assert.ok(labels.includes(EVIL_LABEL));
      await clickNode(h.page, EVIL);
      assert.equal(await h.page.textContent('.gv-menu-title'), EVIL);
      await h.page.click('.gv-menu-item[data-action="spans"]');
      assert.deepEqual(await commands(h, 1), [{ command: 'trace/filterNode', args: { node: EVIL } }]);
      const injected = await h.page.evaluate(() => ({
        xss: (window as unknown as { __xss?: unknown }).__xss,
        imgs: document.querySelectorAll('img').length,
        bold: document.querySelectorAll('b').length,
        svgs: document.querySelectorAll('svg svg').length,
      }));
      assert.deepEqual(injected, { xss: undefined, imgs: 0, bold: 0, svgs: 0 });
      assert.deepEqual(h.errors, []);
    } finally {
      await mlab.close();
      m.remove();
    }
  });
});
