import { el } from '../shared/dom';
import type { HostClient } from '../shared/hostClient';
import type { RowSelection } from './rowSelection';

type BulkCommand = 'table/export' | 'table/rescore' | 'table/addToDataset';

/**
 * The toolbar that acts on the selected rollouts: how many rows there are and
 * how many are selected, open, compare two, export, re-score, add to a
 * dataset, and the line where the table says what went wrong or what to do.
 */
export class SelectionActions {
  readonly element = el('div', 'toolbar rt-actions');
  private readonly status = el('span', 'rt-status');
  private readonly message = el('span', 'rt-message');
  private readonly buttons: Record<'open' | 'compare' | 'export' | 'rescore' | 'dataset', HTMLButtonElement>;

  constructor(
    private readonly selection: RowSelection,
    private readonly client: HostClient<'rolloutsTable'>,
  ) {
    this.element.setAttribute('role', 'toolbar');
    this.element.setAttribute('aria-label', 'Selected rollouts');
    this.status.setAttribute('role', 'status');
    const button = (label: string, title: string, fn: () => void): HTMLButtonElement => {
      const b = el('button', 'rt-button', label);
      b.title = title;
      b.addEventListener('click', fn);
      return b;
    };
    this.buttons = {
      open: button('Open', 'Open the focused rollout in the Trace Explorer (Enter)', () => this.selection.openFocused()),
      compare: button('Compare', 'Compare two selected rollouts side by side', () => this.compare()),
      export: button('Export…', 'Write the selected rollouts’ training records as JSONL', () => this.act('table/export')),
      rescore: button('Re-score…', 'Re-score the selected rollouts under the weights in lab.json', () => this.act('table/rescore')),
      dataset: button('Add to dataset…', 'Append the selected rollouts’ tasks to a dataset JSONL', () => this.act('table/addToDataset')),
    };
    this.message.setAttribute('aria-live', 'polite');
    this.element.append(this.status, ...Object.values(this.buttons), this.message);
  }

  /** The counts, and which actions the selection allows. */
  update(total: number, focusLoaded: boolean): void {
    const selected = this.selection.size;
    this.status.textContent = `${total.toLocaleString('en-US')} rollout${total === 1 ? '' : 's'}${selected ? ` · ${selected.toLocaleString('en-US')} selected` : ''}`;
    this.buttons.open.disabled = !focusLoaded;
    this.buttons.compare.disabled = selected < 2;
    for (const b of [this.buttons.export, this.buttons.rescore, this.buttons.dataset]) b.disabled = selected === 0;
  }

  say(text: string, error = false): void {
    this.message.textContent = text;
    this.message.classList.toggle('error', error);
  }

  /** The message stays but no longer reads as an error (the store answered again). */
  clearError(): void {
    this.message.classList.remove('error');
  }

  private compare(): void {
    const ids = this.selection.ordered();
    if (ids.length !== 2) {
      this.say(
        ids.length < 2
          ? 'Select two rollouts to compare (Ctrl+click or Shift+arrows).'
          : `Compare shows two rollouts side by side; ${ids.length} are selected — keep two (Ctrl+click to deselect).`,
        true,
      );
      return;
    }
    this.say('');
    this.client.command('trace/diff', { left: ids[0]!, right: ids[1]! });
  }

  private act(command: BulkCommand): void {
    const rolloutIds = this.selection.ordered();
    if (!rolloutIds.length) return;
    this.say('');
    this.client.command(command, { rolloutIds });
  }
}
