import { axisBottom, axisLeft, line, scaleLinear, select, type Selection } from 'd3';
import type { RewardPoint } from '../../src/shared/protocol';
import { rewardDomain, rollingMean, runMarkLabel, runSpans, versionChanges, versionGroups, versionOf, type SplitBy } from './series';
import { chartMessage, drawAxes, integerTicks, sizeChart } from '../shared/chartAxes';

/*
 * The reward curve drawn with d3: a dot per rollout in start order, the
 * rolling mean, optional per-criterion rolling means, and with a split, dots
 * coloured by version with a marker where the version changes. Colours are
 * CSS classes over --vscode-* variables; text goes in through .text().
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const MARGIN = { top: 28, right: 24, bottom: 40, left: 52 };
/** Chart colours in the order versions and criteria take them. */
export const PALETTE_SIZE = 6;

export interface ChartData {
  points: RewardPoint[];
  criteria: string[];
  shownCriteria: string[];
  window: number;
  split: SplitBy;
  /** The y axis from 0 to 1 instead of fitted to the data. */
  fullScale?: boolean;
  /** What each run is called on its band ("eval 265cc9"); runs not listed are named by their id. */
  runLabels?: Readonly<Record<string, string>>;
}

export interface ChartHandlers {
  /** The point under the pointer or keyboard cursor changed (null: none). */
  onCursor(index: number | null): void;
  /** Enter on a point: open it. */
  onOpen(index: number): void;
}

type Sel<E extends Element> = Selection<E, unknown, null, undefined>;

export class RewardChart {
  readonly svg: Sel<SVGSVGElement>;
  private data: ChartData | null = null;
  private cursor: number | null = null;
  private x = scaleLinear();
  private y = scaleLinear();

