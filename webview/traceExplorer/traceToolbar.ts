import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import { el } from './dom';

/** What the toolbar's controls ask of the view. */
export interface ToolbarActions {
  /** The search text changed (typed, after a short pause, or confirmed). */
  search(query: string): void;
  /** Keyboard focus goes to the span tree. */
  focusTree(): void;
  setAllCollapsed(collapse: boolean): void;
}

/**
 * The bar above the span tree: the search field (also reached with / or
 * Ctrl+F anywhere in the panel), its clear button, what the search or a node
 * jump found, and Expand all / Collapse all.
 */
export class TraceToolbar {
  readonly element = el('div', 'toolbar te-toolbar');
  private readonly search: VscodeTextfield;
  private readonly info = el('span', 'te-search-info te-muted');
  private readonly clearButton = el('button', 'te-search-clear codicon codicon-close');
  private searchTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly actions: ToolbarActions) {
    this.search = document.createElement('vscode-textfield') as VscodeTextfield;
    this.search.className = 'te-search';
    this.search.placeholder = 'Search span names and content  ( / )';
    this.search.setAttribute('aria-label', 'Search spans');
    this.search.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.actions.search(this.search.value), 120);
    });
    this.search.addEventListener('keydown', (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        if (this.search.value) {
          this.search.value = '';
          this.actions.search('');
        } else {
          this.actions.focusTree();
        }
      } else if (e.key === 'Enter' || e.key === 'ArrowDown') {
        e.preventDefault();
        this.actions.search(this.search.value);
        this.actions.focusTree();
      }
    });
    this.clearButton.type = 'button';
    this.clearButton.setAttribute('aria-label', 'Clear search');
    this.clearButton.title = 'Clear search (Escape)';
    this.clearButton.hidden = true;
    this.clearButton.addEventListener('click', () => {
      this.search.value = '';
      this.actions.search('');
      this.search.focus();
    });
    const expandAll = button('Expand all', () => this.actions.setAllCollapsed(false));
    const collapseAll = button('Collapse all', () => this.actions.setAllCollapsed(true));
    this.element.append(this.search, this.clearButton, this.info, el('span', 'te-spacer-flex'), expandAll, collapseAll);
    document.addEventListener('keydown', (e) => this.onGlobalKey(e));
  }

  /** Puts a query in the field, as a restored view does: no search runs from here. */
  setQuery(query: string): void {
    this.search.value = query;
    this.showClear(query);
  }

  /** The clear button shows only while there is a query. */
  showClear(query: string): void {
    this.clearButton.hidden = !query;
  }

  /** What the search matched, or where a node jump went; '' for nothing. */
  setInfo(text: string): void {
    this.info.textContent = text;
  }

  private onGlobalKey(e: KeyboardEvent): void {
    const path = e.composedPath();
    const typing = path.some((t) => t instanceof HTMLElement && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'VSCODE-TEXTFIELD'));
    if (((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'f') || (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey)) {
      e.preventDefault();
      this.search.focus();
    }
  }
}

function button(label: string, onClick: () => void): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  b.setAttribute('secondary', '');
  b.addEventListener('click', onClick);
  return b;
}
