import type { RolloutTableRow, TableSortKey } from '../../src/core/store/tableQuery';
import { el } from '../shared/dom';
import type { Column } from './columns';

export const ROW_HEIGHT = 24;
/** Rows drawn beyond the visible ones, above and below, so a short scroll shows no gap. */
const OVERSCAN = 10;

/** What one drawing of the rows reads. */
export interface RowView {
  columns: Column[];
  total: number;
  /** The row the keyboard is on. */
  focus: number;
  rowAt(i: number): RolloutTableRow | null;
  isSelected(id: string): boolean;
  /** Asks for the rows first to last (inclusive), about to be drawn. */
  need(first: number, last: number): void;
}

/**
 * The grid of rollouts, virtualised: a header row of sort buttons and, in a
 * body as tall as every row together, a pool of row elements moved to
 * where the viewport is, so a table of any size draws only what shows.
 */
export class RowGrid {
  readonly scroller = el('div', 'rt-scroller');
  /** The element with role grid: it takes the keyboard focus. */
  readonly element = el('div', 'rt-grid');
  readonly body = el('div', 'rt-body');
  private readonly head = el('div', 'rt-row rt-head');
  private readonly pool: HTMLElement[] = [];

  /** `changed`: the viewport moved or resized, or the columns changed; the rows need drawing. */
  constructor(private readonly changed: () => void) {
    this.element.setAttribute('role', 'grid');
    this.element.setAttribute('aria-multiselectable', 'true');
    this.element.setAttribute('aria-label', 'Rollouts');
    this.element.tabIndex = 0;
    this.head.setAttribute('role', 'row');
    this.body.setAttribute('role', 'rowgroup');
    this.element.append(this.head, this.body);
    this.scroller.append(this.element);
    this.scroller.addEventListener('scroll', () => this.changed(), { passive: true });
    new ResizeObserver(() => this.changed()).observe(this.scroller);
  }

  render(view: RowView): void {
    const width = view.columns.reduce((w, c) => w + c.width, 0);
    this.element.style.width = `${width}px`;
    this.body.style.height = `${view.total * ROW_HEIGHT}px`;
    this.element.setAttribute('aria-rowcount', String(view.total + 1));
    const headHeight = this.head.offsetHeight;
    const top = Math.max(0, this.scroller.scrollTop - headHeight);
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(view.total - 1, Math.ceil((top + this.scroller.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    view.need(first, last);
    const n = Math.max(0, last - first + 1);
    while (this.pool.length < n) this.pool.push(this.newRow());
    for (let k = 0; k < this.pool.length; k++) {
      const rowEl = this.pool[k]!;
      if (k >= n) {
        rowEl.hidden = true;
        rowEl.removeAttribute('id');
        continue;
      }
      this.fillRow(rowEl, first + k, view);
    }
    this.element.setAttribute('aria-activedescendant', `rt-row-${view.focus}`);
  }

  private newRow(): HTMLElement {
    const row = el('div', 'rt-row');
    row.setAttribute('role', 'row');
    this.body.append(row);
    return row;
  }

  private fillRow(rowEl: HTMLElement, i: number, view: RowView): void {
    const r = view.rowAt(i);
    rowEl.hidden = false;
    rowEl.id = `rt-row-${i}`;
    rowEl.dataset['index'] = String(i);
    rowEl.style.transform = `translateY(${i * ROW_HEIGHT}px)`;
    rowEl.setAttribute('aria-rowindex', String(i + 2));
    const selected = r !== null && view.isSelected(r.id);
    rowEl.setAttribute('aria-selected', String(selected));
    rowEl.classList.toggle('rt-selected', selected);
    rowEl.classList.toggle('rt-focused', i === view.focus);
    rowEl.classList.toggle('rt-loading', r === null);
    rowEl.classList.toggle('rt-failed', r?.status === 'failed');
    if (rowEl.childElementCount !== view.columns.length) {
      rowEl.replaceChildren(
        ...view.columns.map((c) => {
          const cell = el('div', `rt-cell${c.numeric ? ' rt-num' : ''}`);
          cell.setAttribute('role', 'gridcell');
          cell.style.width = `${c.width}px`;
          return cell;
        }),
      );
    }
    view.columns.forEach((c, k) => {
      const cell = rowEl.children[k] as HTMLElement;
      const text = r === null ? (k === 0 ? '…' : '') : c.text(r);
      if (cell.textContent !== text) {
        cell.textContent = text;
        cell.title = text.length * 7 > c.width ? text : '';
      }
    });
  }

  /** The header row: a sort button for each sortable column, the active one marked; `onSort` picks the next sort. */
  buildHead(columns: Column[], sort: TableSortKey, order: 'asc' | 'desc', onSort: (key: TableSortKey) => void): void {
    this.head.replaceChildren(
      ...columns.map((c) => {
        const cell = el('div', `rt-cell rt-th${c.numeric ? ' rt-num' : ''}`);
        cell.setAttribute('role', 'columnheader');
        cell.style.width = `${c.width}px`;
        if (c.sort === null) {
          cell.textContent = c.label;
          return cell;
        }
        const key = c.sort;
        const active = key === sort;
        cell.setAttribute('aria-sort', active ? (order === 'asc' ? 'ascending' : 'descending') : 'none');
        const b = el('button', 'rt-sort', `${c.label}${active ? (order === 'asc' ? ' ▲' : ' ▼') : ''}`);
        b.title = `Sort by ${c.label}`;
        b.addEventListener('click', () => {
          onSort(key);
          this.head.querySelector<HTMLButtonElement>(`[data-sort="${CSS.escape(key)}"]`)?.focus();
        });
        b.dataset['sort'] = key;
        cell.append(b);
        return cell;
      }),
    );
    this.changed();
  }

  /** Rows a PageUp or PageDown moves by: a screenful less one. */
  pageRows(): number {
    return Math.max(1, Math.floor(this.scroller.clientHeight / ROW_HEIGHT) - 1);
  }

  /** Scrolls the least that shows row i whole. */
  reveal(i: number): void {
    const head = this.head.offsetHeight;
    const y = i * ROW_HEIGHT;
    const top = this.scroller.scrollTop;
    const room = this.scroller.clientHeight - head;
    if (y < top) this.scroller.scrollTop = y;
    else if (y + ROW_HEIGHT > top + room) this.scroller.scrollTop = y + ROW_HEIGHT - room;
  }

  scrollToTop(): void {
    this.scroller.scrollTop = 0;
  }
}
