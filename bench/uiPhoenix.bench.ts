import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { exportStoredRollouts } from '../src/core/otlp/otlpExporter';
import { TraceStore } from '../src/core/store/traceStore';
import { SpanPager } from '../src/core/store/spanPages';
import { phoenixProjects, startPhoenix, type PeerServer } from '../test/peers/peerServers';
import { closeBrowser, launchBrowser, openPanel, waitReady } from '../test/webview/harness';
import { buildWebview } from '../test/webview/fixtures/buildWebview';
import { syntheticTrace } from '../test/webview/fixtures/syntheticTrace';
import { median, result, type Bench } from './harness';

/**
 * ui.open10k.phoenix: time from opening a 10,000-span trace to its first rows
 * on screen, in the Trace Explorer and in Arize Phoenix's trace page, the same
 * trace in both, in the same headless Debian Chromium through Playwright.
 *
 * The trace (the webview benches' synthetic research-lab rollout) is written
 * into a store on disk, and sent from that store into a fresh Phoenix (SQLite
 * in a temp folder) by `traces export --otlp`'s exporter; Phoenix is waited on
 * until its API counts every span. Untimed.
 *
 * Timed, from a new browser context (cold cache) until a row naming the
 * trace's first agent step is in the page (stamped in the page by a
 * MutationObserver, the same one in both):
 * - ours: the Trace Explorer panel loads, says ready, is shown the rollout,
 *   and asks its host for the spans; the host answers from the open store
 *   exactly as the extension does (the spans read from disk, sent in pages,
 *   the first one small);
 * - Phoenix: its trace page (`/projects/<id>/traces/<traceId>`) loads, its
 *   bundle queries its server over GraphQL, and draws the span tree (its
 *   first 1,000 spans, "Viewing 1000 of 10000 spans", the rest on a click).
 * Alternated, RUNS each after one untimed warm-up of each; medians. Target
 * ratio (ours / Phoenix) ≤ 1.0.
 */

const SPANS = 10_000;
const RUNS = 5;
const TIMEOUT_MS = 120_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Installs, in the page, an observer that stamps (wall clock, ms) the first DOM change that leaves a row of the span
 * tree naming `text`: taken in the page, so a large message still on its way to the page (the rest of the spans) does
 * not delay the reading. A string, not a function: tsx would wrap inner functions in a helper the page does not have.
 */
function firstRowObserver(selector: string, text: string): string {
  return `(() => {
    const sel = ${JSON.stringify(selector)}, text = ${JSON.stringify(text)};
    const seen = () => Array.from(document.querySelectorAll(sel)).some((e) => (e.textContent || '').includes(text));
    const stamp = () => { if (window.__firstRowAt === undefined && seen()) { window.__firstRowAt = performance.timeOrigin + performance.now(); observer.disconnect(); } };
    const observer = new MutationObserver(stamp);
    const start = () => { observer.observe(document.documentElement, { childList: true, subtree: true, characterData: true }); stamp(); };
    if (document.documentElement) start(); else document.addEventListener('readystatechange', start, { once: true });
  })()`;
}

/** Milliseconds from `since` (Date.now()) to the stamp of firstRowObserver, once it is set. */
async function firstRowAfter(page: Page, since: number): Promise<number> {
  await page.waitForFunction(() => (window as unknown as { __firstRowAt?: number }).__firstRowAt !== undefined, undefined, { timeout: TIMEOUT_MS });
  return (await page.evaluate(() => (window as unknown as { __firstRowAt: number }).__firstRowAt)) - since;
}

/** The extension's trace/get over a store (its own pager): the spans read from disk, sent in pages, the first one small. */
function storeHandlers(store: TraceStore) {
  const pager = new SpanPager();
  return {
    'trace/get': (p: { rolloutId: string; offset?: number; limit?: number }) => {
      const rollout = store.getRollout(p.rolloutId);
      if (!rollout) throw new Error(`rollout ${p.rolloutId} is not in the store`);
      return pager.get(store, rollout, p.offset, p.limit);
    },
  };
}

