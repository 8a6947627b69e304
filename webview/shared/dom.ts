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
