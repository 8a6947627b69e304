/** An element with a class and text: text is always set as text, never parsed as HTML. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A table head with one column header (scope col) per name; `classOf` gives a column's class (numeric columns align right). */
export function tableHead(columns: readonly string[], classOf?: (index: number) => string | undefined): HTMLTableSectionElement {
  const row = el('tr');
  for (const [i, c] of columns.entries()) {
    const th = el('th', classOf?.(i), c);
    th.scope = 'col';
    row.append(th);
  }
  const thead = el('thead');
  thead.append(row);
  return thead;
}

/**
 * Where a list's cursor goes for a navigation key (arrows by one, Page keys by ten, Home/End to the ends), clamped to
 * the list of `count` items; undefined for any other key.
 */
export function listKeyTarget(key: string, current: number, count: number): number | undefined {
  const last = count - 1;
  switch (key) {
    case 'ArrowDown': return Math.min(last, current + 1);
    case 'ArrowUp': return Math.max(0, current - 1);
    case 'Home': return 0;
    case 'End': return last;
    case 'PageDown': return Math.min(last, current + 10);
    case 'PageUp': return Math.max(0, current - 10);
    default: return undefined;
  }
}
