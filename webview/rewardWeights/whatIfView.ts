import type { RankedRollout, WhatIfAnswer } from '../../src/shared/weightsProtocol';
import { activatable, el, num } from './dom';
import { tableHead } from '../shared/dom';
import { RewardHistogram } from './histogram';

/*
 * The what-if: how the stored rollouts' final rewards and ranking would
 * change under the weights in the form. Summary numbers, before/after
 * histograms, the top 10 before and after with entries and exits marked, and
 * the largest rank movers; a rollout opens in the trace explorer.
 */

export class WhatIfView {
  readonly root: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly keptNote: HTMLElement;
  private readonly missingNote: HTMLElement;
  private readonly stats: HTMLElement;
  private readonly histogram: RewardHistogram;
  private readonly topHost: HTMLElement;
  private readonly moversHost: HTMLElement;

  constructor(private readonly open: (rolloutId: string) => void) {
    this.root = el('div', 'rw-whatif');
    this.summary = el('p', 'rw-whatif-summary');
    this.summary.setAttribute('role', 'status');
    this.keptNote = el('p', 'rw-kept-note muted');
    this.missingNote = el('p', 'rw-missing-note warning');
    this.stats = el('dl', 'rw-stats');
    const chartHost = el('div', 'rw-chart');
    this.histogram = new RewardHistogram(chartHost);
    const legend = el('div', 'rw-legend');
    legend.setAttribute('aria-hidden', 'true');
    for (const [cls, text] of [
      ['rw-swatch-before', 'before: stored rewards'],
      ['rw-swatch-after', 'after: under these weights'],
      ['rw-swatch-mean', 'dashed line: mean'],
    ] as const) {
      const item = el('span', 'rw-legend-item');
      item.append(el('span', `rw-swatch ${cls}`), el('span', undefined, text));
      legend.append(item);
    }
    this.topHost = el('div', 'rw-top');
    this.moversHost = el('div', 'rw-movers');
    this.root.append(this.summary, this.keptNote, this.missingNote, this.stats, chartHost, legend, this.topHost, this.moversHost);
    this.root.hidden = true;
  }

  /** Shows a message in place of the numbers (no rollouts yet, an invalid form, a failed request). */
  message(text: string): void {
    this.summary.textContent = text;
  }

  show(a: WhatIfAnswer): void {
    this.root.hidden = false;
    this.root.dataset.rollouts = String(a.rollouts);
    if (a.rollouts === 0) {
      this.summary.textContent = 'No stored rollouts with a reward in this scope yet — run some to see how the weights rank them.';
    } else {
      this.summary.textContent = `${a.rollouts} stored rollouts: ${a.rescored} re-scored from their stored criterion scores, ${a.changed} of them with a different reward. No model is called.`;
    }
    const keptParts = [
      a.keptBy['no-criteria'] ? `${a.keptBy['no-criteria']} without criterion scores (no final output)` : '',
      a.keptBy['judge-failed'] ? `${a.keptBy['judge-failed']} whose judge failed` : '',
    ].filter(Boolean);
    this.keptNote.textContent = a.kept ? `${a.kept} rollouts kept their reward: ${keptParts.join(', ')}.` : '';
    this.keptNote.hidden = !a.kept;
    this.missingNote.textContent = a.missingCriteria.length
      ? `Not scored yet by the judge of the stored rollouts: ${a.missingCriteria.join(', ')} — they count as 0 here until rollouts are judged with them.`
      : '';
    this.missingNote.hidden = !a.missingCriteria.length;

    this.stats.replaceChildren();
    const fact = (label: string, value: string, cls: string): void => {
      const dt = el('dt', undefined, label);
      const dd = el('dd', cls, value);
      this.stats.append(dt, dd);
    };
    fact('Mean', `${num(a.before.mean)} → ${num(a.after.mean)}`, 'rw-stat-mean');
    fact('Median', `${num(a.before.median)} → ${num(a.after.median)}`, 'rw-stat-median');
    fact('Range', `${num(a.before.min)}–${num(a.before.max)} → ${num(a.after.min)}–${num(a.after.max)}`, 'rw-stat-range');
    fact('Spearman rank correlation', a.rankCorrelation === null ? '– (needs two or more differing rewards)' : a.rankCorrelation.toFixed(3), 'rw-stat-rho');
    this.histogram.setData(a.before, a.after, a.bins);
    this.renderTop(a);
    this.renderMovers(a);
  }

