import { el } from '../shared/dom';

export { el };

/**
 * Arrow keys move between the focusable items of a group (links of a table,
 * rows of a chart), Home and End jump to its ends; Tab still leaves the group.
 */
export function arrowNavigation(group: HTMLElement, selector: string): void {
  group.addEventListener('keydown', (e) => {
    const keys = ['ArrowDown', 'ArrowUp', 'Home', 'End'];
    if (!keys.includes(e.key)) return;
    const items = Array.from(group.querySelectorAll<HTMLElement>(selector));
    const at = items.indexOf(document.activeElement as HTMLElement);
    if (at < 0 || items.length === 0) return;
    const next = e.key === 'Home' ? 0 : e.key === 'End' ? items.length - 1 : Math.max(0, Math.min(items.length - 1, at + (e.key === 'ArrowDown' ? 1 : -1)));
    e.preventDefault();
    items[next]!.focus();
  });
}
