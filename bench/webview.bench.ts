import { closeBrowser, openPanel, waitReady } from '../test/webview/harness';
import { buildWebview } from '../test/webview/fixtures/buildWebview';
import type { TraceFixture } from '../test/webview/fixtures/realTraces';
import { syntheticTrace } from '../test/webview/fixtures/syntheticTrace';
import { pagedTrace } from '../test/webview/fixtures/pagedTrace';
import { median, result, type Bench, type BenchResult } from './harness';

const RUNS = 5;
const SCROLL_RUNS = 3;
/** Frames of programmatic scrolling, and pixels per frame: about 45 rows a frame, a fast fling. */
const SCROLL_FRAMES = 240;
const SCROLL_STEP_PX = 1000;

interface OpenTiming {
  /** trace/get response received → rows rendered (synchronous work). */
  renderMs: number;
  /** trace/get response received → the frame after the rows were rendered (layout and paint included). */
  paintMs: number;
  rows: number;
}

/** The marks the webview sets on its body (ms timestamps) once the rows are painted, and the rows drawn. */
interface PaintMarks {
  request: number;
  data: number;
  rendered: number;
  painted: number;
  rows: number;
}

/** Opens the trace explorer on a fresh page with these request handlers, shows the trace, and reads the marks the webview sets. */
async function openMarks(trace: TraceFixture, handlers: Parameters<typeof openPanel>[1], timeout: number): Promise<PaintMarks> {
  const h = await openPanel('traceExplorer', handlers);
  try {
    await waitReady(h);
    await h.notify('trace/show', { rolloutId: trace.rollout.id });
    await h.page.waitForFunction(() => document.body.dataset.paintedAt, undefined, { timeout });
    const t = await h.page.evaluate(() => {
      const d = document.body.dataset;
      return { request: Number(d.requestAt), data: Number(d.dataAt), rendered: Number(d.renderedAt), painted: Number(d.paintedAt), rows: document.querySelectorAll('.te-row').length };
    });
    if (h.errors.length) throw new Error(`the trace explorer logged errors: ${h.errors.join(' | ')}`);
    return t;
  } finally {
    await h.close();
  }
}

/** Opens the trace explorer on a fresh page, shows the trace, and times it from the trace/get response. */
async function openOnce(trace: TraceFixture): Promise<OpenTiming> {
  const t = await openMarks(trace, { 'trace/get': () => trace }, 30_000);
  return { renderMs: t.rendered - t.data, paintMs: t.painted - t.data, rows: t.rows };
}

/**
 * Opens the trace explorer on a fresh page with a host that pages trace/get as
 * the extension does, and returns the time from its first trace/get request
 * to the first painted rows (the rest of a large rollout loads after that).
 */
async function openPaged(trace: TraceFixture): Promise<{ ms: number; rows: number }> {
  const t = await openMarks(trace, pagedTrace(trace), 120_000);
  return { ms: t.painted - t.request, rows: t.rows };
}

/** Scrolls the tree a fixed distance every animation frame (bouncing at the ends) and reports frame intervals. */
async function scrollFrames(trace: TraceFixture): Promise<{ meanFrameMs: number; p95FrameMs: number }> {
  const h = await openPanel('traceExplorer', { 'trace/get': () => trace });
  try {
    await waitReady(h);
    await h.notify('trace/show', { rolloutId: trace.rollout.id });
    await h.page.waitForFunction(() => document.body.dataset.paintedAt, undefined, { timeout: 30_000 });
    // A string, not a function: tsx would wrap named inner functions in a helper the page does not have.
    const frames = (await h.page.evaluate(`new Promise((done) => {
      const v = document.querySelector('.te-viewport');
      const max = v.scrollHeight - v.clientHeight;
      let dir = 1, pos = 0;
      const stamps = [];
      const tick = (ts) => {
        stamps.push(ts);
        if (stamps.length > ${SCROLL_FRAMES}) return done(stamps.slice(1).map((s, i) => s - stamps[i]));
        pos += dir * ${SCROLL_STEP_PX};
        if (pos >= max || pos <= 0) { pos = Math.max(0, Math.min(pos, max)); dir = -dir; }
        v.scrollTop = pos;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    })`)) as number[];
    if (h.errors.length) throw new Error(`the trace explorer logged errors: ${h.errors.join(' | ')}`);
    const sorted = [...frames].sort((a, b) => a - b);
    return { meanFrameMs: frames.reduce((s, x) => s + x, 0) / frames.length, p95FrameMs: sorted[Math.floor(sorted.length * 0.95)]! };
  } finally {
    await h.close();
  }
}

