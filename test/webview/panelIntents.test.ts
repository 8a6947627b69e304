import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildWebview } from './fixtures/buildWebview';
import type { TraceFixture } from './fixtures/realTraces';
import { syntheticTrace } from './fixtures/syntheticTrace';
import { closeBrowser, openPanel, waitReady, type WebviewHarness } from './harness';

let a: TraceFixture;
let b: TraceFixture;

before(async () => {
  await buildWebview('traceExplorer');
  a = syntheticTrace(40, { seed: 1 });
  b = syntheticTrace(60, { seed: 2 });
  assert.notEqual(a.rollout.id, b.rollout.id);
});
after(async () => {
  await closeBrowser();
});

/** Posts an intent as PanelHost does: a notification with the id of the request. */
async function intent(h: WebviewHarness, rolloutId: string, id: string): Promise<void> {
  await h.page.evaluate((m) => window.postMessage(m, '*'), { kind: 'notification', type: 'trace/show', params: { rolloutId }, intent: id } as never);
}

const shown = (h: WebviewHarness): Promise<string | undefined> => h.page.evaluate(() => document.body.dataset.rolloutId);

test('a reloaded panel restores its saved rollout, then acts on a newer intent and ignores a replay of one it acted on', async () => {
  const traces = new Map([a, b].map((t) => [t.rollout.id, t]));
  const handlers = { 'trace/get': (p: { rolloutId: string }) => traces.get(p.rolloutId)! };
  // The saved state says: showing A, asked for by intent i1.
  const saved = { rolloutId: a.rollout.id, intents: { 'trace/show': 'i1' } };

  // The host replays i1 (the intent the panel acted on before it was discarded): the panel stays on A.
  let h = await openPanel('traceExplorer', handlers, { state: saved });
  try {
    await waitReady(h);
    await intent(h, b.rollout.id, 'i1');
    await h.page.waitForFunction((id) => document.body.dataset.rolloutId === id && document.body.dataset.paintedAt, a.rollout.id);
    await h.page.waitForTimeout(300);
    assert.equal(await shown(h), a.rollout.id, 'a replayed intent does not undo what the panel shows');
  } finally {
    await h.close();
  }

  // The host was asked for B (intent i2) while the panel was hidden: it replays i2 on the panel's load, and the
  // panel shows B without loading (or flashing) A first.
  h = await openPanel('traceExplorer', handlers, { state: saved, holdReplay: true });
  try {
    await waitReady(h);
    await intent(h, b.rollout.id, 'i2');
    await h.replayed();
    await h.page.waitForFunction((id) => document.body.dataset.rolloutId === id && document.body.dataset.paintedAt, b.rollout.id);
    await h.page.waitForTimeout(300);
    assert.equal(await shown(h), b.rollout.id, 'the last request wins');
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: { rolloutId: string; intents: Record<string, string> } }).__lastState))!;
    assert.equal(state.rolloutId, b.rollout.id);
    assert.deepEqual(state.intents, { 'trace/show': 'i2' }, 'the panel keeps the id of the intent it acted on');
    const asked = h.sent.filter((m) => m.kind === 'request' && m.method === 'trace/get').map((m) => (m.params as { rolloutId: string }).rolloutId);
    assert.deepEqual([...new Set(asked)], [b.rollout.id], 'the saved rollout A is never loaded when a newer request is waiting');
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});

test('a reloaded panel waits for the host before restoring its saved rollout, and restores it (with its view) when nothing newer was asked', async () => {
  const handlers = { 'trace/get': () => a };
  const last = a.spans[a.spans.length - 1]!;
  const saved = { rolloutId: a.rollout.id, selected: last.spanId, intents: { 'trace/show': 'i1' } };
  const h = await openPanel('traceExplorer', handlers, { state: saved, holdReplay: true });
  try {
    await waitReady(h);
    await h.page.waitForTimeout(300);
    assert.equal(h.sent.filter((m) => m.kind === 'request').length, 0, 'nothing loads before the host has replayed its requests');
    await intent(h, a.rollout.id, 'i1');
    await h.replayed();
    await h.page.waitForFunction((id) => document.body.dataset.rolloutId === id && document.body.dataset.paintedAt, a.rollout.id);
    // The view is saved shortly after it is drawn: the selection it restored is the saved one.
    await h.page.waitForFunction(() => (window as unknown as { __lastState: { selected?: string } }).__lastState.selected !== undefined, undefined, { timeout: 10_000 });
    const selected = await h.page.evaluate(() => (window as unknown as { __lastState: { selected?: string } }).__lastState.selected);
    assert.equal(selected, last.spanId, 'the saved selection comes back');
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});
