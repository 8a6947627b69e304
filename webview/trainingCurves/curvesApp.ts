import { extent } from 'd3';
import type { CurvesJob, CurvesPoint } from '../../src/shared/trainingCurvesProtocol';
import { el } from '../shared/dom';
import type { HostClient } from '../shared/hostClient';
import { MetricChart } from './metricChart';
import { curveMetrics, progressText, seriesOf } from './series';

/*
 * The Training Curves panel: one job's header (its id, phase, target and
 * state) and a small chart per metric that grows as the host sends the
 * points the job's log gains. Everything the job says is set as text.
 */

export class CurvesApp {
  private job: CurvesJob | null = null;
  private points: CurvesPoint[] = [];
  private totalSteps: number | null = null;
  private readonly charts = new Map<string, MetricChart>();
  private readonly title: HTMLElement;
  private readonly meta: HTMLElement;
  private readonly state: HTMLElement;
  private readonly error: HTMLElement;
  private readonly status: HTMLElement;
  private readonly grid: HTMLElement;
  private readonly live: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'trainingCurves'>,
  ) {
    root.classList.add('tc-root');
    const header = el('header', 'tc-header');
    const heading = el('div', 'tc-heading');
    this.title = el('h1', 'tc-title', client.getState().jobId ?? 'Training curves');
    this.state = el('span', 'tc-state');
    heading.append(this.title, this.state);
    this.meta = el('p', 'tc-meta muted');
    this.error = el('p', 'tc-error error');
    this.error.hidden = true;
    header.append(heading, this.meta, this.error);

    const toolbar = el('div', 'toolbar tc-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Training job');
    this.status = el('span', 'tc-status muted', 'Loading…');
    const spacer = el('span', 'tc-spacer');
    const logButton = document.createElement('vscode-button');
    logButton.className = 'tc-show-log';
    logButton.setAttribute('secondary', '');
    logButton.textContent = 'Show Log';
    logButton.addEventListener('click', () => this.client.command('job/showLog', {}));
    toolbar.append(this.status, spacer, logButton);

    this.grid = el('div', 'tc-grid-host');
    this.grid.setAttribute('role', 'list');
    this.live = el('div', 'tc-sr-only');
    this.live.setAttribute('aria-live', 'polite');
    root.append(header, toolbar, this.grid, this.live);
  }

  listen(): void {
    this.client.on('curves/reset', ({ job, points, folder, totalSteps }) => {
      this.points = [...points];
      this.totalSteps = totalSteps ?? null;
      this.setJob(job);
      this.client.setState({ jobId: job.id, folder });
      this.render();
      document.body.dataset.ready = 'true';
    });
    this.client.on('curves/append', ({ points, totalSteps }) => {
      this.points.push(...points);
      if (totalSteps) this.totalSteps = totalSteps;
      this.render();
    });
    this.client.on('curves/job', ({ job }) => {
      this.setJob(job);
      this.render();
    });
    this.client.on('curves/error', ({ message }) => {
      this.error.textContent = message;
      this.error.hidden = false;
      this.status.textContent = '';
      document.body.dataset.ready = 'true';
    });
  }

  private setJob(job: CurvesJob): void {
    this.job = job;
    this.title.textContent = job.id;
    this.state.textContent = job.state;
    this.state.className = `tc-state tc-state-${job.state}`;
    const target = job.targetName === job.targetKind ? job.targetName : `${job.targetName} (${job.targetKind})`;
    this.meta.textContent = `${job.kind} job of phase ${job.phase} on ${target} · base model ${job.baseModel}`;
    this.error.textContent = job.error && job.state !== 'cancelled' ? job.error : '';
    this.error.hidden = !this.error.textContent;
  }

  private render(): void {
    if (!this.job) return;
    // Every numeric metric the log has (small multiples of one chart); the set of charts only grows.
    const metrics = curveMetrics(this.job.kind, this.points);
    let added = false;
    for (const [i, m] of metrics.entries()) {
      if (!this.charts.has(m)) {
        const chart = new MetricChart(this.grid, m, i, (text) => (this.live.textContent = text));
        chart.root.setAttribute('role', 'listitem');
        this.charts.set(m, chart);
        added = true;
      }
    }
    // A metric that appears later takes its place in the order (the usual ones first).
    if (added) for (const m of metrics) this.grid.append(this.charts.get(m)!.root);
    const range = this.points.length ? (extent(this.points, (p) => p.step) as [number, number]) : null;
    for (const [m, chart] of this.charts) chart.setSeries(seriesOf(this.points, m), range);
    this.status.textContent = progressText(this.job, this.points, this.totalSteps);
    // A job that ended without a metric has no curves to wait for: the status line says so, no empty charts.
    this.grid.hidden = this.points.length === 0 && !['launching', 'running'].includes(this.job.state);
  }
}
