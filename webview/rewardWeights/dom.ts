import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';

/*
 * Element helpers of the weight editor. Text goes in only through
 * textContent: criterion names, descriptions, task ids and rule names are
 * user text and must show literally.
 */

import { num as fixed } from '../../src/core/analysis/numberFormat';
import { el } from '../shared/dom';

export { el };

export function button(text: string, className: string, onClick: () => void, opts: { secondary?: boolean; icon?: string; label?: string } = {}): VscodeButton {
  const b = document.createElement('vscode-button');
  b.className = className;
  if (text) b.textContent = text;
  if (opts.secondary) b.secondary = true;
  if (opts.icon) b.icon = opts.icon;
  if (opts.label) b.setAttribute('aria-label', opts.label);
  b.addEventListener('click', () => {
    if (!b.disabled) onClick();
  });
  return b;
}

/** A <section> with a heading, labelled by it. */
export function section(id: string, title: string): { root: HTMLElement; head: HTMLElement } {
  const root = el('section', `rw-section rw-${id}`);
  const head = el('h2', 'rw-heading', title);
  head.id = `rw-${id}-title`;
  root.setAttribute('aria-labelledby', head.id);
  root.append(head);
  return { root, head };
}

/** A weight or reward to fixed digits, '–' when there is none. */
export function num(v: number | null | undefined, digits = 3): string {
  return fixed(v, digits, '–');
}

/** Makes a row act as a button: focusable, Enter/Space activate, Up/Down move between its siblings. */
export function activatable(row: HTMLElement, onActivate: () => void): void {
  row.tabIndex = 0;
  // Table rows and list items keep their own role, so the table or list still reads as one.
  if (!(row instanceof HTMLTableRowElement) && !(row instanceof HTMLLIElement)) row.setAttribute('role', 'button');
  row.addEventListener('click', onActivate);
  row.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      onActivate();
    } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      const sib = ev.key === 'ArrowDown' ? row.nextElementSibling : row.previousElementSibling;
      if (sib instanceof HTMLElement && sib.tabIndex >= 0) {
        ev.preventDefault();
        sib.focus();
      }
    }
  });
}
