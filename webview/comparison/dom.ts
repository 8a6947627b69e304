/**
 * Element construction for the comparison panel. Text goes in only through
 * textContent: labels, task ids, protocols and rationales are user or model
 * text and must show literally, never parse as markup.
 */
import { el, tableHead } from '../shared/dom';

export { el };

/** A table with a header row; cells are text (or nodes), each row gets `rowClass` when given. */
export function table(header: string[], rows: Array<Array<string | Node>>, className: string): HTMLTableElement {
  const t = el('table', className);
  t.append(tableHead(header), el('tbody'));
  for (const r of rows) {
    const tr = el('tr');
    r.forEach((c, i) => {
      const cell = i === 0 ? el('th') : el('td');
      if (i === 0) (cell as HTMLTableCellElement).scope = 'row';
      if (typeof c === 'string') cell.textContent = c;
      else cell.append(c);
      tr.append(cell);
    });
    t.tBodies[0]!.append(tr);
  }
  return t;
}
