import { axisBottom, axisLeft, scaleBand, scaleLinear, select, type Selection } from 'd3';
import type { Distribution } from '../../src/core/reward/rescore';

/*
 * Before/after histograms of final rewards, drawn with d3 as grouped bars
 * over the ten reward bins, with each side's mean marked. Colours come from
 * CSS classes over --vscode-* variables; text goes in through .text().
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const MARGIN = { top: 16, right: 16, bottom: 42, left: 48 };
const BINS = 10;

type Series = 'before' | 'after';

export class RewardHistogram {
  readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  private data: { before: Distribution; after: Distribution } | null = null;

  constructor(host: HTMLElement) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    host.append(svg);
    this.svg = select(svg).attr('class', 'rw-histogram').attr('role', 'img').attr('aria-roledescription', 'chart');
    new ResizeObserver(() => this.draw()).observe(svg);
  }

  setData(before: Distribution, after: Distribution): void {
    this.data = { before, after };
    this.draw();
  }

  private draw(): void {
    const node = this.svg.node()!;
    const width = node.clientWidth || 640;
    const height = node.clientHeight || 240;
    this.svg.selectAll('*').remove();
    this.svg.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
    const d = this.data;
    if (!d) return;
    const bins = Array.from({ length: BINS }, (_v, i) => i);
    const max = Math.max(1, ...d.before.histogram, ...d.after.histogram);
    const x = scaleBand<number>()
      .domain(bins)
      .range([MARGIN.left, width - MARGIN.right])
      .paddingInner(0.2)
      .paddingOuter(0.1);
    const inner = scaleBand<Series>().domain(['before', 'after']).range([0, x.bandwidth()]).padding(0.08);
    const y = scaleLinear().domain([0, max]).nice().range([height - MARGIN.bottom, MARGIN.top]);
    // Reward (0..1) to a horizontal position, for the mean markers: bins are equal-width steps of 0.1.
    const at = (v: number): number => {
      const i = Math.min(BINS - 1, Math.max(0, Math.floor(v * BINS)));
      const frac = Math.min(1, Math.max(0, v * BINS - i));
      return x(i)! + frac * x.bandwidth();
    };

    this.svg
      .attr(
        'aria-label',
        `Final reward histogram, ${d.before.count} rollouts. Before: mean ${fmt(d.before.mean)}. After: mean ${fmt(d.after.mean)}.`,
      )
      .append('g')
      .attr('class', 'rw-grid')
      .selectAll('line')
      .data(y.ticks(Math.min(5, max)))
      .join('line')
      .attr('x1', MARGIN.left)
      .attr('x2', width - MARGIN.right)
      .attr('y1', (t) => y(t))
      .attr('y2', (t) => y(t));

    this.svg
      .append('g')
      .attr('class', 'rw-axis rw-axis-x')
      .attr('transform', `translate(0,${height - MARGIN.bottom})`)
      .call(axisBottom(x).tickFormat((i) => `${(i / BINS).toFixed(1)}–${((i + 1) / BINS).toFixed(1)}`));
    this.svg
      .append('g')
      .attr('class', 'rw-axis rw-axis-y')
      .attr('transform', `translate(${MARGIN.left},0)`)
      .call(axisLeft(y).ticks(Math.min(5, max)).tickFormat((v) => (Number.isInteger(v) ? String(v) : '')));
    const titles = this.svg.append('g').attr('class', 'rw-axis-titles');
    titles
      .append('text')
      .attr('x', (MARGIN.left + width - MARGIN.right) / 2)
      .attr('y', height - 6)
      .attr('text-anchor', 'middle')
      .text('final reward');
    titles
      .append('text')
      .attr('transform', `translate(13,${(MARGIN.top + height - MARGIN.bottom) / 2}) rotate(-90)`)
      .attr('text-anchor', 'middle')
      .text('rollouts');

    const groups = this.svg
      .append('g')
      .attr('class', 'rw-bars')
      .selectAll('g')
      .data(bins)
      .join('g')
      .attr('transform', (i) => `translate(${x(i)},0)`);
    for (const series of ['before', 'after'] as const) {
      const hist = d[series].histogram;
      groups
        .append('rect')
        .attr('class', `rw-bar rw-bar-${series}`)
        .attr('data-series', series)
        .attr('data-bin', (i) => i)
        .attr('data-count', (i) => hist[i] ?? 0)
        .attr('x', inner(series)!)
        .attr('width', inner.bandwidth())
        .attr('y', (i) => y(hist[i] ?? 0))
        .attr('height', (i) => y(0) - y(hist[i] ?? 0))
        .append('title')
        .text((i) => `${series === 'before' ? 'Before' : 'After'}: ${hist[i] ?? 0} rollouts with reward ${(i / BINS).toFixed(1)}–${((i + 1) / BINS).toFixed(1)}`);
    }

    const means = this.svg.append('g').attr('class', 'rw-means');
    for (const series of ['before', 'after'] as const) {
      const m = d[series].mean;
      if (m === null) continue;
      const g = means.append('g').attr('class', `rw-mean rw-mean-${series}`).attr('data-series', series).attr('data-mean', m);
      g.append('line').attr('x1', at(m)).attr('x2', at(m)).attr('y1', MARGIN.top - 4).attr('y2', height - MARGIN.bottom);
      g.append('title').text(`${series === 'before' ? 'Before' : 'After'}: mean ${fmt(m)}`);
    }
  }
}

function fmt(v: number | null): string {
  return v === null ? 'none' : v.toFixed(3);
}
