import type { AttributeValue, SpanRecord } from '../../src/core/trace/span';

function valueText(v: AttributeValue): string {
  if (v === null) return '';
  return Array.isArray(v) ? v.join(' ') : String(v);
}

/**
 * Case-insensitive search over span names and content (every attribute value,
 * the status message). The lower-cased text of each span is built on the
 * first search and kept, so later keystrokes only scan it.
 */
export class SpanSearch {
  private haystack: string[] | null = null;

  constructor(private readonly spans: readonly SpanRecord[]) {}

  /** 1 where the span holds every word of the query; null for an empty query. */
  match(query: string): { match: Uint8Array; count: number } | null {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return null;
    const hay = this.text();
    const match = new Uint8Array(hay.length);
    let count = 0;
    for (let i = 0; i < hay.length; i++) {
      const h = hay[i]!;
      let ok = true;
      for (const w of words) {
        if (!h.includes(w)) {
          ok = false;
          break;
        }
      }
      if (ok) {
        match[i] = 1;
        count++;
      }
    }
    return { match, count };
  }

  private text(): string[] {
    if (!this.haystack) {
      this.haystack = this.spans.map((s) => {
        const parts = [s.name, s.kind, s.status === 'error' ? 'error' : '', s.statusMessage ?? ''];
        for (const v of Object.values(s.attributes)) parts.push(valueText(v));
        return parts.join('\n').toLowerCase();
      });
    }
    return this.haystack;
  }
}
