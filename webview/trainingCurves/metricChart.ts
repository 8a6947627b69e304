import { axisBottom, axisLeft, extent, line, scaleLinear, select, type Selection } from 'd3';
import { shortNumber } from '../../src/core/analysis/numberFormat';
import type { MetricSeries } from './series';
import { chartMessage, drawAxes, integerTicks, sizeChart } from '../shared/chartAxes';

/*
 * One small d3 line chart of a metric over the steps of a job: axes, the
 * line, a dot per step (up to a few hundred), and a keyboard cursor that
 * reads the value at a step out loud. Colours are CSS classes over
 * --vscode-* variables; text goes in as text only.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const MARGIN = { top: 10, right: 16, bottom: 34, left: 56 };
const HEIGHT = 160;
/** Beyond this many points the dots would hide the line; the cursor still reaches every step. */
const MAX_DOTS = 300;
export const PALETTE_SIZE = 6;

type Sel<E extends Element> = Selection<E, unknown, null, undefined>;

export class MetricChart {
  readonly root: HTMLElement;
  private readonly svg: Sel<SVGSVGElement>;
  private readonly last: HTMLElement;
  private series: MetricSeries;
  /** The job's steps from first to last, shared by every chart so they line up. */
  private steps: [number, number] | null = null;
  private cursor: number | null = null;
  private x = scaleLinear();
  private y = scaleLinear();

  constructor(
    host: HTMLElement,
    readonly metric: string,
    private readonly colour: number,
    /** Says a line out loud (the app's live region). */
    private readonly announce: (text: string) => void,
  ) {
    this.series = { metric, points: [] };
    this.root = document.createElement('figure');
    this.root.className = 'tc-card';
    this.root.dataset.metric = metric;
    const caption = document.createElement('figcaption');
    caption.className = 'tc-card-title';
    const name = document.createElement('span');
    name.className = 'tc-metric';
    name.textContent = metric;
    this.last = document.createElement('span');
    this.last.className = 'tc-last muted';
    caption.append(name, this.last);
    const svg = document.createElementNS(SVG_NS, 'svg');
    this.root.append(caption, svg);
    host.append(this.root);
    this.svg = select(svg).attr('class', 'tc-chart').attr('tabindex', 0).attr('role', 'img').attr('aria-roledescription', 'chart');
    this.svg.on('keydown', (ev: KeyboardEvent) => this.onKey(ev));
    this.svg.on('blur', () => this.setCursor(null));
    new ResizeObserver(() => this.draw()).observe(svg);
  }

  setSeries(series: MetricSeries, steps: [number, number] | null): void {
    this.series = series;
    this.steps = steps;
    if (this.cursor !== null && this.cursor >= series.points.length) this.cursor = null;
    const pts = series.points;
    const lastPoint = pts.at(-1);
    this.last.textContent = lastPoint ? `${shortNumber(lastPoint.value)} at step ${lastPoint.step}` : 'no values yet';
    this.svg.attr(
      'aria-label',
      `${this.metric} over steps: ${pts.length} point${pts.length === 1 ? '' : 's'}${lastPoint ? `, last ${shortNumber(lastPoint.value)} at step ${lastPoint.step}` : ''}. Left and right arrows move between steps, Home and End jump to the ends.`,
    );
    this.draw();
  }

