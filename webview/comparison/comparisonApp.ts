import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { ComparisonResult } from '../../src/core/analysis/comparison';
import type { ComparisonSummary } from '../../src/core/analysis/comparisonList';
import type { HostClient } from '../shared/hostClient';
import { renderAggregate, renderCriteria, renderHeader } from './aggregateView';
import { el } from './dom';
import { renderSideBySide } from './sideBySide';
import { TaskList, sortTasks, type TaskSort } from './taskList';

const SORTS: Array<{ value: TaskSort; label: string }> = [
  { value: 'diff-desc', label: 'Difference B − A, largest first' },
  { value: 'diff-asc', label: 'Difference B − A, smallest first' },
  { value: 'task', label: 'Task id' },
];

function isSort(x: unknown): x is TaskSort {
  return SORTS.some((s) => s.value === x);
}

/**
 * The comparison panel: which two runs (from the host's notification, the
 * saved state, or the picker), their aggregate, and a task list whose
 * selection loads that task's two protocols on demand. What it shows is kept
 * in the panel state, so it comes back after a reload.
 */
export class ComparisonApp {
  private runs: { runA: string; runB: string } | null = null;
  private result: ComparisonResult | null = null;
  private taskId: string | null = null;
  private sort: TaskSort = 'diff-desc';
  private comparisons: ComparisonSummary[] = [];
  /** Answers to older requests are dropped: the newest selection wins. */
  private loadToken = 0;
  private detailToken = 0;
  private readonly picker: VscodeSingleSelect;
  private readonly sortPicker: VscodeSingleSelect;
  private readonly message: HTMLElement;
  private readonly overview: HTMLElement;
  private readonly body: HTMLElement;
  private readonly detail: HTMLElement;
  private readonly list: TaskList;
  private readonly taskCount: HTMLElement;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: HostClient<'comparison'>,
  ) {
    const toolbar = el('div', 'toolbar cmp-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Comparison');
    const pickLabel = el('label', 'cmp-field');
    pickLabel.append(el('span', undefined, 'Comparison'));
    this.picker = document.createElement('vscode-single-select');
    this.picker.className = 'cmp-picker';
    this.picker.setAttribute('aria-label', 'Stored comparison');
    this.picker.addEventListener('change', () => {
      const [runA, runB] = this.picker.value.split(',');
      if (runA && runB && (runA !== this.runs?.runA || runB !== this.runs?.runB)) void this.show(runA, runB);
    });
    pickLabel.append(this.picker);
    const sortLabel = el('label', 'cmp-field');
    sortLabel.append(el('span', undefined, 'Sort tasks by'));
    this.sortPicker = document.createElement('vscode-single-select');
    this.sortPicker.className = 'cmp-sort';
    this.sortPicker.setAttribute('aria-label', 'Sort tasks by');
    this.sortPicker.addEventListener('change', () => {
      const v = this.sortPicker.value;
      if (!isSort(v) || v === this.sort) return;
      this.sort = v;
      this.client.setState({ sort: v });
      this.renderTasks();
    });
    sortLabel.append(this.sortPicker);
    toolbar.append(pickLabel, sortLabel);

    this.message = el('div', 'cmp-message');
    this.message.setAttribute('role', 'status');
    this.overview = el('div', 'cmp-overview');
    this.body = el('div', 'cmp-body');
    const tasks = el('aside', 'cmp-tasks');
    const tasksHead = el('div', 'cmp-tasks-head');
    this.taskCount = el('span', 'muted');
    tasksHead.append(el('h2', undefined, 'Tasks'), this.taskCount);
    this.list = new TaskList((id) => this.selectTask(id));
    tasks.append(tasksHead, this.list.element);
    this.detail = el('div', 'cmp-detail');
    this.detail.setAttribute('aria-live', 'polite');
    this.body.append(tasks, this.detail);
    const main = el('div', 'cmp-main');
    main.append(this.message, this.overview, this.body);
    this.root.append(toolbar, main);
    this.body.hidden = true;
  }

  listen(): void {
    this.client.on('comparison/show', ({ runA, runB }) => void this.show(runA, runB));
    this.client.on('store/changed', () => void this.fillPicker());
  }

  async start(): Promise<void> {
    const state = this.client.getState();
    if (state.sort) this.sort = state.sort;
    this.sortPicker.options = SORTS.map((s) => ({ label: s.label, value: s.value, description: '', selected: s.value === this.sort, disabled: false }));
    this.sortPicker.value = this.sort;
    await this.fillPicker();
    if (this.runs) return; // a notification arrived while the list loaded
    if (state.runA && state.runB) {
      await this.show(state.runA, state.runB, state.taskId ?? null);
      return;
    }
    const newest = this.comparisons.find((c) => c.runA && c.runB);
    if (newest) await this.show(newest.runA!, newest.runB!);
    else this.say('No comparison yet: run "Rollout Lab: Compare Configurations…", or `rollout-lab compare` in a terminal.');
  }

  /** Loads and shows the comparison of two runs; `taskId` reselects a task (after a reload). */
  async show(runA: string, runB: string, taskId: string | null = null): Promise<void> {
    const token = ++this.loadToken;
    this.runs = { runA, runB };
    this.client.setState({ runA, runB, taskId: taskId ?? undefined });
    this.syncPicker();
    this.say('Loading…');
    let result: ComparisonResult;
    try {
      result = await this.client.request('comparison/get', { runA, runB });
    } catch (err) {
      if (token !== this.loadToken) return;
      this.result = null;
      this.overview.replaceChildren();
      this.body.hidden = true;
      this.say(`Cannot compare ${runA} with ${runB}: ${(err as Error).message}`, true);
      return;
    }
    if (token !== this.loadToken) return;
    this.result = result;
    this.say(result.simulated ? 'SIMULATED endpoint: these rewards come from the built-in simulator, not a model.' : '', false, result.simulated);
    this.overview.replaceChildren(renderHeader(result), renderAggregate(result), renderCriteria(result));
    this.body.hidden = false;
    this.taskId = taskId && result.tasks.some((t) => t.taskId === taskId) ? taskId : null;
    this.renderTasks();
  }

  private renderTasks(): void {
    if (!this.result) return;
    const tasks = sortTasks(this.result.tasks, this.sort);
    this.taskCount.textContent = `${tasks.length} paired${this.result.unpaired.length ? `, ${this.result.unpaired.length} not paired` : ''}`;
    this.list.setTasks(tasks, this.taskId);
    const selected = this.list.selectedTaskId();
    if (selected === null) {
      this.detail.replaceChildren(el('p', 'muted', 'No task has a scored rollout on both sides.'));
      return;
    }
    if (selected !== this.taskId || !this.detail.dataset.taskId || this.detail.dataset.taskId !== selected) this.selectTask(selected);
  }

  private selectTask(taskId: string): void {
    if (!this.runs || !this.result) return;
    this.taskId = taskId;
    this.client.setState({ taskId });
    const token = ++this.detailToken;
    const { runA, runB } = this.runs;
    const criteria = this.result.criteria;
    this.detail.dataset.taskId = taskId;
    this.detail.setAttribute('aria-busy', 'true');
    void this.client.request('comparison/task', { runA, runB, taskId }).then(
      (d) => {
        if (token !== this.detailToken) return;
        this.detail.removeAttribute('aria-busy');
        this.detail.replaceChildren(
          renderSideBySide(
            d,
            criteria,
            (rolloutId) => this.client.command('trace/open', { rolloutId }),
            (left, right) => this.client.command('trace/diff', { left, right }),
          ),
        );
      },
      (err: Error) => {
        if (token !== this.detailToken) return;
        this.detail.removeAttribute('aria-busy');
        this.detail.replaceChildren(el('p', 'error', `Cannot load task ${taskId}: ${err.message}`));
      },
    );
  }

  private async fillPicker(): Promise<void> {
    try {
      this.comparisons = (await this.client.request('comparison/list', {})).comparisons;
    } catch {
      this.comparisons = [];
    }
    this.syncPicker();
  }

  private syncPicker(): void {
    const current = this.runs ? `${this.runs.runA},${this.runs.runB}` : '';
    const options = this.comparisons
      .filter((c) => c.runA && c.runB)
      .map((c) => ({
        label: `${c.labelA} vs ${c.labelB}`,
        value: `${c.runA},${c.runB}`,
        description: `${new Date(c.startTime).toLocaleString()} · ${c.status}${c.simulated ? ' · SIMULATED' : ''}`,
        selected: false,
        disabled: false,
      }));
    // Two runs compared after the fact are not a stored comparison: list them too while shown.
    if (current && !options.some((o) => o.value === current)) {
      options.unshift({ label: `${this.runs!.runA} vs ${this.runs!.runB}`, value: current, description: 'two runs', selected: false, disabled: false });
    }
    for (const o of options) o.selected = o.value === current;
    this.picker.options = options;
    if (current) this.picker.value = current;
  }

  private say(text: string, error = false, banner = false): void {
    this.message.textContent = text;
    this.message.className = `cmp-message${error ? ' error' : ''}${banner ? ' banner' : ''}${text ? '' : ' empty'}`;
  }
}