  private renderTop(a: WhatIfAnswer): void {
    const entered = new Set(a.top.entered);
    const left = new Set(a.top.left);
    const column = (title: string, rows: RankedRollout[], side: 'before' | 'after'): HTMLElement => {
      const col = el('div', `rw-top-col rw-top-${side}`);
      col.append(el('h3', undefined, title));
      const list = el('ol', 'rw-top-list');
      list.setAttribute('aria-label', title);
      for (const r of rows) {
        const li = el('li', 'rw-top-item');
        li.dataset.rollout = r.rolloutId;
        const mark = side === 'after' && entered.has(r.rolloutId) ? 'entered' : side === 'before' && left.has(r.rolloutId) ? 'left' : '';
        if (mark) li.classList.add(`rw-${mark}`);
        // The rollout's short id beside its task: samples of one task (or reruns) would otherwise read as the same row.
        li.append(el('span', 'rw-rank', `#${r.rank}`), el('span', 'rw-task', r.taskId), el('span', 'rw-id', r.rolloutId.slice(0, 8)), el('span', 'rw-reward', num(r.reward)));
        if (mark) li.append(el('span', `rw-badge rw-badge-${mark}`, mark === 'entered' ? 'new in top' : 'drops out'));
        li.title = `Rollout ${r.rolloutId} — Enter opens it in the trace explorer`;
        activatable(li, () => this.open(r.rolloutId));
        list.append(li);
      }
      if (!rows.length) list.append(el('li', 'muted', 'none'));
      col.append(list);
      return col;
    };
    const note = el(
      'p',
      'rw-top-note muted',
      a.top.changed ? `Top ${a.top.k}: ${a.top.entered.length} enter, ${a.top.left.length} drop out.` : `Top ${a.top.k}: unchanged.`,
    );
    const cols = el('div', 'rw-top-cols');
    cols.append(column(`Top ${a.top.k} before`, a.top.before, 'before'), column(`Top ${a.top.k} after`, a.top.after, 'after'));
    this.topHost.replaceChildren(note, cols);
  }

  private renderMovers(a: WhatIfAnswer): void {
    const title = el('h3', undefined, 'Largest rank changes');
    if (!a.movers.length) {
      this.moversHost.replaceChildren(title, el('p', 'muted rw-no-movers', 'No rollout changes rank under these weights.'));
      return;
    }
    const table = el('table', 'rw-table rw-movers-table');
    table.append(el('caption', 'rw-sr-only', 'Rollouts whose rank changes most; Enter opens one in the trace explorer'));
    const thead = tableHead(['Task', 'Rollout', 'Reward before → after', 'Rank before → after', 'Moved']);
    const body = el('tbody');
    for (const m of a.movers) {
      const tr = el('tr', m.moved > 0 ? 'rw-up' : 'rw-down');
      tr.dataset.rollout = m.rolloutId;
      tr.append(
        el('td', 'rw-task', m.taskId),
        el('td', 'rw-id', m.rolloutId.slice(0, 8)),
        el('td', 'rw-num', `${num(m.before)} → ${num(m.after)}`),
        el('td', 'rw-num', `${m.rankBefore} → ${m.rankAfter}`),
        el('td', 'rw-num rw-moved', m.moved > 0 ? `▲ ${m.moved}` : `▼ ${-m.moved}`),
      );
      tr.setAttribute('aria-label', `Task ${m.taskId}: rank ${m.rankBefore} to ${m.rankAfter}, reward ${num(m.before)} to ${num(m.after)}`);
      activatable(tr, () => this.open(m.rolloutId));
      body.append(tr);
    }
    table.append(thead, body);
    this.moversHost.replaceChildren(title, table);
  }
}
