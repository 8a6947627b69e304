import type { DiffRow, StepAspect, StepToolCall, TraceStep } from '../../src/core/analysis/traceDiff';
import { el } from '../shared/dom';
import { CLIP_CHARS, count, ms, num, wordMarks } from './format';

/** What the list shows: an aligned row, or a run of identical rows folded into one line. */
export type Item = { kind: 'row'; row: DiffRow; index: number } | { kind: 'fold'; from: number; to: number; rows: DiffRow[] };

/** Runs of at least this many identical steps fold into one line. */
export const FOLD_MIN = 3;
/** Items drawn per batch; more are drawn as the list scrolls near its end (or navigation needs them). */
export const BATCH = 150;

const ASPECT_TEXT: Record<StepAspect, string> = {
  output: 'output',
  toolCalls: 'tool calls',
  tokens: 'tokens',
  errors: 'errors',
  rewards: 'AIR rewards',
};

/**
 * The items of the list: with `onlyDifferences`, identical rows are left
 * out (a fold says how many); otherwise runs of FOLD_MIN or more identical
 * rows fold, and an unfolded run shows its rows.
 */
export function buildItems(rows: readonly DiffRow[], onlyDifferences: boolean, unfolded: ReadonlySet<number>): Item[] {
  const items: Item[] = [];
  let i = 0;
  while (i < rows.length) {
    if (rows[i]!.kind !== 'same') {
      items.push({ kind: 'row', row: rows[i]!, index: i });
      i++;
      continue;
    }
    let j = i;
    while (j < rows.length && rows[j]!.kind === 'same') j++;
    const run = rows.slice(i, j);
    if (!unfolded.has(i) && (onlyDifferences || run.length >= FOLD_MIN)) items.push({ kind: 'fold', from: i, to: j - 1, rows: run });
    else run.forEach((row, k) => items.push({ kind: 'row', row, index: i + k }));
    i = j;
  }
  return items;
}

export function isDifference(item: Item): boolean {
  return item.kind === 'row' && item.row.kind !== 'same';
}

function toolCallText(c: StepToolCall): string {
  return `${c.name}(${c.args})`;
}

function clipped(text: string, cls: string): HTMLElement {
  const block = el('pre', cls);
  if (text.length <= CLIP_CHARS) {
    block.textContent = text;
    return block;
  }
  block.textContent = text.slice(0, CLIP_CHARS) + '…';
  const more = el('button', 'td-more', `Show all ${count(text.length)} characters`);
  more.type = 'button';
  more.addEventListener('click', (e) => {
    e.stopPropagation();
    block.textContent = text;
  });
  const wrap = el('div');
  wrap.append(block, more);
  return wrap;
}

