import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { EvaluationReport } from '../../src/core/analysis/evaluationReport';
import { duration, num, pct } from '../../src/core/analysis/numberFormat';
import { SIMULATED_NOTICE, interval, reportTables, utc, type ReportCell, type ReportTableView } from '../../src/core/analysis/reportFormat';
import type { ReportRunSummary } from '../../src/shared/reportProtocol';
import type { HostClient } from '../shared/hostClient';
import { coalescingLoad } from '../shared/coalescingLoad';
import { tableHead } from '../shared/dom';
import { criteriaChart } from './criteriaChart';
import { arrowNavigation, el } from './dom';

/*
 * The Evaluation Report panel: a run picker, the report's tables (the same
 * ones the Markdown and HTML exports write, from reportTables), a criteria
 * chart with confidence-interval whiskers, rollout links that open the trace
 * explorer, and export buttons. It follows the store live and keeps the
 * chosen run across reloads.
 */

export class ReportApp {
  private runId: string | null;
  private report: EvaluationReport | null = null;
  private readonly runPicker: VscodeSingleSelect;
  private readonly exportMd: HTMLElement;
  private readonly exportHtml: HTMLElement;
  private readonly status: HTMLElement;
  private readonly content: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'evalReport'>,
  ) {
    root.classList.add('er-root');
    this.runId = client.getState().runId ?? null;

    const toolbar = el('div', 'toolbar er-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Evaluation report');
    const runLabel = el('label', 'er-field');
    runLabel.append(el('span', undefined, 'Run'));
    this.runPicker = document.createElement('vscode-single-select');
    this.runPicker.className = 'er-run';
    this.runPicker.setAttribute('aria-label', 'Run to report on');
    this.runPicker.addEventListener('change', () => {
      const id = this.runPicker.value || null;
      if (!id || id === this.report?.run.id) return;
      this.show(id);
    });
    runLabel.append(this.runPicker);
    this.exportMd = this.button('Export Markdown', 'er-export-md', () => void this.export('md'));
    this.exportHtml = this.button('Export HTML', 'er-export-html', () => void this.export('html'));
    this.status = el('span', 'er-status muted');
    this.status.setAttribute('role', 'status');
    toolbar.append(runLabel, this.status, el('span', 'er-spacer'), this.exportMd, this.exportHtml);

    this.content = el('main', 'er-content');
    root.append(toolbar, this.content);
    this.setExportEnabled(false);
  }

  listen(): void {
    this.client.on('store/changed', () => void this.reload());
    this.client.on('report/show', ({ runId }) => this.show(runId));
  }

  async start(): Promise<void> {
    await this.reload();
    document.body.dataset.ready = 'true';
  }

  private show(runId: string): void {
    this.runId = runId;
    this.client.setState({ runId });
    void this.reload();
  }

  /** Loads runs and the report; a change that arrives during a load triggers one more load after it. */
  private readonly reload = coalescingLoad(() => this.loadOnce());

  private async loadOnce(): Promise<void> {
    let runs: ReportRunSummary[] = [];
    try {
      runs = (await this.client.request('report/runs', {})).runs;
    } catch (err) {
      this.status.textContent = `Cannot list runs: ${(err as Error).message}`;
    }
    let report: EvaluationReport | null;
    let notice: string | undefined;
    try {
      report = await this.client.request('report/get', this.runId ? { runId: this.runId } : {});
    } catch (err) {
      if (this.runId && !runs.some((r) => r.id === this.runId)) {
        // The remembered run is gone (another store, or removed): fall back to the default one.
        const gone = this.runId;
        this.runId = null;
        this.client.setState({ runId: undefined });
        try {
          report = await this.client.request('report/get', {});
          notice = `Run ${gone} is not in the store; showing ${report?.run.id ?? 'nothing'}`;
        } catch (err2) {
          this.status.textContent = `Cannot make the report: ${(err2 as Error).message}`;
          return;
        }
      } else {
        this.status.textContent = `Cannot make the report: ${(err as Error).message}`;
        return;
      }
    }
    this.report = report;
    this.fillPicker(runs, report?.run.id ?? null);
    this.render(notice);
  }

  private fillPicker(runs: ReportRunSummary[], selected: string | null): void {
    const opts = runs.map((r) => ({
      label: `${r.id} · ${r.command ?? 'run'}${r.split ? ` · ${r.split}` : ''} · ${r.rollouts} rollouts${r.simulated ? ' · SIMULATED' : ''}`,
      value: r.id,
      description: `${new Date(r.startTime).toLocaleString()} · ${r.status}`,
      selected: r.id === selected,
      disabled: false,
    }));
    if (JSON.stringify(opts) !== JSON.stringify(this.runPicker.options.map((o) => ({ ...o })))) this.runPicker.options = opts;
    this.runPicker.value = selected ?? '';
  }

  private render(notice?: string): void {
    const r = this.report;
    this.setExportEnabled(Boolean(r));
    if (!r) {
      const empty = el('div', 'er-empty');
      empty.append(el('p', undefined, 'No runs yet. Run "Rollout Lab: Evaluate on Validation Set" to make an evaluation report.'));
      this.content.replaceChildren(empty);
      this.status.textContent = notice ?? '';
      return;
    }
    const parts: HTMLElement[] = [];
    if (r.run.simulated) {
      const banner = el('p', 'er-simulated', SIMULATED_NOTICE);
      banner.setAttribute('role', 'note');
      parts.push(banner);
    }
    const title = el('h1', 'er-title', `Evaluation report: ${r.run.id}`);
    parts.push(title, this.headline(r));
    // The numbers first; what was run (a dozen facts) after them, folded.
    const tables = reportTables(r);
    const facts = tables.find((t) => t.id === 'facts');
    for (const t of tables) {
      if (t.id === 'facts') continue;
      parts.push(this.section(t, r));
      if (t.id === 'evaluation' && facts) parts.push(this.section(facts, r, true));
    }
    if (r.notes.length) {
      const notes = el('section', 'er-section er-notes');
      notes.append(el('h2', undefined, 'Notes'));
      const list = el('ul');
      for (const n of r.notes) list.append(el('li', undefined, n));
      notes.append(list);
      parts.push(notes);
    }
    parts.push(el('p', 'er-footer muted', `Generated ${utc(r.generatedAt)}${r.run.simulated ? ' · SIMULATED endpoint' : ''}`));
    const scroll = this.content.scrollTop;
    this.content.replaceChildren(...parts);
    this.content.scrollTop = scroll;
    const c = r.run.counts;
    this.status.textContent =
      notice ??
      `${c.total} rollouts · ${c.succeeded} succeeded · ${c.failed} failed${c.noOutput ? ` (${c.noOutput} without output)` : ''}${c.running ? ` · ${c.running} running` : ''}${c.notStarted ? ` · ${c.notStarted} not started, of ${r.run.planned} planned` : ''}${c.superseded ? ` · ${c.superseded} earlier attempts superseded` : ''}`;
  }

  /** The headline numbers: final reward, execution success, decision alignment, turns, rollouts. */
  private headline(r: EvaluationReport): HTMLElement {
    const t = r.table;
    const box = el('div', 'er-headline');
    box.setAttribute('role', 'group');
    box.setAttribute('aria-label', 'Headline numbers');
    const card = (id: string, label: string, value: string, sub: string, tip?: string): void => {
      const c = el('div', 'er-kpi');
      c.dataset.kpi = id;
      if (tip) c.title = tip;
      c.append(el('span', 'er-kpi-label', label), el('span', 'er-kpi-value', value), el('span', 'er-kpi-sub muted', sub));
      box.append(c);
    };
    const level = `${Math.round(r.confidenceLevel * 100)} % CI`;
    card('reward', 'Average final reward', num(t.finalReward.mean), t.finalReward.ci ? `${level} ${interval(t.finalReward.ci)} · n ${t.finalReward.n}` : `n ${t.finalReward.n}`);
    card('success', 'Execution success', pct(t.executionSuccess.rate), `${t.executionSuccess.count}/${t.executionSuccess.n} rollouts`);
    if (t.decisionAlignment) card('alignment', 'Decision alignment', pct(t.decisionAlignment.rate), `${t.decisionAlignment.count}/${t.decisionAlignment.n} aligned`);
    const limit = r.turnLimit ?? null;
    card(
      'turns',
      'Average turns',
      num(t.turns.mean, 1),
      limit ? `limit ${limit.maxTurns}${limit.over ? ` · ${limit.over} over it` : ''}` : t.turns.n ? `max ${num(t.turns.max, 0)}` : '',
      limit
        ? `runner.maxTurns (${limit.maxTurns}) is handed to the graph; the turn count is the graph's own (its turns, else its AI messages, tool-call requests included), so a graph that does not stop at the limit reports more.`
        : undefined,
    );
    const c = r.run.counts;
    card('rollouts', 'Rollouts', String(c.total), `${c.failed} failed · ${duration(r.run.durationMs)}`);
    return box;
  }

  private section(t: ReportTableView, r: EvaluationReport, folded = false): HTMLElement {
    const s = el('section', `er-section er-${t.id}`);
    s.dataset.section = t.id;
    const h = el('h2', undefined, t.title);
    h.id = `er-h-${t.id}`;
    s.setAttribute('aria-labelledby', h.id);
    if (folded) {
      // Collapsible: the summary names the section; the table and caption open under it.
      const details = el('details', 'er-fold');
      const summary = el('summary');
      summary.append(h);
      details.append(summary, el('p', 'er-caption muted', t.caption), this.table(t));
      s.append(details);
      return s;
    }
    s.append(h, el('p', 'er-caption muted', t.caption));
    if (t.id === 'criteria' && r.criteria.some((k) => k.stat.mean !== null)) s.append(criteriaChart(r.criteria, r.confidenceLevel));
    if (t.rows.length === 0) {
      s.append(el('p', 'er-empty-table muted', t.empty));
      return s;
    }
    s.append(this.table(t));
    arrowNavigation(s, '.er-link');
    return s;
  }

  private table(t: ReportTableView): HTMLElement {
    const wrap = el('div', 'er-table-wrap');
    const table = el('table', 'er-table');
    const thead = tableHead(t.header, (i) => (t.numeric[i] ? 'er-num' : undefined));
    const body = el('tbody');
    for (const row of t.rows) {
      const tr = el('tr');
      row.forEach((cell, i) => {
        const td = i === 0 ? el('th') : el('td');
        if (i === 0) (td as HTMLTableCellElement).scope = 'row';
        if (t.numeric[i]) td.className = 'er-num';
        this.fillCell(td, cell);
        tr.append(td);
      });
      body.append(tr);
    }
    table.append(thead, body);
    wrap.append(table);
    return wrap;
  }

  private fillCell(td: HTMLElement, cell: ReportCell): void {
    if (typeof cell === 'string') {
      td.textContent = cell;
      return;
    }
    const list = el('span', 'er-links');
    for (const l of cell.links) {
      const b = el('button', 'er-link', l.text === l.rolloutId ? l.rolloutId.slice(0, 12) : l.text);
      b.type = 'button';
      b.dataset.rolloutId = l.rolloutId;
      b.title = l.title ? `${l.rolloutId}: ${l.title}` : `Open ${l.rolloutId} in the trace explorer`;
      b.setAttribute('aria-label', `Open rollout ${l.rolloutId}${l.text !== l.rolloutId ? ` (${l.text})` : ''} in the trace explorer`);
      b.addEventListener('click', () => this.client.command('trace/open', { rolloutId: l.rolloutId }));
      list.append(b);
    }
    td.append(list);
    if (cell.text) td.append(el('span', undefined, ` ${cell.text}`));
  }

  private async export(format: 'md' | 'html'): Promise<void> {
    const r = this.report;
    if (!r) return;
    this.status.textContent = `Exporting ${format === 'md' ? 'Markdown' : 'HTML'}…`;
    try {
      const res = await this.client.request('report/export', { runId: r.run.id, format });
      this.status.textContent = res.saved ? `Saved ${res.path ?? ''}` : 'Export cancelled';
    } catch (err) {
      this.status.textContent = `Export failed: ${(err as Error).message}`;
    }
  }

  private button(text: string, className: string, onClick: () => void): HTMLElement {
    const b = document.createElement('vscode-button');
    b.className = className;
    b.setAttribute('secondary', '');
    b.textContent = text;
    b.addEventListener('click', onClick);
    return b;
  }

  private setExportEnabled(on: boolean): void {
    for (const b of [this.exportMd, this.exportHtml]) {
      if (on) b.removeAttribute('disabled');
      else b.setAttribute('disabled', '');
    }
  }
}
