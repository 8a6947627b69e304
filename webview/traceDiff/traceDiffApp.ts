import type { RolloutAspect, RolloutFacts, TraceDiff } from '../../src/core/analysis/traceDiff';
import type { HostClient } from '../shared/hostClient';
import { el, listKeyTarget } from '../shared/dom';
import { count, ms, num, signed, signedCount, wordMarks } from './format';
import { BATCH, buildItems, foldElement, isDifference, rowElement, type Item } from './rows';

const ASPECT_TEXT: Record<RolloutAspect, string> = {
  task: 'task',
  path: 'path',
  finalOutput: 'final output',
  decision: 'decision',
  finalReward: 'final reward',
  criteria: 'judge criteria',
  turns: 'turns',
  tokens: 'tokens',
  status: 'status',
  versions: 'prompt / model versions',
};

/**
 * The trace diff panel: two rollouts' graph steps in two aligned columns,
 * differences marked, identical runs folded, `n` / `p` between differences.
 * Every text is set as text (word marks are <ins>/<del> nodes).
 */
export class TraceDiffApp {
  private readonly header = el('header', 'td-header');
  private readonly toolbar = el('div', 'toolbar td-toolbar');
  private readonly message = el('div', 'td-message');
  private readonly list = el('ul', 'td-list');
  private readonly status = el('span', 'td-status muted');
  private readonly only: HTMLInputElement;
  private readonly main = el('div', 'td-main');
  private diff: TraceDiff | null = null;
  private items: Item[] = [];
  /** The drawn window of items: [lo, hi). */
  private lo = 0;
  private hi = 0;
  private cursor = -1;
  private token = 0;
  private readonly unfolded = new Set<number>();
  private readonly above = el('li', 'td-sentinel');
  private readonly below = el('li', 'td-sentinel');
  private readonly observer: IntersectionObserver;

