import type { RolloutTableQuery, TableSortKey } from '../../src/core/store/tableQuery';
import type { HostClient } from '../shared/hostClient';
import { columnsFor, firstOrder, type Column } from './columns';
import { FilterBar, NO_FACETS, type Filters } from './filterBar';
import { RowGrid } from './rowGrid';
import { RowPages } from './rowPages';
import { RowSelection } from './rowSelection';
import { SelectionActions } from './selectionActions';

/**
 * The rollouts table: every rollout of the workspace, a page at a time from
 * the host (the query runs in the store), drawn as rows only where the
 * viewport shows them. Filters and sort change the query; rows are selected
 * with the mouse or the keyboard and the toolbar acts on the selection.
 * This class ties those parts together and keeps the query in the panel state.
 */
export class TableApp {
  private columns: Column[] = columnsFor(NO_FACETS);
  private sort: TableSortKey = 'startTime';
  private order: 'asc' | 'desc' = 'desc';
  private rendering = false;
  private emptyShown = false;

  private readonly filters: FilterBar;
  private readonly pages: RowPages;
  private readonly grid: RowGrid;
  private readonly selection: RowSelection;
  private readonly actions: SelectionActions;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: HostClient<'rolloutsTable'>,
  ) {
    const state = client.getState();
    if (state.sort) this.sort = state.sort as TableSortKey;
    if (state.order) this.order = state.order;
    this.filters = new FilterBar((state.filters as Filters | undefined) ?? {}, () => this.requery());
    this.pages = new RowPages((offset, limit) => this.client.request('table/query', { ...this.query(), offset, limit }), {
      loaded: () => {
        this.actions.clearError();
        this.schedule();
      },
      failed: (err) => this.actions.say(`The query failed: ${err.message}`, true),
    });
    this.grid = new RowGrid(() => this.schedule());
    this.selection = new RowSelection(this.pages, this.grid, {
      changed: () => this.schedule(),
      open: (rolloutId) => this.client.command('trace/open', { rolloutId }),
      allIds: async () => (await this.client.request('table/ids', this.query())).ids,
    });
    this.actions = new SelectionActions(this.selection, client);
    this.root.append(...this.filters.elements, this.actions.element, this.grid.scroller);
  }

  listen(): void {
    this.client.on('store/changed', () => this.requery(true));
  }

  async start(): Promise<void> {
    let facets = NO_FACETS;
    try {
      facets = await this.client.request('table/facets', {});
    } catch (err) {
      this.actions.say(`Could not read the store: ${(err as Error).message}`, true);
    }
    this.columns = columnsFor(facets);
    if (!this.columns.some((c) => c.sort === this.sort)) this.sort = 'startTime';
    this.filters.build(facets);
    this.buildHead();
    this.requery();
  }

  private query(): RolloutTableQuery {
    return { ...this.filters.value, sort: this.sort, order: this.order };
  }

  /** A new question: pages and selection start over (a refresh keeps the selection and the scroll). */
  private requery(keepSelection = false): void {
    this.pages.reset();
    if (!keepSelection) {
      this.selection.reset();
      this.grid.scrollToTop();
    }
    this.client.setState({ filters: this.filters.value, sort: this.sort, order: this.order });
    void this.pages.load(0);
  }

  private buildHead(): void {
    this.grid.buildHead(this.columns, this.sort, this.order, (key) => {
      if (this.sort === key) this.order = this.order === 'asc' ? 'desc' : 'asc';
      else {
        this.sort = key;
        this.order = firstOrder(key);
      }
      this.buildHead();
      this.requery();
    });
  }

  private schedule(): void {
    if (this.rendering) return;
    this.rendering = true;
    requestAnimationFrame(() => {
      this.rendering = false;
      this.render();
    });
  }

  private render(): void {
    const total = this.pages.total;
    this.grid.render({
      columns: this.columns,
      total,
      focus: this.selection.focus,
      rowAt: (i) => this.pages.rowAt(i),
      isSelected: (id) => this.selection.has(id),
      need: (first, last) => this.pages.loadRows(first, last),
    });
    this.actions.update(total, this.pages.rowAt(this.selection.focus) !== null);
    if (total === 0 && this.pages.settled()) {
      this.actions.say(Object.keys(this.filters.value).length ? 'No rollout matches these filters.' : 'No rollouts in this workspace yet — run some first.');
      this.emptyShown = true;
    } else if (this.emptyShown) {
      this.actions.say('');
      this.emptyShown = false;
    }
  }
}
