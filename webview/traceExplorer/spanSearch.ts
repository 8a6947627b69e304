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

/** Most <mark>s put in one details pane: enough to see, bounded for huge values. */
const MAX_MARKS = 500;

/**
 * Marks every word of the query (case-insensitive) in the text of `root`:
 * earlier marks are removed first, then each text node holding a word is
 * split into text nodes and <mark> elements (never markup from the text).
 * A closed <details> holding a mark opens. Returns how many were marked.
 */
export function highlightMatches(root: HTMLElement, query: string): number {
  for (const m of Array.from(root.querySelectorAll('mark.te-hit'))) {
    const parent = m.parentNode!;
    m.replaceWith(document.createTextNode(m.textContent ?? ''));
    parent.normalize();
  }
  const words = [...new Set(query.toLowerCase().split(/\s+/).filter(Boolean))].sort((a, b) => b.length - a.length);
  if (!words.length) return 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) nodes.push(n as Text);
  let marks = 0;
  for (const node of nodes) {
    if (marks >= MAX_MARKS) break;
    const text = node.data;
    const lower = text.toLowerCase();
    const parts: Node[] = [];
    let at = 0;
    while (at < text.length && marks < MAX_MARKS) {
      let best = -1;
      let len = 0;
      for (const w of words) {
        const i = lower.indexOf(w, at);
        if (i >= 0 && (best < 0 || i < best)) {
          best = i;
          len = w.length;
        }
      }
      if (best < 0) break;
      if (best > at) parts.push(document.createTextNode(text.slice(at, best)));
      const mark = document.createElement('mark');
      mark.className = 'te-hit';
      mark.textContent = text.slice(best, best + len);
      parts.push(mark);
      marks++;
      at = best + len;
    }
    if (!parts.length) continue;
    if (at < text.length) parts.push(document.createTextNode(text.slice(at)));
    node.replaceWith(...parts);
  }
  for (const m of Array.from(root.querySelectorAll('mark.te-hit'))) {
    const closed = m.closest('details:not([open])') as HTMLDetailsElement | null;
    if (closed) closed.open = true;
  }
  return marks;
}
