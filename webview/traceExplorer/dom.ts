/**
 * Element construction for the trace explorer. Text goes in only through
 * textContent: every string from a span is model or user text and must show
 * literally, never parse as markup.
 */
import { el } from '../shared/dom';

export { el };

export function codicon(name: string, className = ''): HTMLSpanElement {
  const e = el('span', `codicon codicon-${name}${className ? ' ' + className : ''}`);
  e.setAttribute('aria-hidden', 'true');
  return e;
}

export function clear(e: Element): void {
  e.replaceChildren();
}

/** A labelled fact: a <dt>/<dd> pair appended to a <dl>. */
export function fact(list: HTMLElement, label: string, value: string | Node, className?: string): HTMLElement {
  list.append(el('dt', undefined, label));
  const dd = el('dd', className);
  if (typeof value === 'string') dd.textContent = value;
  else dd.append(value);
  list.append(dd);
  return dd;
}

const LONG = 20_000;
/**
 * A <pre> of text; very long values show their head and a button for the
 * rest, so one huge attribute cannot freeze the details pane.
 */
export function textBlock(text: string, className = 'te-pre'): HTMLElement {
  const pre = el('pre', className);
  if (text.length <= LONG) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, LONG);
  const wrap = el('div', 'te-long');
  const more = el('button', 'te-link', `Show all ${text.length.toLocaleString('en-US')} characters`);
  more.type = 'button';
  more.addEventListener('click', () => {
    pre.textContent = text;
    more.remove();
  });
  wrap.append(pre, more);
  return wrap;
}