  constructor(
    private readonly root: HTMLElement,
    private readonly client: HostClient<'traceDiff'>,
  ) {
    this.only = document.createElement('input');
    this.only.type = 'checkbox';
    this.only.id = 'td-only';
    this.only.checked = client.getState().onlyDifferences === true;
    this.only.addEventListener('change', () => {
      this.client.setState({ onlyDifferences: this.only.checked });
      this.unfolded.clear();
      this.rebuild();
    });
    const label = el('label', 'td-only-label', 'Only differences');
    label.htmlFor = 'td-only';
    const prev = this.button('arrow-up', 'Previous difference (p)', () => this.jump(-1));
    const next = this.button('arrow-down', 'Next difference (n)', () => this.jump(1));
    this.toolbar.append(this.only, label, prev, next, this.status, el('span', 'td-hint muted', 'n / p: next / previous difference · Enter: open the left side (Shift+Enter: right) in the Trace Explorer'));
    this.toolbar.hidden = true;
    this.list.setAttribute('role', 'listbox');
    this.list.setAttribute('aria-label', 'Graph steps of the two rollouts, aligned');
    this.list.tabIndex = 0;
    this.list.addEventListener('keydown', (e) => this.onKey(e));
    this.list.addEventListener('click', (e) => this.onClick(e));
    this.status.setAttribute('aria-live', 'polite');
    this.main.append(this.header, this.list);
    this.root.append(this.toolbar, this.message, this.main);
    this.above.setAttribute('aria-hidden', 'true');
    this.below.setAttribute('aria-hidden', 'true');
    this.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        if (e.target === this.below) this.extendDown(this.hi + BATCH);
        else if (e.target === this.above) this.extendUp(this.lo - BATCH);
      }
    });
    // n / p work wherever the focus is in the panel, except in a text field.
    document.addEventListener('keydown', (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || (e.target as HTMLElement).closest('input[type=text], textarea')) return;
      if (e.key === 'n' || e.key === 'p') {
        e.preventDefault();
        this.jump(e.key === 'n' ? 1 : -1);
      }
    });
  }

  listen(): void {
    this.client.on('diff/show', ({ left, right }) => void this.load(left, right));
    this.client.on('store/changed', () => {
      // A side that was still running has more to show now.
      const d = this.diff;
      if (d && (d.left.status === 'running' || d.right.status === 'running')) void this.load(d.left.id, d.right.id);
    });
  }

  async start(): Promise<void> {
    const s = this.client.getState();
    if (s.left && s.right) await this.load(s.left, s.right);
    else if (!this.diff) this.showMessage('Pick two rollouts to compare: "Rollout Lab: Compare Two Rollouts (Trace Diff)…", a task of the Comparison panel, or a prompt version.', 'muted');
  }

  /** Loads the diff of two rollouts; a later call wins over one still in flight. */
  async load(left: string, right: string): Promise<void> {
    const mine = ++this.token;
    this.client.setState({ left, right });
    this.root.setAttribute('aria-busy', 'true');
    this.showMessage(`Loading ${left.slice(0, 8)} ↔ ${right.slice(0, 8)}…`, 'muted');
    try {
      const d = await this.client.request('diff/get', { left, right });
      if (mine !== this.token) return;
      this.diff = d;
      this.unfolded.clear();
      this.cursor = -1;
      this.showMessage('', '');
      this.renderHeader(d);
      this.toolbar.hidden = false;
      this.rebuild();
    } catch (err) {
      if (mine !== this.token) return;
      this.showMessage(`Cannot compare these rollouts: ${(err as Error).message}`, 'error');
    } finally {
      if (mine === this.token) this.root.removeAttribute('aria-busy');
    }
  }

  private button(icon: string, label: string, onClick: () => void): HTMLButtonElement {
    const b = el('button', 'td-nav');
    b.type = 'button';
    b.title = label;
    b.setAttribute('aria-label', label);
    b.append(el('span', `codicon codicon-${icon}`));
    b.addEventListener('click', onClick);
    return b;
  }

  private showMessage(text: string, cls: string): void {
    this.message.className = `td-message ${cls}${text ? '' : ' empty'}`;
    this.message.textContent = text;
  }

  // ---- header -------------------------------------------------------------

  private renderHeader(d: TraceDiff): void {
    const cards = el('div', 'td-cards');
    cards.append(this.card('Left', d.left, d.right), this.deltas(d), this.card('Right', d.right, d.left));
    const parts: HTMLElement[] = [cards];
    const summary = el('p', 'td-summary');
    const c = d.counts;
    summary.append(
      el('span', 'td-count td-count-same', `${count(c.same)} same`),
      el('span', 'td-count td-count-changed', `${count(c.changed)} changed`),
      el('span', 'td-count td-count-left', `${count(c.left)} only left`),
      el('span', 'td-count td-count-right', `${count(c.right)} only right`),
    );
    if (d.differs.length === 0) summary.append(el('strong', 'td-identical', 'No differences: the two rollouts took the same steps with the same outputs, tool calls, tokens and rewards.'));
    else {
      summary.append(el('span', 'muted', 'Differs in: '));
      for (const a of d.differs) summary.append(el('span', 'td-aspect', ASPECT_TEXT[a]));
    }
    if (!d.exactAlignment) summary.append(el('span', 'muted', ' (paths too different for a full alignment: only their common start and end are paired)'));
    parts.push(summary);

    const more = el('div', 'td-more-facts');
    if (d.criteria.length) {
      const t = el('table', 'td-criteria');
      t.setAttribute('aria-label', 'Judge criteria');
      const head = el('tr');
      for (const h of ['Criterion', 'Left', 'Right', 'Δ']) head.append(el('th', undefined, h));
      t.append(head);
      for (const row of d.criteria) {
        const tr = el('tr', row.left !== row.right ? 'td-changed-row' : undefined);
        tr.append(el('td', undefined, row.criterion), el('td', 'num', num(row.left, 2)), el('td', 'num', num(row.right, 2)), el('td', `num ${deltaClass(row.delta)}`, signed(row.delta, 2)));
        t.append(tr);
      }
      more.append(t);
    }
    if (d.versionChanges.length) {
      const box = el('div', 'td-versions');
      box.append(el('h3', undefined, 'Configuration differences'));
      const ul = el('ul');
      for (const v of d.versionChanges) {
        const side = (x: typeof v.left): string => (x ? `prompt ${x.prompt?.slice(0, 7) ?? 'none'} · ${x.model ?? 'no model'}` : 'did not run');
        ul.append(el('li', undefined, `${v.agent}: ${side(v.left)} → ${side(v.right)}`));
      }
      box.append(ul);
      more.append(box);
    }
    if (more.childElementCount) parts.push(more);

    if (d.differs.includes('finalOutput')) {
      const det = el('details', 'td-final');
      det.append(el('summary', undefined, 'Final output (what the judge scored)'));
      const cols = el('div', 'td-final-cols');
      for (const side of ['left', 'right'] as const) {
        const pre = el('pre', 'td-output');
        const text = d[side].finalOutput;
        if (d.finalOutputDiff) pre.append(wordMarks(d.finalOutputDiff, side));
        else pre.textContent = text ?? '(no final output)';
        cols.append(pre);
      }
      det.append(cols);
      parts.push(det);
    }
    this.header.replaceChildren(...parts);
  }

  private card(name: 'Left' | 'Right', f: RolloutFacts, other: RolloutFacts): HTMLElement {
    const card = el('section', `td-card td-card-${name.toLowerCase()}`);
    card.setAttribute('aria-label', `${name} rollout`);
    const title = el('h2', 'td-card-title');
    title.append(el('span', 'td-side-tag', name), el('span', 'td-task', `Task ${f.taskId}`), el('span', 'muted', f.sample > 0 ? ` · sample ${f.sample}` : ''));
    if (f.simulated) title.append(el('span', 'td-sim', 'SIMULATED'));
    card.append(title);
    const dl = el('dl', 'td-card-facts');
    const fact = (label: string, value: string, differs: boolean, cls?: string): void => {
      dl.append(el('dt', undefined, label), el('dd', `${differs ? 'td-changed' : ''} ${cls ?? ''}`.trim(), value));
    };
    fact('Run', f.runId, f.runId !== other.runId);
    fact('Status', `${f.status}${f.failure ? ` (${f.failure})` : ''}${f.error ? `: ${f.error}` : ''}`, f.status !== other.status || f.failure !== other.failure, f.status === 'succeeded' ? undefined : 'error');
    fact('Reward', num(f.finalReward), f.finalReward !== other.finalReward);
    const aligned = f.alignment === 'aligned' ? ', aligned' : f.alignment === 'misaligned' ? ', not aligned' : '';
    fact('Decision', `${f.decision ?? 'none'}${f.expectedDecision ? ` · expected ${f.expectedDecision}${aligned}` : ''}`, f.decision !== other.decision || f.alignment !== other.alignment);
    fact('Turns', f.turns === null ? 'n/a' : String(f.turns), f.turns !== other.turns);
    fact('Steps', count(f.steps), f.steps !== other.steps);
    fact('Tokens', `${count(f.inputTokens)} in / ${count(f.outputTokens)} out`, f.inputTokens !== other.inputTokens || f.outputTokens !== other.outputTokens);
    fact('Duration', ms(f.durationMs), false);
    card.append(dl);
    const open = el('button', 'td-open', 'Open in Trace Explorer');
    open.type = 'button';
    open.setAttribute('aria-label', `Open the ${name.toLowerCase()} rollout ${f.id} in the Trace Explorer`);
    open.addEventListener('click', () => this.client.command('trace/open', { rolloutId: f.id }));
    card.append(open);
    return card;
  }

  private deltas(d: TraceDiff): HTMLElement {
    const box = el('section', 'td-deltas');
    box.setAttribute('aria-label', 'Right minus left');
    box.append(el('h2', 'td-card-title', 'Right − left'));
    const dl = el('dl', 'td-card-facts');
    const row = (label: string, value: string, cls: string): void => {
      dl.append(el('dt', undefined, label), el('dd', cls, value));
    };
    row('Reward', signed(d.deltas.finalReward), `td-delta-reward ${deltaClass(d.deltas.finalReward)}`);
    row('Tokens in', signedCount(d.deltas.inputTokens), 'td-delta-tokens');
    row('Tokens out', signedCount(d.deltas.outputTokens), 'td-delta-tokens');
    row('Turns', d.deltas.turns === null ? 'n/a' : signedCount(d.deltas.turns), 'td-delta-turns');
    row('Steps', signedCount(d.deltas.steps), 'td-delta-steps');
    row('Duration', d.deltas.durationMs === null ? 'n/a' : `${d.deltas.durationMs >= 0 ? '+' : '−'}${ms(Math.abs(d.deltas.durationMs))}`, 'muted');
    box.append(dl);
    return box;
  }

  // ---- the aligned steps -----------------------------------------------------

  private rebuild(): void {
    if (!this.diff) return;
    const keepIndex = this.currentRowIndex();
    this.items = buildItems(this.diff.rows, this.only.checked, this.unfolded);
    if (this.items.length === 0) this.list.replaceChildren(el('li', 'td-empty muted', 'Neither rollout has a graph step.'));
    else this.drawWindow(0, BATCH);
    const differences = this.items.filter(isDifference).length;
    this.status.textContent = differences ? `${count(differences)} differing step${differences === 1 ? '' : 's'}` : 'no differing steps';
    this.cursor = -1;
    if (keepIndex !== null) {
      const at = this.items.findIndex((it) => (it.kind === 'row' ? it.index >= keepIndex : it.to >= keepIndex));
      if (at >= 0) this.moveTo(at, false);
    }
  }

  private currentRowIndex(): number | null {
    const it = this.items[this.cursor];
    if (!it) return null;
    return it.kind === 'row' ? it.index : it.from;
  }

  private itemNode(i: number): HTMLElement {
    const it = this.items[i]!;
    const li = it.kind === 'row' ? rowElement(it) : foldElement(it, this.only.checked);
    li.dataset.item = String(i);
    li.id = `td-item-${i}`;
    return li;
  }

  private nodes(from: number, to: number): DocumentFragment {
    const frag = document.createDocumentFragment();
    for (let i = from; i < to; i++) frag.append(this.itemNode(i));
    return frag;
  }

  /**
   * Draws only the items [lo, hi), with a sentinel above and below that
   * draws the next batch when it scrolls into view: a long trace never puts
   * all its steps in the DOM.
   */
  private drawWindow(lo: number, hi: number): void {
    this.observer.disconnect();
    this.lo = Math.max(0, lo);
    this.hi = Math.min(this.items.length, hi);
    this.list.replaceChildren(this.nodes(this.lo, this.hi));
    this.watchSentinels();
  }

  private watchSentinels(): void {
    this.observer.disconnect();
    this.above.remove();
    this.below.remove();
    if (this.lo > 0) {
      this.list.prepend(this.above);
      this.observer.observe(this.above);
    }
    if (this.hi < this.items.length) {
      this.list.append(this.below);
      this.observer.observe(this.below);
    }
  }

  private extendDown(to: number): void {
    const end = Math.min(this.items.length, to);
    if (end <= this.hi) return;
    this.below.remove();
    this.list.append(this.nodes(this.hi, end));
    this.hi = end;
    this.watchSentinels();
  }

  /** Draws earlier items above the window, keeping what is on screen where it was. */
  private extendUp(from: number): void {
    const start = Math.max(0, from);
    if (start >= this.lo) return;
    const before = this.main.scrollHeight;
    this.above.remove();
    this.list.prepend(this.nodes(start, this.lo));
    this.lo = start;
    this.main.scrollTop += this.main.scrollHeight - before;
    this.watchSentinels();
  }

  /** The element of an item, drawing it (next to the window, or a new window around it) when it is not drawn. */
  private itemElement(i: number): HTMLElement | null {
    if (i < 0 || i >= this.items.length) return null;
    if (i >= this.hi && i - this.hi < BATCH) this.extendDown(i + BATCH);
    else if (i < this.lo && this.lo - i < BATCH) this.extendUp(i - BATCH);
    else if (i < this.lo || i >= this.hi) this.drawWindow(i - BATCH / 3, i + BATCH);
    return this.list.querySelector<HTMLElement>(`#td-item-${i}`);
  }

  private moveTo(i: number, focus = true): void {
    if (i < 0 || i >= this.items.length) return;
    const old = this.cursor >= 0 ? this.list.querySelector<HTMLElement>(`#td-item-${this.cursor}`) : null;
    if (old) {
      old.classList.remove('td-current');
      old.tabIndex = -1;
      old.setAttribute('aria-selected', 'false');
    }
    this.cursor = i;
    const li = this.itemElement(i);
    if (!li) return;
    li.classList.add('td-current');
    li.tabIndex = 0;
    li.setAttribute('aria-selected', 'true');
    this.list.setAttribute('aria-activedescendant', li.id);
    if (focus) li.focus({ preventScroll: true });
    li.scrollIntoView({ block: 'nearest' });
  }

  /** Moves to the next (1) or previous (−1) differing step. */
  private jump(dir: 1 | -1): void {
    for (let i = this.cursor + dir; i >= 0 && i < this.items.length; i += dir) {
      if (isDifference(this.items[i]!)) {
        this.moveTo(i);
        const n = this.items.slice(0, i + 1).filter(isDifference).length;
        this.status.textContent = `difference ${count(n)} of ${count(this.items.filter(isDifference).length)}`;
        return;
      }
    }
    this.status.textContent = dir > 0 ? 'no later difference' : 'no earlier difference';
  }

  private unfold(i: number): void {
    const it = this.items[i];
    if (!it || it.kind !== 'fold') return;
    this.unfolded.add(it.from);
    const from = it.from;
    this.rebuild();
    const at = this.items.findIndex((x) => x.kind === 'row' && x.index === from);
    if (at >= 0) this.moveTo(at);
  }

  private open(i: number, side: 'left' | 'right'): void {
    const it = this.items[i];
    if (!it || !this.diff) return;
    if (it.kind === 'fold') return this.unfold(i);
    const step = it.row[side] ?? it.row[side === 'left' ? 'right' : 'left'];
    const facts = it.row[side] ? this.diff[side] : this.diff[side === 'left' ? 'right' : 'left'];
    if (step) this.client.command('trace/open', { rolloutId: facts.id, node: step.node });
  }

  private onClick(e: MouseEvent): void {
    const target = e.target as HTMLElement;
    if (target.closest('button')) return;
    const li = target.closest<HTMLElement>('li[data-item]');
    if (!li) return;
    const i = Number(li.dataset.item);
    this.moveTo(i);
    const cellEl = target.closest<HTMLElement>('.td-cell');
    if (this.items[i]?.kind === 'fold') this.unfold(i);
    else if (cellEl && !cellEl.classList.contains('td-absent')) this.open(i, cellEl.classList.contains('td-left') ? 'left' : 'right');
  }

  private onKey(e: KeyboardEvent): void {
    // A button inside a row (Show all) handles its own keys.
    if ((e.target as HTMLElement).closest('button')) return;
    const to = listKeyTarget(e.key, this.cursor, this.items.length);
    if (to !== undefined) {
      e.preventDefault();
      this.moveTo(to);
    } else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      if (this.cursor >= 0) this.open(this.cursor, e.shiftKey ? 'right' : 'left');
    }
  }
}

function deltaClass(x: number | null): string {
  return x === null || x === 0 ? '' : x > 0 ? 'td-up' : 'td-down';
}
