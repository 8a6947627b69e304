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

  // The host was asked for B (intent i2) while the panel was hidden: the panel restores A, then ends on B.
  h = await openPanel('traceExplorer', handlers, { state: saved });
  try {
    await waitReady(h);
    await intent(h, b.rollout.id, 'i2');
    await h.page.waitForFunction((id) => document.body.dataset.rolloutId === id && document.body.dataset.paintedAt, b.rollout.id);
    await h.page.waitForTimeout(300);
    assert.equal(await shown(h), b.rollout.id, 'the last request wins');
    const state = (await h.page.evaluate(() => (window as unknown as { __lastState: { rolloutId: string; intents: Record<string, string> } }).__lastState))!;
    assert.equal(state.rolloutId, b.rollout.id);
    assert.deepEqual(state.intents, { 'trace/show': 'i2' }, 'the panel keeps the id of the intent it acted on');
    assert.deepEqual(h.errors, []);
  } finally {
    await h.close();
  }
});
