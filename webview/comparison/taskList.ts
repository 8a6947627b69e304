import type { TaskComparison } from '../../src/core/analysis/comparison';
import { el } from './dom';
import { listKeyTarget } from '../shared/dom';
import { num, signed } from './format';

export type TaskSort = 'diff-desc' | 'diff-asc' | 'task';

export function sortTasks(tasks: readonly TaskComparison[], sort: TaskSort): TaskComparison[] {
  const out = [...tasks];
  if (sort === 'task') out.sort((x, y) => x.taskId.localeCompare(y.taskId, undefined, { numeric: true }));
  else out.sort((x, y) => (sort === 'diff-desc' ? y.difference - x.difference : x.difference - y.difference) || x.taskId.localeCompare(y.taskId));
  return out;
}

/**
 * The paired tasks as a listbox: one tab stop (the selected row), arrow
 * keys, Home and End move the selection, a click selects.
 */
export class TaskList {
  readonly element: HTMLUListElement;
  private tasks: TaskComparison[] = [];
  private selected = -1;

  constructor(private readonly onSelect: (taskId: string) => void) {
    this.element = el('ul', 'cmp-task-list');
    this.element.setAttribute('role', 'listbox');
    this.element.setAttribute('aria-label', 'Tasks (difference B − A)');
    this.element.addEventListener('keydown', (e) => this.onKey(e));
    this.element.addEventListener('click', (e) => {
      const li = (e.target as HTMLElement).closest('li');
      if (li?.dataset.index) this.select(Number(li.dataset.index), true);
    });
  }

  setTasks(tasks: TaskComparison[], selectedId: string | null): void {
    this.tasks = tasks;
    const max = Math.max(0, ...tasks.map((t) => Math.abs(t.difference)));
    this.element.replaceChildren(
      ...tasks.map((t, i) => {
        const li = el('li', 'cmp-task');
        li.id = `cmp-task-${i}`;
        li.dataset.index = String(i);
        li.dataset.taskId = t.taskId;
        li.setAttribute('role', 'option');
        li.tabIndex = -1;
        const bar = el('span', `cmp-bar ${t.difference > 0 ? 'cmp-up' : t.difference < 0 ? 'cmp-down' : 'cmp-same'}`);
        // Bar length from the data: set from script, which the CSP allows.
        bar.style.width = `${max > 0 ? Math.round((40 * Math.abs(t.difference)) / max) : 0}px`;
        li.append(
          el('span', 'cmp-task-id', t.taskId),
          el('span', 'cmp-task-rewards muted', `${num(t.rewardA)} → ${num(t.rewardB)}`),
          bar,
          el('span', 'cmp-task-diff', signed(t.difference)),
        );
        li.title = `${t.taskId}: A ${num(t.rewardA)}, B ${num(t.rewardB)}, B − A ${signed(t.difference)}${t.expectedDecision ? ` · expected ${t.expectedDecision}` : ''}`;
        return li;
      }),
    );
    const index = selectedId === null ? -1 : tasks.findIndex((t) => t.taskId === selectedId);
    this.selected = -1;
    this.mark(index >= 0 ? index : tasks.length ? 0 : -1);
  }

  selectedTaskId(): string | null {
    return this.tasks[this.selected]?.taskId ?? null;
  }

  /** Selects the row (and tells the app when `notify`), keeping it in view and focusable. */
  select(index: number, notify: boolean, focus = true): void {
    if (index < 0 || index >= this.tasks.length) return;
    this.mark(index);
    const li = this.element.children[index] as HTMLElement;
    if (focus) li.focus();
    li.scrollIntoView({ block: 'nearest' });
    if (notify) this.onSelect(this.tasks[index]!.taskId);
  }

  private mark(index: number): void {
    const rows = this.element.children;
    if (this.selected >= 0 && rows[this.selected]) {
      const old = rows[this.selected] as HTMLElement;
      old.classList.remove('selected');
      old.setAttribute('aria-selected', 'false');
      old.tabIndex = -1;
    }
    this.selected = index;
    for (let i = 0; i < rows.length; i++) if (i !== index) rows[i]!.setAttribute('aria-selected', 'false');
    const row = rows[index] as HTMLElement | undefined;
    if (row) {
      row.classList.add('selected');
      row.setAttribute('aria-selected', 'true');
      row.tabIndex = 0;
      this.element.setAttribute('aria-activedescendant', row.id);
    }
  }

  private onKey(e: KeyboardEvent): void {
    const to = listKeyTarget(e.key, this.selected, this.tasks.length);
    if (to !== undefined) {
      e.preventDefault();
      if (to !== this.selected) this.select(to, true);
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      this.select(this.selected, true);
    }
  }
}
