import type { TextPart } from '../../src/core/analysis/traceDiff';
import { el } from '../shared/dom';

/** Number formatting of the trace diff. */
export { num, signed } from '../shared/format';

export function count(x: number): string {
  return x.toLocaleString('en-US');
}

export function signedCount(x: number): string {
  return x > 0 ? `+${count(x)}` : x < 0 ? `−${count(-x)}` : '±0';
}

export function ms(x: number | null): string {
  if (x === null) return 'n/a';
  return x < 1000 ? `${Math.round(x)} ms` : `${(x / 1000).toFixed(x < 10_000 ? 2 : 1)} s`;
}

/** Outputs longer than this show their start, with a button for the rest. */
export const CLIP_CHARS = 1500;

/**
 * One side of a word diff as DOM nodes: the text both share as text, the
 * words only this side has in <del> (left) or <ins> (right). Never HTML.
 */
export function wordMarks(parts: readonly TextPart[], side: 'left' | 'right'): DocumentFragment {
  const frag = document.createDocumentFragment();
  const skip = side === 'left' ? 'added' : 'removed';
  for (const p of parts) {
    if (p.op === skip) continue;
    if (p.op === 'same') frag.append(document.createTextNode(p.text));
    else {
      const mark = el(p.op === 'removed' ? 'del' : 'ins', `td-word td-word-${p.op}`, p.text);
      frag.append(mark);
    }
  }
  return frag;
}