/**
 * webview.open: the trace explorer in headless Chromium, time from the
 * `trace/get` response to the first painted rows for a 10,000-span rollout;
 * baseline: the same panel opening a 100-span rollout (medians of 5 runs,
 * alternated). The issue asks for under 1 s; the ratio shows what 100× more
 * spans cost. webview.scroll: mean frame interval while the tree scrolls
 * about 45 rows a frame, 10,000 spans vs 100 (medians of 3 alternated runs).
 */
export const bench: Bench = {
  names: ['webview.open', 'webview.scroll', 'webview.open100k'],
  async run(): Promise<BenchResult[]> {
    await buildWebview('traceExplorer');
    const open100k = await benchOpen100k();
    const large = syntheticTrace(10_000, { logprobsEvery: 7 });
    const small = syntheticTrace(100, { logprobsEvery: 7 });
    try {
      await openOnce(small); // warm-up: browser start, bundle compile cache
      const bigRuns: OpenTiming[] = [];
      const smallRuns: OpenTiming[] = [];
      for (let i = 0; i < RUNS; i++) {
        bigRuns.push(await openOnce(large));
        smallRuns.push(await openOnce(small));
      }
      // Alternated and taken as medians: the machine is shared, a single pass is at the mercy of its neighbours.
      const bigScrolls: Array<{ meanFrameMs: number; p95FrameMs: number }> = [];
      const smallScrolls: Array<{ meanFrameMs: number; p95FrameMs: number }> = [];
      for (let i = 0; i < SCROLL_RUNS; i++) {
        bigScrolls.push(await scrollFrames(large));
        smallScrolls.push(await scrollFrames(small));
      }
      const bigScroll = { meanFrameMs: median(bigScrolls.map((r) => r.meanFrameMs)), p95FrameMs: median(bigScrolls.map((r) => r.p95FrameMs)) };
      const smallScroll = { meanFrameMs: median(smallScrolls.map((r) => r.meanFrameMs)), p95FrameMs: median(smallScrolls.map((r) => r.p95FrameMs)) };
      const paintBig = median(bigRuns.map((r) => r.paintMs));
      const paintSmall = median(smallRuns.map((r) => r.paintMs));
      const renderBig = median(bigRuns.map((r) => r.renderMs));
      return [
        result(
          'webview.open',
          'ms',
          paintBig,
          paintSmall,
          `baseline: the same panel opening a 100-span rollout; 10,000 spans, ${bigRuns[0]!.rows} row elements in the DOM, script ${renderBig.toFixed(0)} ms; want < 1000 ms`,
        ),
        result(
          'webview.scroll',
          'ms/frame',
          bigScroll.meanFrameMs,
          smallScroll.meanFrameMs,
          `baseline: scrolling a 100-span rollout; p95 ${bigScroll.p95FrameMs.toFixed(1)} vs ${smallScroll.p95FrameMs.toFixed(1)} ms; want ratio ≈ 1 (no stalls)`,
        ),
        open100k,
      ];
    } finally {
      await closeBrowser();
    }
  },
};

/**
 * webview.open100k: the trace explorer opening a 100,000-span rollout, from
 * its trace/get request to the first painted rows, with trace/get paged as the
 * extension pages it (a first page of rows at once, the rest after); baseline:
 * the same for a 100-span rollout (medians of 3 alternated runs). Target: ratio ≤ 3.
 */
async function benchOpen100k(): Promise<BenchResult> {
  const huge = syntheticTrace(100_000, { logprobsEvery: 7 });
  const small = syntheticTrace(100, { logprobsEvery: 7 });
  await openPaged(small); // warm-up
  const big: Array<{ ms: number; rows: number }> = [];
  const base: Array<{ ms: number; rows: number }> = [];
  for (let i = 0; i < 3; i++) {
    big.push(await openPaged(huge));
    base.push(await openPaged(small));
  }
  return result(
    'webview.open100k',
    'ms',
    median(big.map((r) => r.ms)),
    median(base.map((r) => r.ms)),
    `baseline: the same panel opening a 100-span rollout; time from trace/get to the first painted rows (${big[0]!.rows} row elements), the rest of the 100,000 spans load in pages after; want ratio ≤ 3`,
  );
}
