import type { GraphNodeInfo } from '../../src/shared/protocol';

/*
 * What a click (or Enter) on a node offers: its agent's prompt file, or its
 * spans in the trace explorer. A small menu anchored at the node; Escape or a
 * click elsewhere closes it and focus returns to the node.
 */

export interface NodeMenuActions {
  openPrompt(agent: string): void;
  showSpans(node: string): void;
}

export class NodeMenu {
  private readonly el: HTMLDivElement;
  private anchor: SVGGElement | null = null;

  constructor(
    private readonly host: HTMLElement,
    private readonly actions: NodeMenuActions,
  ) {
    this.el = document.createElement('div');
    this.el.className = 'gv-menu';
    this.el.setAttribute('role', 'menu');
    this.el.hidden = true;
    host.append(this.el);
    this.el.addEventListener('keydown', (ev) => this.onKey(ev));
    document.addEventListener('pointerdown', (ev) => {
      if (!this.el.hidden && !this.el.contains(ev.target as Node)) this.close(false);
    });
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  open(node: GraphNodeInfo, anchor: SVGGElement): void {
    this.anchor = anchor;
    this.el.replaceChildren();
    const title = document.createElement('div');
    title.className = 'gv-menu-title';
    title.textContent = node.kind === 'start' ? 'START' : node.kind === 'end' ? 'END' : node.id;
    this.el.append(title);
    const items: HTMLButtonElement[] = [];
    const item = (label: string, action: () => void, data: string): void => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'gv-menu-item';
      b.setAttribute('role', 'menuitem');
      b.dataset.action = data;
      b.textContent = label;
      b.addEventListener('click', () => {
        this.close(true);
        action();
      });
      items.push(b);
      this.el.append(b);
    };
    if (node.agent && node.hasPrompt) {
      const agent = node.agent;
      item(`Open prompt of ${agent}`, () => this.actions.openPrompt(agent), 'prompt');
    }
    if (node.kind !== 'start' && node.kind !== 'end') {
      item('Show spans in Trace Explorer', () => this.actions.showSpans(node.id), 'spans');
    }
    if (!items.length) {
      const none = document.createElement('div');
      none.className = 'gv-menu-empty';
      none.textContent = 'No actions for this node';
      this.el.append(none);
    }
    this.el.hidden = false;
    const host = this.host.getBoundingClientRect();
    const r = anchor.getBoundingClientRect();
    const left = Math.max(4, Math.min(r.left - host.left, host.width - this.el.offsetWidth - 4));
    const below = r.bottom - host.top + 4;
    const top = below + this.el.offsetHeight > host.height ? Math.max(4, r.top - host.top - this.el.offsetHeight - 4) : below;
    this.el.style.left = `${left}px`;
    this.el.style.top = `${top}px`;
    (items[0] ?? this.el).focus();
  }

  /** restoreFocus: back to the node (after a choice or Escape), not after a click elsewhere. */
  close(restoreFocus: boolean): void {
    if (this.el.hidden) return;
    this.el.hidden = true;
    const a = this.anchor;
    this.anchor = null;
    if (restoreFocus) a?.focus();
  }

  private onKey(ev: KeyboardEvent): void {
    const items = Array.from(this.el.querySelectorAll<HTMLButtonElement>('button'));
    const i = items.indexOf(document.activeElement as HTMLButtonElement);
    if (ev.key === 'Escape') {
      ev.preventDefault();
      this.close(true);
    } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const next = items[(i + (ev.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length];
      next?.focus();
    } else if (ev.key === 'Tab') {
      // Focus stays in the menu while it is open, as in VS Code's own menus.
      ev.preventDefault();
      const next = items[(i + (ev.shiftKey ? items.length - 1 : 1)) % items.length];
      next?.focus();
    }
  }
}
