import type { VscodeCheckbox } from '@vscode-elements/elements/dist/vscode-checkbox/vscode-checkbox.js';
import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import type { RequestResults, RewardPoint } from '../../src/shared/protocol';
import type { HostClient } from '../shared/hostClient';
import { coalescingLoad } from '../shared/coalescingLoad';
import { el, tableHead } from '../shared/dom';
import { PALETTE_SIZE, RewardChart, shortVersion } from './chart';
import { svgToPngBase64, type LegendEntry } from './pngExport';
import { DEFAULT_WINDOW, agentsOf, parseSplit, rollingMean, runMarkLabel, seriesCsv, splitKey, versionGroups, versionOf, type SplitBy } from './series';
import { fillRunPicker } from '../shared/runPicker';
import { LearningCurveView } from './learningCurve';

/*
 * The Reward Curve panel: reward per rollout in start order with its rolling
 * mean, per-criterion lines, a split by prompt or model version, a table
 * view, and PNG / CSV export through the host. Redraws when the store changes.
 */

const MAX_WINDOW = 10_000;

export class RewardCurveApp {
  private series: RequestResults['rewards/series'] | null = null;
  private window = DEFAULT_WINDOW;
  private split: SplitBy = { kind: 'none' };
  private shown = new Set<string>();
  private runId: string | null = null;
  private table = false;
  /** The y axis from 0 to 1 (otherwise fitted to the rewards shown). */
  private fullScale = false;
  /** What the chart calls each run on its band. */
  private runLabels: Record<string, string> = {};
  /** 'rollouts': reward per rollout; 'versions': validation reward per model version (the learning curve). */
  private view: 'rollouts' | 'versions' = 'rollouts';
  private readonly chart: RewardChart;
  private readonly learning: LearningCurveView;
  private readonly viewPicker: VscodeSingleSelect;
  private readonly perRollout: HTMLElement[];
  private readonly windowInput: VscodeTextfield;
  private readonly splitPicker: VscodeSingleSelect;
  private readonly runPicker: VscodeSingleSelect;
  private readonly criteriaBox: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly live: HTMLElement;
  private readonly status: HTMLElement;
  private readonly tableHost: HTMLElement;
  private readonly chartHost: HTMLElement;
  private readonly tableButton: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'rewardCurve'>,
  ) {
    root.classList.add('rc-root');
    const st = client.getState();
    if (st.window) this.window = Math.min(MAX_WINDOW, Math.floor(st.window));
    this.split = parseSplit(st.split);
    if (st.criteria) this.shown = new Set(st.criteria);
    this.runId = st.runId ?? null;
    this.table = st.table === true;
    this.fullScale = st.fullScale === true;
    this.view = st.view ?? 'rollouts';

    const toolbar = el('div', 'toolbar rc-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Reward curve');

    const viewLabel = el('label', 'rc-field');
    viewLabel.append(el('span', undefined, 'Show'));
    this.viewPicker = document.createElement('vscode-single-select');
    this.viewPicker.className = 'rc-view';
    this.viewPicker.setAttribute('aria-label', 'Show reward per rollout or validation reward per model version');
    this.viewPicker.options = [
      { label: 'Reward per rollout', value: 'rollouts', description: '', selected: this.view === 'rollouts', disabled: false },
      { label: 'Validation per model version', value: 'versions', description: '', selected: this.view === 'versions', disabled: false },
    ];
    this.viewPicker.value = this.view;
    this.viewPicker.addEventListener('change', () => this.setView(this.viewPicker.value === 'versions' ? 'versions' : 'rollouts'));
    viewLabel.append(this.viewPicker);

    const windowLabel = el('label', 'rc-field');
    windowLabel.append(el('span', undefined, 'Rolling mean of'));
    this.windowInput = document.createElement('vscode-textfield');
    this.windowInput.className = 'rc-window';
    this.windowInput.type = 'number';
    this.windowInput.min = 1;
    this.windowInput.max = MAX_WINDOW;
    this.windowInput.value = String(this.window);
    this.windowInput.setAttribute('aria-label', 'Rolling mean window (rollouts)');
    this.windowInput.addEventListener('input', () => this.onWindow());
    this.windowInput.addEventListener('change', () => this.onWindow());
    windowLabel.append(this.windowInput);

    const splitLabel = el('label', 'rc-field');
    splitLabel.append(el('span', undefined, 'Split by'));
    this.splitPicker = document.createElement('vscode-single-select');
    this.splitPicker.className = 'rc-split';
    this.splitPicker.setAttribute('aria-label', 'Split by version');
    this.splitPicker.addEventListener('change', () => {
      this.split = parseSplit(this.splitPicker.value);
      this.client.setState({ split: splitKey(this.split) });
      this.redraw();
    });
    splitLabel.append(this.splitPicker);

    this.runPicker = document.createElement('vscode-single-select');
    this.runPicker.className = 'rc-run';
    this.runPicker.setAttribute('aria-label', 'Run');
    this.runPicker.addEventListener('change', () => {
      const id = this.runPicker.value || null;
      if (id === this.runId) return;
      this.runId = id;
      this.client.setState({ runId: id ?? undefined });
      void this.load();
    });

    this.tableButton = document.createElement('vscode-button');
    this.tableButton.className = 'rc-table-toggle';
    this.tableButton.setAttribute('secondary', '');
    this.tableButton.addEventListener('click', () => this.setTable(!this.table));
    const png = document.createElement('vscode-button');
    png.className = 'rc-export-png';
    png.setAttribute('secondary', '');
    png.textContent = 'Export PNG';
    png.addEventListener('click', () => void this.exportPng());
    const csv = document.createElement('vscode-button');
    csv.className = 'rc-export-csv';
    csv.setAttribute('secondary', '');
    csv.textContent = 'Export CSV';
    csv.addEventListener('click', () => void this.exportCsv());
    const fullScale = document.createElement('vscode-checkbox');
    fullScale.className = 'rc-full-scale';
    fullScale.label = 'Scale 0–1';
    fullScale.checked = this.fullScale;
    fullScale.title = 'Draw the reward axis from 0 to 1 instead of fitting it to the rewards shown';
    fullScale.addEventListener('change', () => {
      this.fullScale = fullScale.checked;
      this.client.setState({ fullScale: this.fullScale });
      this.redraw();
    });
    this.status = el('span', 'rc-status muted');
    this.status.setAttribute('role', 'status');
    toolbar.append(viewLabel, this.runPicker, windowLabel, splitLabel, fullScale, el('span', 'rc-spacer'), this.tableButton, png, csv);

    const criteriaRow = el('div', 'rc-criteria-row');
    this.criteriaBox = el('div', 'rc-criteria');
    this.criteriaBox.setAttribute('role', 'group');
    this.criteriaBox.setAttribute('aria-label', 'Criteria lines (rolling means)');
    criteriaRow.append(this.criteriaBox, this.status);

    this.chartHost = el('div', 'rc-stage');
    this.chart = new RewardChart(this.chartHost, {
      onCursor: (i) => this.showTooltip(i),
      onOpen: (i) => {
        const p = this.series?.points[i];
        if (p) this.client.command('trace/open', { rolloutId: p.rolloutId });
      },
    });
    this.tooltip = el('div', 'rc-tooltip');
    this.tooltip.hidden = true;
    this.tooltip.setAttribute('aria-hidden', 'true');
    this.chartHost.append(this.tooltip);
    this.live = el('div', 'rc-sr-only');
    this.live.setAttribute('aria-live', 'polite');
    this.tableHost = el('div', 'rc-table-host');
    this.tableHost.tabIndex = 0;
    this.tableHost.setAttribute('role', 'region');
    this.tableHost.setAttribute('aria-label', 'Rewards as a table');
    this.legend = el('div', 'rc-legend');
    this.learning = new LearningCurveView();
    root.append(toolbar, criteriaRow, this.chartHost, this.tableHost, this.legend, this.learning.root, this.live);
    this.perRollout = [this.runPicker, windowLabel, splitLabel, fullScale, this.tableButton, png, csv, criteriaRow, this.legend];
    this.setTable(this.table);
    this.showView();
  }

  /** Switches between reward per rollout and validation reward per model version. */
  setView(view: 'rollouts' | 'versions'): void {
    if (view !== this.view) {
      this.view = view;
      this.client.setState({ view });
    }
    this.viewPicker.value = view;
    this.showView();
    if (view === 'versions') void this.loadCurve();
  }

  private showView(): void {
    const versions = this.view === 'versions';
    for (const e of this.perRollout) e.hidden = versions;
    this.chartHost.hidden = versions || this.table;
    this.tableHost.hidden = versions || !this.table;
    this.learning.root.hidden = !versions;
  }

  /** Loads the learning curve (validation reward per model version). */
  private readonly loadCurve = coalescingLoad(async () => {
    try {
      this.learning.setData(await this.client.request('rewards/learningCurve', {}));
    } catch (err) {
      this.learning.setMessage(`Cannot load the validation reward per model version: ${(err as Error).message}`);
    }
  });

  listen(): void {
    this.client.on('store/changed', () => {
      void this.load();
      void this.loadRuns();
      if (this.view === 'versions') void this.loadCurve();
    });
    this.client.on('rewards/showLearningCurve', () => this.setView('versions'));
  }

  async start(): Promise<void> {
    await Promise.all([this.load(), this.loadRuns(), ...(this.view === 'versions' ? [this.loadCurve()] : [])]);
    document.body.dataset.ready = 'true';
  }

  /** Loads the series; a change that arrives during a load triggers one more load after it. */
  private readonly load = coalescingLoad(async () => {
    try {
      this.series = await this.client.request('rewards/series', this.runId ? { runId: this.runId } : {});
      this.status.textContent = '';
    } catch (err) {
      this.status.textContent = `Cannot load rewards: ${(err as Error).message}`;
    }
    this.fillControls();
    this.redraw();
  });

  private async loadRuns(): Promise<void> {
    const runs = await fillRunPicker(this.client, this.runPicker, this.runId);
    this.runLabels = Object.fromEntries(runs.map((r) => [r.id, runMarkLabel(r.id, r.params)]));
    this.redraw();
  }

  private fillControls(): void {
    const s = this.series;
    if (!s) return;
    // Split choices: none, then each agent's prompt and model version.
    const agents = agentsOf(s.points);
    const opts = [{ label: 'No split', value: 'none', description: '', selected: false, disabled: false }];
    for (const a of agents) opts.push({ label: `Prompt version of ${a}`, value: `prompt:${a}`, description: '', selected: false, disabled: false });
    for (const a of agents) opts.push({ label: `Model version of ${a}`, value: `model:${a}`, description: '', selected: false, disabled: false });
    let key = splitKey(this.split);
    if (!opts.some((o) => o.value === key)) {
      if (agents.length) {
        this.split = { kind: 'none' };
        key = 'none';
      } else if (key !== 'none') {
        opts.push({ label: key, value: key, description: 'no rollouts yet', selected: false, disabled: false });
      }
    }
    for (const o of opts) o.selected = o.value === key;
    if (JSON.stringify(opts) !== JSON.stringify(this.splitPicker.options.map((o) => ({ ...o })))) this.splitPicker.options = opts;
    this.splitPicker.value = key;

    const present = new Set(Array.from(this.criteriaBox.querySelectorAll<VscodeCheckbox>('vscode-checkbox')).map((c) => c.dataset.criterion));
    if (s.criteria.length !== present.size || s.criteria.some((c) => !present.has(c))) {
      this.criteriaBox.replaceChildren(el('span', 'rc-criteria-title muted', 'Criteria:'));
      s.criteria.forEach((c, i) => {
        const box = document.createElement('vscode-checkbox');
        box.className = `rc-criterion-toggle rc-k${i % PALETTE_SIZE}`;
        box.dataset.criterion = c;
        box.label = c;
        box.checked = this.shown.has(c);
        box.addEventListener('change', () => {
          if (box.checked) this.shown.add(c);
          else this.shown.delete(c);
          this.client.setState({ criteria: [...this.shown] });
          this.redraw();
        });
        const item = el('span', 'rc-criterion-item');
        item.append(el('span', `rc-swatch rc-k${i % PALETTE_SIZE}`), box);
        this.criteriaBox.append(item);
      });
    }
  }

  private onWindow(): void {
    const v = Math.floor(Number(this.windowInput.value));
    if (!Number.isFinite(v) || v < 1) return;
    const w = Math.min(MAX_WINDOW, v);
    if (w === this.window) return;
    this.window = w;
    this.client.setState({ window: w });
    this.redraw();
  }

  private setTable(on: boolean): void {
    this.table = on;
    this.client.setState({ table: on });
    this.tableButton.textContent = on ? 'Show chart' : 'Show table';
    this.tableButton.setAttribute('aria-pressed', String(on));
    this.chartHost.hidden = on || this.view === 'versions';
    this.tableHost.hidden = !on || this.view === 'versions';
    this.redraw();
  }

  private redraw(): void {
    const s = this.series;
    const points = s?.points ?? [];
    const shown = (s?.criteria ?? []).filter((c) => this.shown.has(c));
    if (s) this.chart.setData({ points, criteria: s.criteria, shownCriteria: shown, window: this.window, split: this.split, fullScale: this.fullScale, runLabels: this.runLabels });
    this.renderLegend(points, s?.criteria ?? [], shown);
    if (this.table) this.renderTable(points, s?.criteria ?? []);
    if (s) {
      const mean = rollingMean(
        points.map((p) => p.finalReward),
        this.window,
      );
      const last = mean[mean.length - 1];
      this.status.textContent = points.length
        ? `${points.length} rollouts · rolling mean ${last == null ? '–' : last.toFixed(3)}`
        : 'No finished rollouts with a reward yet';
    }
  }

  private renderLegend(points: RewardPoint[], criteria: string[], shown: string[]): void {
    this.legend.replaceChildren();
    const item = (swatch: string, text: string, data?: Record<string, string>): HTMLElement => {
      const it = el('span', 'rc-legend-item');
      it.append(el('span', `rc-swatch ${swatch}`), el('span', undefined, text));
      for (const [k, v] of Object.entries(data ?? {})) it.dataset[k] = v;
      this.legend.append(it);
      return it;
    };
    if (this.split.kind === 'none') item('rc-swatch-point', 'reward per rollout');
    item('rc-swatch-mean', `rolling mean (${this.window})`);
    for (const c of shown) item(`rc-swatch-line rc-k${criteria.indexOf(c) % PALETTE_SIZE}`, c, { criterion: c });
    if (this.split.kind !== 'none') {
      const what = this.split.kind === 'prompt' ? 'prompt' : 'model';
      this.legend.append(el('span', 'rc-legend-title muted', `${what} version of ${this.split.agent}:`));
      versionGroups(points, this.split).forEach((g, i) => {
        const it = item(`rc-swatch-dot rc-k${i % PALETTE_SIZE}`, `${shortVersion(g.version)} (${g.count})`, { version: g.version });
        it.classList.add('rc-legend-version');
        it.title = g.version;
      });
    }
  }

  private renderTable(points: RewardPoint[], criteria: string[]): void {
    const table = el('table', 'rc-table');
    const cap = el('caption', 'rc-sr-only', 'Final reward and criteria per rollout, in start order');
    const cols = ['#', 'Rollout', 'Task', 'Run', 'Started', 'Reward', `Mean (${this.window})`, ...criteria];
    if (this.split.kind !== 'none') cols.push(`${this.split.kind === 'prompt' ? 'Prompt' : 'Model'} of ${this.split.agent}`);
    const thead = tableHead(cols);
    const body = el('tbody');
    const mean = rollingMean(
      points.map((p) => p.finalReward),
      this.window,
    );
    points.forEach((p, i) => {
      const tr = el('tr');
      tr.dataset.rollout = p.rolloutId;
      const cells = [
        String(i + 1),
        p.rolloutId.slice(0, 8),
        p.taskId,
        p.runId,
        new Date(p.startTime).toLocaleString(),
        p.finalReward.toFixed(3),
        mean[i] == null ? '' : mean[i]!.toFixed(3),
        ...criteria.map((c) => (p.criteria?.[c] == null ? '' : p.criteria[c]!.toFixed(2))),
      ];
      if (this.split.kind !== 'none') cells.push(versionOf(p, this.split));
      for (const c of cells) tr.append(el('td', undefined, c));
      body.append(tr);
    });
    table.append(cap, thead, body);
    this.tableHost.replaceChildren(table);
  }

  private showTooltip(i: number | null): void {
    const p = i === null ? undefined : this.series?.points[i];
    const at = i === null ? null : this.chart.pointPosition(i);
    if (!p || !at || i === null) {
      this.tooltip.hidden = true;
      return;
    }
    const lines = [
      `Rollout ${i + 1} of ${this.series!.points.length}: ${p.rolloutId}`,
      `Task ${p.taskId}`,
      `Reward ${p.finalReward.toFixed(3)}`,
      `Started ${new Date(p.startTime).toLocaleString()}`,
    ];
    if (this.split.kind !== 'none') lines.push(`${this.split.kind === 'prompt' ? 'Prompt' : 'Model'} of ${this.split.agent}: ${versionOf(p, this.split)}`);
    this.tooltip.replaceChildren(...lines.map((l, k) => el('div', k === 0 ? 'rc-tooltip-title' : undefined, l)));
    this.tooltip.hidden = false;
    const hostW = this.chartHost.clientWidth;
    const w = this.tooltip.offsetWidth;
    const left = at.x + 14 + w > hostW ? at.x - 14 - w : at.x + 14;
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${Math.max(0, at.y - 20)}px`;
    this.live.textContent = `Rollout ${i + 1}: task ${p.taskId}, reward ${p.finalReward.toFixed(3)}`;
  }

  private async exportPng(): Promise<void> {
    const wasTable = this.table;
    try {
      if (wasTable) this.setTable(false);
      const data = await svgToPngBase64(this.chart.svg.node()!, this.legendEntries());
      await this.save('png', data);
    } catch (err) {
      this.status.textContent = `PNG export failed: ${(err as Error).message}`;
    } finally {
      if (wasTable) this.setTable(true);
    }
  }

  /** The HTML legend as it looks now, for the exported image. */
  private legendEntries(): LegendEntry[] {
    return Array.from(this.legend.children).map((item): LegendEntry => {
      if (!item.classList.contains('rc-legend-item')) return { text: item.textContent ?? '', swatch: null };
      const sw = item.querySelector('.rc-swatch');
      const text = item.lastElementChild?.textContent ?? '';
      if (!sw) return { text, swatch: null };
      const cs = getComputedStyle(sw);
      const dot = sw.classList.contains('rc-swatch-dot') || sw.classList.contains('rc-swatch-point');
      return {
        text,
        swatch: dot ? { shape: 'dot', colour: cs.backgroundColor, dashed: false } : { shape: 'line', colour: cs.borderTopColor, dashed: cs.borderTopStyle === 'dashed' },
      };
    });
  }

  private async exportCsv(): Promise<void> {
    const s = this.series;
    if (!s) return;
    await this.save('csv', seriesCsv(s.points, s.criteria));
  }

  private async save(format: 'png' | 'csv', data: string): Promise<void> {
    const name = `reward-curve-${(this.runId ?? 'all-runs').replace(/[^\w.-]/g, '_')}.${format}`;
    try {
      const r = await this.client.request('export/save', { format, suggestedName: name, data });
      this.status.textContent = r.saved ? `Saved ${r.path ?? name}` : 'Export cancelled';
    } catch (err) {
      this.status.textContent = `Export failed: ${(err as Error).message}`;
    }
  }
}
