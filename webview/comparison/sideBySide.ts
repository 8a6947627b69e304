import '@vscode-elements/elements/dist/vscode-button/index.js';
import type { ComparisonTaskDetail, ComparisonTaskSide, ProtocolSample } from '../../src/core/analysis/comparisonTask';
import { el, table } from './dom';
import { isJsonText, num, signed } from './format';
import type { Alignment } from '../../src/core/data/decisionAlignment';

const ALIGNMENT: Record<Alignment, { text: string; cls: string }> = {
  aligned: { text: 'aligned', cls: 'cmp-aligned' },
  misaligned: { text: 'not aligned', cls: 'cmp-misaligned' },
  maybe: { text: 'expected maybe: not scored', cls: 'muted' },
  unknown: { text: 'alignment unknown', cls: 'muted' },
};

/**
 * The two sides of one task next to each other: per sample its reward,
 * decision against the expected one, judge scores per criterion, the judge's
 * rationale and the protocol it scored. Everything is text.
 */
export function renderSideBySide(
  d: ComparisonTaskDetail,
  criteria: readonly string[],
  openRollout: (rolloutId: string) => void,
  diffRollouts?: (left: string, right: string) => void,
): HTMLElement {
  const wrap = el('section', 'cmp-detail-body');
  wrap.setAttribute('aria-label', `Task ${d.taskId}, A and B side by side`);
  const head = el('div', 'cmp-task-head');
  head.append(el('h2', 'cmp-task-title', `Task ${d.taskId}`));
  if (d.goal) head.append(el('p', 'cmp-goal', d.goal));
  head.append(el('p', 'cmp-expected muted', `Expected decision: ${d.expectedDecision ?? 'none'}`));
  if (diffRollouts) head.append(diffButtons(d, diffRollouts));
  wrap.append(head);
  const cols = el('div', 'cmp-columns');
  const other = (s: ComparisonTaskSide): ComparisonTaskSide => (s === d.a ? d.b : d.a);
  for (const [name, side] of [['A', d.a], ['B', d.b]] as const) {
    cols.append(renderSide(name, side, other(side), d.expectedDecision, criteria, openRollout));
  }
  wrap.append(cols);
  return wrap;
}

/** One "Trace diff" button per sample both sides ran: A's rollout on the left, B's on the right, aligned step by step. */
function diffButtons(d: ComparisonTaskDetail, diffRollouts: (left: string, right: string) => void): HTMLElement {
  const bar = el('div', 'cmp-diff-buttons');
  const n = Math.min(d.a.samples.length, d.b.samples.length);
  for (let i = 0; i < n; i++) {
    const [a, b] = [d.a.samples[i]!, d.b.samples[i]!];
    const button = document.createElement('vscode-button');
    button.className = 'cmp-trace-diff';
    button.setAttribute('secondary', '');
    button.setAttribute('icon', 'diff');
    button.textContent = n > 1 ? `Trace diff A ↔ B (sample ${a.sample})` : 'Trace diff A ↔ B';
    button.setAttribute('aria-label', `Compare the traces of A and B step by step${n > 1 ? ` (sample ${a.sample})` : ''}`);
    button.addEventListener('click', () => diffRollouts(a.rolloutId, b.rolloutId));
    bar.append(button);
  }
  return bar;
}

function meanScore(side: ComparisonTaskSide, criterion: string): number | null {
  const xs = side.samples.filter((s) => s.criteria && !s.judgeFailed && typeof s.criteria[criterion] === 'number').map((s) => s.criteria![criterion]!);
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null;
}

function renderSide(
  name: 'A' | 'B',
  side: ComparisonTaskSide,
  other: ComparisonTaskSide,
  expected: string | null,
  criteria: readonly string[],
  openRollout: (rolloutId: string) => void,
): HTMLElement {
  const col = el('article', `cmp-side cmp-side-${name.toLowerCase()}`);
  col.setAttribute('aria-label', `${name}: ${side.label}`);
  const title = el('h3', 'cmp-side-title');
  title.append(el('span', 'cmp-side-tag', name), el('span', 'cmp-side-name', side.label));
  col.append(title);
  if (side.samples.length === 0) {
    col.append(el('p', 'muted', 'No finished rollout of this task on this side.'));
    return col;
  }
  // Criterion scores of the side (mean over samples), with the change against the other side.
  const names = criteria.length ? criteria : [...new Set(side.samples.flatMap((s) => Object.keys(s.criteria ?? {})))];
  const rows = names.map((c) => {
    const mine = meanScore(side, c);
    const theirs = meanScore(other, c);
    const delta = mine !== null && theirs !== null ? mine - theirs : null;
    return [c, num(mine), delta === null ? '' : `${signed(delta)} vs ${name === 'A' ? 'B' : 'A'}`];
  });
  const scores = table(['Criterion', 'Score', ''], rows, 'cmp-table cmp-scores');
  scores.setAttribute('aria-label', `Judge scores of ${name}`);
  col.append(scores);
  for (const s of side.samples) col.append(renderSample(s, side.samples.length > 1, expected, openRollout));
  return col;
}

function renderSample(s: ProtocolSample, several: boolean, expected: string | null, openRollout: (rolloutId: string) => void): HTMLElement {
  const box = el('div', 'cmp-sample');
  box.dataset.rolloutId = s.rolloutId;
  if (several) box.append(el('h4', 'cmp-sample-title', `Sample ${s.sample}`));
  const facts = el('dl', 'cmp-facts cmp-sample-facts');
  const fact = (label: string, value: string, cls?: string): void => {
    facts.append(el('dt', undefined, label), el('dd', cls, value));
  };
  fact('Reward', `${num(s.finalReward)}${s.judgeFailed ? ' (judge failed: penalty applied)' : ''}`, 'cmp-reward');
  const align = ALIGNMENT[s.alignment];
  fact('Decision', `${s.decision ?? 'none'} · expected ${expected ?? 'none'} · ${align.text}`, `cmp-decision ${align.cls}`);
  if (s.status !== 'succeeded') fact('Status', `${s.status}${s.error ? `: ${s.error}` : ''}`, 'error');
  box.append(facts);
  const open = document.createElement('vscode-button');
  open.className = 'cmp-open-trace';
  open.setAttribute('secondary', '');
  open.textContent = 'Open in Trace Explorer';
  open.setAttribute('aria-label', `Open rollout ${s.rolloutId} in the trace explorer`);
  open.addEventListener('click', () => openRollout(s.rolloutId));
  box.append(open);
  if (s.rationale) {
    box.append(el('h4', 'cmp-subtitle', 'Judge rationale'), el('p', 'cmp-rationale', s.rationale));
  }
  box.append(el('h4', 'cmp-subtitle', s.protocolSource === 'judge-input' ? 'Protocol (as the judge saw it)' : 'Protocol'));
  if (s.protocol === null) box.append(el('p', 'muted', 'This rollout produced no final protocol.'));
  else {
    const json = isJsonText(s.protocol);
    const block = el(json ? 'pre' : 'div', json ? 'cmp-protocol cmp-json' : 'cmp-protocol cmp-prose', s.protocol);
    block.tabIndex = 0;
    block.setAttribute('aria-label', 'Protocol text');
    box.append(block);
  }
  return box;
}
