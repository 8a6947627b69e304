import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SpanPager } from '../../../src/core/store/spanPages';
import type { RolloutRecord } from '../../../src/core/store/types';
import type { SpanRecord } from '../../../src/core/trace/span';

const span = (spanId: string, parentSpanId: string | null, startTime: number, endTime: number): SpanRecord => ({
  traceId: 'a'.repeat(32),
  spanId,
  parentSpanId,
  name: spanId,
  kind: 'node',
  startTime,
  endTime,
  status: 'ok',
  attributes: {},
});

/** A store whose spans come back in the order they were written (children first here) and that counts its reads. */
function source(spans: SpanRecord[]) {
  const s = { reads: 0, getSpans: (_id: string) => (s.reads++, [...spans]) };
  return s;
}

const rollout = (id: string) => ({ id }) as RolloutRecord;

describe('SpanPager (the Trace Explorer\'s trace/get)', () => {
  // Written in the order spans end: the children before their parent, two siblings starting together.
  const spans = [span('c2', 'p', 20, 25), span('c1', 'p', 10, 30), span('c0', 'p', 10, 15), span('p', null, 10, 40)];

  it('gives every span in the store\'s order when no page is asked for', () => {
    const store = source(spans);
    assert.deepEqual(new SpanPager().get(store, rollout('r')).spans.map((s) => s.spanId), ['c2', 'c1', 'c0', 'p']);
  });

  it('pages in start order, the longer first among equal starts, reading the store once for all the pages', () => {
    const store = source(spans);
    const pager = new SpanPager();
    const pages = [pager.get(store, rollout('r'), 0, 1), pager.get(store, rollout('r'), 1, 2), pager.get(store, rollout('r'), 3, 2)];
    assert.deepEqual(pages.map((p) => p.spans.map((s) => s.spanId)), [['p'], ['c1', 'c0'], ['c2']]);
    assert.deepEqual(pages.map((p) => p.total), [4, 4, 4]);
    assert.equal(store.reads, 1);
    // The last page let the read go: a later page reads the store again, as does another rollout's.
    pager.get(store, rollout('r'), 2, 1);
    pager.get(store, rollout('other'), 1, 1);
    assert.equal(store.reads, 3);
  });
});