async function openOurs(store: TraceStore, rolloutId: string, rowText: string): Promise<number> {
  const t0 = Date.now();
  const h = await openPanel('traceExplorer', storeHandlers(store));
  try {
    await waitReady(h);
    // No row can be drawn before trace/show: the observer is in place in time.
    await h.page.evaluate(firstRowObserver('.te-row', rowText));
    await h.notify('trace/show', { rolloutId });
    const ms = await firstRowAfter(h.page, t0);
    if (h.errors.length) throw new Error(`the trace explorer logged errors: ${h.errors.join(' | ')}`);
    return ms;
  } finally {
    await h.close();
  }
}

async function openPhoenix(url: string, rowText: string): Promise<number> {
  const browser = await launchBrowser();
  const t0 = Date.now();
  const context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
  try {
    // The skeleton drawn while the spans load uses the same class: only a row with a span's name counts.
    await context.addInitScript(firstRowObserver('.span-node-wrap', rowText));
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'commit' });
    return await firstRowAfter(page, t0);
  } finally {
    await context.close();
  }
}

/** The Phoenix project holding the spans once it counts `spans` of them (ingest runs in the background there). */
async function phoenixProject(phoenix: PeerServer, spans: number): Promise<string> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    const projects = await phoenixProjects(phoenix.url);
    const p = projects.find((e) => e.recordCount >= spans);
    if (p) return p.id;
    if (Date.now() > deadline) throw new Error(`Phoenix holds ${projects.map((e) => e.recordCount).join('+')} of ${spans} spans after 15 min`);
    await sleep(500);
  }
}

export const bench: Bench = {
  names: ['ui.open10k.phoenix'],
  async run() {
    await buildWebview('traceExplorer');
    // Without a Chromium the row is skipped before Phoenix is started and fed.
    await launchBrowser();
    const trace = syntheticTrace(SPANS, { logprobsEvery: 7 });
    const firstStep = trace.spans.find((s) => s.kind === 'node')!.name;
    const ws = mkdtempSync(join(tmpdir(), 'rl-ui-phoenix-'));
    const phoenix = await startPhoenix();
    try {
      const writer = await TraceStore.open(ws);
      writer.startRun({ id: trace.rollout.runId, startTime: trace.rollout.startTime, endTime: null, status: 'running', params: {}, simulated: true, planned: 1 });
      writer.startRollout({ ...trace.rollout, status: 'running', endTime: null, finalReward: null, agents: [] });
      writer.writeSpans(trace.spans);
      writer.finishRollout(trace.rollout);
      await writer.close();
      const store = await TraceStore.open(ws, { readOnly: true });
      try {
        const sent = await exportStoredRollouts(store, { endpoint: phoenix.url });
        if (sent.rejectedSpans) throw new Error(`Phoenix refused ${sent.rejectedSpans} of ${sent.spans} spans`);
        const traceUrl = `${phoenix.url}/projects/${await phoenixProject(phoenix, sent.spans)}/traces/${trace.rollout.id}`;
        // Warm-ups, untimed: the browser's start, Phoenix's first queries and the panel bundle's first compile.
        await openOurs(store, trace.rollout.id, firstStep);
        await openPhoenix(traceUrl, firstStep);
        const ours: number[] = [];
        const theirs: number[] = [];
        for (let i = 0; i < RUNS; i++) {
          ours.push(await openOurs(store, trace.rollout.id, firstStep));
          theirs.push(await openPhoenix(traceUrl, firstStep));
        }
        return [
          result(
            'ui.open10k.phoenix',
            'ms',
            median(ours),
            median(theirs),
            `baseline: Arize Phoenix ${phoenix.version}'s trace page on the same ${sent.spans}-span trace, same Chromium, from a new browser context to a row naming the first agent step (Phoenix draws its first 1,000 spans); target ratio ≤ 1.0`,
          ),
        ];
      } finally {
        await store.close();
      }
    } finally {
      await closeBrowser();
      await phoenix.stop();
      rmSync(ws, { recursive: true, force: true });
    }
  },
};
