import type { SpanRecord } from '../trace/span';
import type { RolloutRecord } from './types';

/** What a reader of a rollout's spans needs of the store. */
export interface SpanSource {
  getSpans(rolloutId: string): SpanRecord[];
}

/** Spans in start-time order (the longer first among equal starts, then the store's order), so any first page holds parents before their children. */
function byStartTime(spans: SpanRecord[]): SpanRecord[] {
  return spans.map((s, i) => ({ s, i })).sort((a, b) => a.s.startTime - b.s.startTime || b.s.endTime - a.s.endTime || a.i - b.i).map((x) => x.s);
}

/**
 * The Trace Explorer's trace/get over a store: every span in the store's
 * order, or, when a page is asked for, pages in start-time order, so a large
 * rollout is sent in pieces, the first one small, and its first rows show at
 * once. The first page reads the store; the following ones reuse that read,
 * and the last lets it go.
 */
export class SpanPager {
  private pages: { rolloutId: string; spans: SpanRecord[] } | null = null;

  get(store: SpanSource, rollout: RolloutRecord, offset?: number, limit?: number): { rollout: RolloutRecord; spans: SpanRecord[]; total?: number } {
    if (offset === undefined && limit === undefined) return { rollout, spans: store.getSpans(rollout.id) };
    const from = offset ?? 0;
    if (from === 0 || this.pages?.rolloutId !== rollout.id) this.pages = { rolloutId: rollout.id, spans: byStartTime(store.getSpans(rollout.id)) };
    const { spans } = this.pages;
    const end = limit === undefined ? spans.length : Math.min(from + limit, spans.length);
    if (end === spans.length) this.pages = null;
    return { rollout, spans: spans.slice(from, end), total: spans.length };
  }
}