  constructor(
    host: HTMLElement,
    private readonly handlers: ChartHandlers,
  ) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    host.append(svg);
    this.svg = select(svg)
      .attr('class', 'rc-chart')
      .attr('tabindex', 0)
      .attr('role', 'img')
      .attr('aria-roledescription', 'chart')
      .attr('aria-label', 'Reward per rollout. Left and right arrows move between rollouts, Home and End jump to the ends, Enter opens the rollout.');
    this.svg.on('keydown', (ev: KeyboardEvent) => this.onKey(ev));
    this.svg.on('mousemove', (ev: MouseEvent) => this.onPointer(ev));
    this.svg.on('mouseleave', () => this.setCursor(null));
    this.svg.on('click', (ev: MouseEvent) => {
      // Only a click on (or right by) a dot opens its rollout.
      const i = this.nearest(ev);
      const at = i === null ? null : this.pointPosition(i);
      if (i === null || !at) return;
      const rect = this.svg.node()!.getBoundingClientRect();
      if (Math.hypot(ev.clientX - rect.left - at.x, ev.clientY - rect.top - at.y) <= 12) this.handlers.onOpen(i);
    });
    this.svg.on('blur', () => this.setCursor(null));
    new ResizeObserver(() => this.draw()).observe(svg);
  }

  setData(data: ChartData): void {
    this.data = data;
    if (this.cursor !== null && this.cursor >= data.points.length) this.cursor = null;
    this.draw();
  }

  get cursorIndex(): number | null {
    return this.cursor;
  }

  /** Screen position of a point, for the tooltip. */
  pointPosition(i: number): { x: number; y: number } | null {
    const p = this.data?.points[i];
    if (!p) return null;
    return { x: this.x(i + 1), y: this.y(p.finalReward) };
  }

  private draw(): void {
    const svgEl = this.svg.node()!;
    const width = svgEl.clientWidth || 800;
    const height = svgEl.clientHeight || 400;
    this.svg.selectAll('g, text.rc-empty').remove();
    sizeChart(this.svg, width, height);
    const d = this.data;
    if (!d || !d.points.length) {
      chartMessage(this.svg, width, height, 'rc-empty', d ? 'No finished rollouts with a reward yet.' : 'Loading…');
      return;
    }
    const pts = d.points;
    const n = pts.length;
    const criterionValues = d.shownCriteria.map((c) => ({ c, values: pts.map((p) => p.criteria?.[c] ?? null) }));
    // The axis fits what is drawn: the rewards and the criteria's rolling means (a single 0 score must not stretch it).
    const all = [...pts.map((p) => p.finalReward), ...criterionValues.flatMap((cv) => rollingMean(cv.values, d.window).filter((v): v is number => v !== null))];
    this.x = scaleLinear()
      .domain([0.5, n + 0.5])
      .range([MARGIN.left, width - MARGIN.right]);
    this.y = scaleLinear().domain(rewardDomain(all, d.fullScale === true)).nice().range([height - MARGIN.bottom, MARGIN.top]);
    const x = this.x;
    const y = this.y;
    this.svg.attr('data-y-domain', JSON.stringify(y.domain()));

    const xTicks = Math.max(2, Math.min(n, Math.floor((width - MARGIN.left - MARGIN.right) / 70)));
    drawAxes(this.svg, { width, height, margin: MARGIN }, {
      prefix: 'rc',
      grid: { y, ticks: 5 },
      x: axisBottom(x).ticks(xTicks).tickFormat(integerTicks),
      y: axisLeft(y).ticks(5),
      xTitle: 'rollout (start order)',
      yTitle: 'final reward',
    });

    this.drawRuns(d, height);

    // Version changes under everything else but the runs.
    const groups = versionGroups(pts, d.split);
    const colourOf = new Map(groups.map((g, i) => [g.version, i % PALETTE_SIZE]));
    const markers = this.svg.append('g').attr('class', 'rc-version-changes');
    for (const ch of versionChanges(pts, d.split)) {
      const xm = (x(ch.index) + x(ch.index + 1)) / 2;
      const g = markers.append('g').attr('class', 'rc-version-change').attr('data-index', ch.index).attr('data-version', ch.to);
      g.append('line').attr('x1', xm).attr('x2', xm).attr('y1', MARGIN.top - 6).attr('y2', height - MARGIN.bottom);
      g.append('text')
        .attr('class', `rc-c${colourOf.get(ch.to) ?? 0}`)
        .attr('x', xm + 3)
        .attr('y', MARGIN.top - 10)
        .text(`→ ${shortVersion(ch.to)}`);
      g.append('title').text(`from rollout ${ch.index + 1}: ${ch.from} → ${ch.to}`);
    }

    const path = line<number | null>()
      .defined((v) => v !== null)
      .x((_v, i) => x(i + 1))
      .y((v) => y(v ?? 0));
    const lines = this.svg.append('g').attr('class', 'rc-lines');
    criterionValues.forEach(({ c, values }) => {
      const mean = rollingMean(values, d.window);
      const idx = d.criteria.indexOf(c);
      lines
        .append('path')
        .attr('class', `rc-criterion rc-s${(idx < 0 ? 0 : idx) % PALETTE_SIZE}`)
        .attr('data-criterion', c)
        .attr('data-values', JSON.stringify(mean))
        .attr('d', path(mean))
        .append('title')
        .text(`${c} (rolling mean of ${d.window})`);
    });

    const dots = this.svg.append('g').attr('class', 'rc-points');
    dots
      .selectAll('circle')
      .data(pts)
      .join('circle')
      .attr('class', (p) => (d.split.kind === 'none' ? 'rc-point' : `rc-point rc-f${colourOf.get(versionOf(p, d.split)) ?? 0}`))
      .attr('data-index', (_p, i) => i)
      .attr('data-rollout', (p) => p.rolloutId)
      .attr('data-reward', (p) => p.finalReward)
      .attr('data-version', (p) => (d.split.kind === 'none' ? null : versionOf(p, d.split)))
      .attr('cx', (_p, i) => x(i + 1))
      .attr('cy', (p) => y(p.finalReward))
      .attr('r', n > 400 ? 2.5 : 4.5);

    const mean = rollingMean(
      pts.map((p) => p.finalReward),
      d.window,
    );
    this.svg
      .append('g')
      .attr('class', 'rc-mean-layer')
      .append('path')
      .attr('class', 'rc-mean')
      .attr('data-window', d.window)
      .attr('data-values', JSON.stringify(mean))
      .attr('d', path(mean))
      .append('title')
      .text(`rolling mean of ${d.window}`);

    this.svg.append('g').attr('class', 'rc-cursor-layer');
    this.drawCursor();
  }

  /**
   * Which points came from which run: a band per stretch of a run's points
   * (every other one shaded), a line where one run gives way to the next and
   * the run's name at the top of its band when it fits. Only with points from
   * more than one run.
   */
  private drawRuns(d: ChartData, height: number): void {
    const spans = runSpans(d.points);
    if (new Set(spans.map((s) => s.runId)).size < 2) return;
    const x = this.x;
    const layer = this.svg.append('g').attr('class', 'rc-runbands');
    spans.forEach((s, k) => {
      const x0 = x(s.first + 0.5);
      const x1 = x(s.last + 1.5);
      const label = d.runLabels?.[s.runId] ?? runMarkLabel(s.runId, undefined);
      const g = layer
        .append('g')
        .attr('class', `rc-runband ${k % 2 ? 'rc-runband-odd' : 'rc-runband-even'}`)
        .attr('data-run', s.runId)
        .attr('data-first', s.first)
        .attr('data-last', s.last)
        .attr('data-label', label);
      g.append('rect').attr('x', x0).attr('y', MARGIN.top).attr('width', Math.max(0, x1 - x0)).attr('height', Math.max(0, height - MARGIN.bottom - MARGIN.top));
      if (k > 0) g.append('line').attr('class', 'rc-runband-boundary').attr('x1', x0).attr('x2', x0).attr('y1', MARGIN.top).attr('y2', height - MARGIN.bottom);
      // About 6 px a character at 10 px: the name, cut to the band, or nothing in a sliver.
      const room = Math.floor((x1 - x0 - 8) / 6);
      if (room >= 4) {
        g.append('text')
          .attr('class', 'rc-runband-label')
          .attr('x', x0 + 4)
          .attr('y', MARGIN.top + 12)
          .text(label.length > room ? `${label.slice(0, room - 1)}…` : label);
      }
      g.append('title').text(`${label} (run ${s.runId}): rollouts ${s.first + 1}–${s.last + 1}`);
    });
  }

  private drawCursor(): void {
    const layer = this.svg.select<SVGGElement>('.rc-cursor-layer');
    layer.selectAll('*').remove();
    const i = this.cursor;
    const p = i === null ? null : this.data?.points[i];
    if (i === null || !p) return;
    const cx = this.x(i + 1);
    const [y0, y1] = this.y.range() as [number, number];
    layer.append('line').attr('class', 'rc-cursor-line').attr('x1', cx).attr('x2', cx).attr('y1', y0).attr('y2', y1);
    layer.append('circle').attr('class', 'rc-cursor-dot').attr('cx', cx).attr('cy', this.y(p.finalReward)).attr('r', 6);
  }

  setCursor(i: number | null): void {
    if (i === this.cursor) return;
    this.cursor = i;
    this.drawCursor();
    this.handlers.onCursor(i);
  }

  private nearest(ev: MouseEvent): number | null {
    const n = this.data?.points.length ?? 0;
    if (!n) return null;
    const rect = this.svg.node()!.getBoundingClientRect();
    const px = ev.clientX - rect.left;
    const [x0, x1] = this.x.range() as [number, number];
    if (px < x0 - 10 || px > x1 + 10) return null;
    return Math.max(0, Math.min(n - 1, Math.round(this.x.invert(px)) - 1));
  }

  private onPointer(ev: MouseEvent): void {
    this.setCursor(this.nearest(ev));
  }

  private onKey(ev: KeyboardEvent): void {
    const n = this.data?.points.length ?? 0;
    if (!n) return;
    const cur = this.cursor;
    let next: number | null = null;
    if (ev.key === 'ArrowRight') next = cur === null ? 0 : Math.min(n - 1, cur + 1);
    else if (ev.key === 'ArrowLeft') next = cur === null ? n - 1 : Math.max(0, cur - 1);
    else if (ev.key === 'PageDown') next = Math.min(n - 1, (cur ?? -1) + 10);
    else if (ev.key === 'PageUp') next = Math.max(0, (cur ?? n) - 10);
    else if (ev.key === 'Home') next = 0;
    else if (ev.key === 'End') next = n - 1;
    else if (ev.key === 'Enter' && cur !== null) {
      ev.preventDefault();
      this.handlers.onOpen(cur);
      return;
    } else if (ev.key === 'Escape') {
      this.setCursor(null);
      return;
    }
    if (next === null) return;
    ev.preventDefault();
    this.setCursor(next);
  }
}

export function shortVersion(v: string): string {
  return v.length > 14 ? `${v.slice(0, 12)}…` : v;
}