/** One side of an aligned row: node, facts, output (with word marks when it differs), tool calls, errors, rewards. */
function cell(row: DiffRow, side: 'left' | 'right', other: TraceStep | null): HTMLElement {
  const step = side === 'left' ? row.left : row.right;
  const c = el('div', `td-cell td-${side}`);
  if (!step) {
    c.classList.add('td-absent');
    c.append(el('span', 'muted', side === 'left' ? 'not on the left' : 'not on the right'));
    return c;
  }
  c.dataset.node = step.node;
  const head = el('div', 'td-cell-head');
  head.append(el('span', 'td-node', step.node), el('span', 'td-step muted', `#${step.index + 1}${step.step !== null ? ` · step ${step.step}` : ''}`));
  c.append(head);
  const differs = new Set(row.differs);
  const facts = el('div', 'td-facts');
  const tokens = el('span', differs.has('tokens') ? 'td-fact td-changed' : 'td-fact', `${count(step.inputTokens)} in / ${count(step.outputTokens)} out tok`);
  facts.append(tokens);
  const lat = el('span', 'td-fact muted', ms(step.latencyMs));
  if (other) lat.title = `${side === 'left' ? 'right' : 'left'}: ${ms(other.latencyMs)}`;
  facts.append(lat);
  if (step.llmCalls > 1) facts.append(el('span', 'td-fact muted', `${step.llmCalls} model calls`));
  c.append(facts);

  if (step.output !== null && step.output !== '') {
    if (differs.has('output') && row.outputDiff) {
      const pre = el('pre', 'td-output td-changed-block');
      pre.append(wordMarks(row.outputDiff, side));
      c.append(pre);
    } else c.append(clipped(step.output, differs.has('output') ? 'td-output td-changed-block' : 'td-output'));
  }
  if (step.toolCalls.length) {
    const list = el('ul', 'td-tools');
    const others = other?.toolCalls ?? [];
    step.toolCalls.forEach((call, i) => {
      const o = others[i];
      const same = o !== undefined && o.name === call.name && o.args === call.args && o.result === call.result && o.error === call.error;
      const li = el('li', same ? 'td-tool' : 'td-tool td-changed', `${call.result === null ? '→ ' : ''}${toolCallText(call)}`);
      if (call.result !== null) li.append(el('div', 'td-tool-result muted', call.result.length > 300 ? `${call.result.slice(0, 300)}…` : call.result));
      if (call.error) li.append(el('div', 'td-tool-result error', call.error));
      list.append(li);
    });
    c.append(list);
  }
  for (const err of step.errors) c.append(el('div', `td-error error${differs.has('errors') ? ' td-changed' : ''}`, err));
  if (step.rewards.length) {
    const r = el('div', `td-rewards${differs.has('rewards') ? ' td-changed' : ''}`);
    r.append(el('span', 'muted', 'AIR '));
    for (const w of step.rewards) r.append(el('span', w.value < 0 ? 'td-reward td-reward-neg' : 'td-reward', `${w.name} ${w.value > 0 ? '+' : ''}${num(w.value, 2)}`));
    c.append(r);
  }
  return c;
}

const KIND_TEXT: Record<DiffRow['kind'], string> = { same: 'same', changed: 'changed', left: 'only left', right: 'only right' };

/** An aligned row: a label column and the two cells. */
export function rowElement(item: Extract<Item, { kind: 'row' }>): HTMLElement {
  const { row } = item;
  const li = el('li', `td-row td-kind-${row.kind}`);
  li.dataset.index = String(item.index);
  li.dataset.kind = row.kind;
  li.setAttribute('role', 'option');
  li.tabIndex = -1;
  const gutter = el('div', 'td-gutter');
  gutter.append(el('span', `td-badge td-badge-${row.kind}`, KIND_TEXT[row.kind]));
  for (const a of row.differs) gutter.append(el('span', 'td-aspect', ASPECT_TEXT[a]));
  li.append(gutter, cell(row, 'left', row.right), cell(row, 'right', row.left));
  const node = row.left?.node ?? row.right?.node ?? '';
  li.setAttribute('aria-label', `${node}: ${KIND_TEXT[row.kind]}${row.differs.length ? ` (${row.differs.map((a) => ASPECT_TEXT[a]).join(', ')})` : ''}`);
  return li;
}

/** A folded run of identical steps; activating it unfolds the run. */
export function foldElement(item: Extract<Item, { kind: 'fold' }>, onlyDifferences: boolean): HTMLElement {
  const li = el('li', 'td-row td-fold');
  li.dataset.from = String(item.from);
  li.setAttribute('role', 'option');
  li.tabIndex = -1;
  const n = item.rows.length;
  const nodes = [...new Set(item.rows.map((r) => r.left!.node))];
  const names = nodes.length > 4 ? `${nodes.slice(0, 4).join(', ')}, …` : nodes.join(', ');
  const text = `${count(n)} identical step${n === 1 ? '' : 's'}${onlyDifferences ? ' hidden' : ''} (${names})`;
  li.append(el('span', 'codicon codicon-unfold'), el('span', 'td-fold-text', text), el('span', 'muted', ' — Enter or click to show'));
  li.setAttribute('aria-label', `${text}; press Enter to show them`);
  return li;
}