  private draw(): void {
    const svgEl = this.svg.node()!;
    const width = svgEl.clientWidth || 420;
    const height = HEIGHT;
    this.svg.selectAll('*').remove();
    sizeChart(this.svg, width, height);
    const pts = this.series.points;
    if (pts.length === 0) {
      chartMessage(this.svg, width, height, 'tc-empty', `No ${this.metric} reported yet.`);
      return;
    }
    let [x0, x1] = this.steps ?? (extent(pts, (p) => p.step) as [number, number]);
    if (x0 === x1) [x0, x1] = [x0 - 1, x1 + 1];
    let [y0, y1] = extent(pts, (p) => p.value) as [number, number];
    if (y0 === y1) {
      const pad = Math.abs(y0) * 0.1 || 1;
      [y0, y1] = [y0 - pad, y1 + pad];
    }
    this.x = scaleLinear().domain([x0, x1]).range([MARGIN.left, width - MARGIN.right]);
    this.y = scaleLinear().domain([y0, y1]).nice().range([height - MARGIN.bottom, MARGIN.top]);
    const { x, y } = this;

    const xTicks = Math.max(2, Math.min(x1 - x0, Math.floor((width - MARGIN.left - MARGIN.right) / 60)));
    drawAxes(this.svg, { width, height, margin: MARGIN }, {
      prefix: 'tc',
      grid: { y, ticks: 4 },
      x: axisBottom(x).ticks(xTicks).tickFormat(integerTicks),
      y: axisLeft(y).ticks(4).tickFormat((v) => shortNumber(v.valueOf())),
      xTitle: 'step',
    });

    const path = line<{ step: number; value: number }>()
      .x((p) => x(p.step))
      .y((p) => y(p.value));
    this.svg
      .append('path')
      .attr('class', `tc-line tc-s${this.colour % PALETTE_SIZE}`)
      .attr('data-metric', this.metric)
      .attr('data-count', pts.length)
      .attr('d', path(pts));
    if (pts.length <= MAX_DOTS) {
      this.svg
        .append('g')
        .attr('class', 'tc-points')
        .selectAll('circle')
        .data(pts)
        .join('circle')
        .attr('class', `tc-point tc-f${this.colour % PALETTE_SIZE}`)
        .attr('data-step', (p) => p.step)
        .attr('data-value', (p) => p.value)
        .attr('cx', (p) => x(p.step))
        .attr('cy', (p) => y(p.value))
        .attr('r', 2.5);
    }
    this.svg.append('g').attr('class', 'tc-cursor-layer');
    this.drawCursor();
  }

  private drawCursor(): void {
    const layer = this.svg.select<SVGGElement>('.tc-cursor-layer');
    layer.selectAll('*').remove();
    const p = this.cursor === null ? undefined : this.series.points[this.cursor];
    if (!p) return;
    const cx = this.x(p.step);
    const [b, t] = this.y.range() as [number, number];
    layer.append('line').attr('class', 'tc-cursor-line').attr('x1', cx).attr('x2', cx).attr('y1', b).attr('y2', t);
    layer.append('circle').attr('class', 'tc-cursor-dot').attr('cx', cx).attr('cy', this.y(p.value)).attr('r', 5);
  }

  private setCursor(i: number | null): void {
    if (i === this.cursor) return;
    this.cursor = i;
    this.drawCursor();
    const p = i === null ? undefined : this.series.points[i];
    if (p) {
      this.last.textContent = `${shortNumber(p.value)} at step ${p.step}`;
      this.announce(`${this.metric} at step ${p.step}: ${shortNumber(p.value)}`);
    } else {
      const lastPoint = this.series.points.at(-1);
      this.last.textContent = lastPoint ? `${shortNumber(lastPoint.value)} at step ${lastPoint.step}` : 'no values yet';
    }
  }

  private onKey(ev: KeyboardEvent): void {
    const n = this.series.points.length;
    if (!n) return;
    const cur = this.cursor;
    let next: number | null = null;
    if (ev.key === 'ArrowRight') next = cur === null ? 0 : Math.min(n - 1, cur + 1);
    else if (ev.key === 'ArrowLeft') next = cur === null ? n - 1 : Math.max(0, cur - 1);
    else if (ev.key === 'Home') next = 0;
    else if (ev.key === 'End') next = n - 1;
    else if (ev.key === 'Escape') {
      this.setCursor(null);
      return;
    }
    if (next === null) return;
    ev.preventDefault();
    this.setCursor(next);
  }
}
