import { axisBottom, axisLeft, scaleLinear, select, type Selection } from 'd3';
import type { Distribution } from '../../src/core/analysis/rescore';
import type { RewardBins } from '../../src/shared/weightsProtocol';
import { drawAxes, integerTicks, sizeChart } from '../shared/chartAxes';

/*
 * Before/after histograms of final rewards, drawn with d3 as paired bars over
 * bins the host chose from the data (Freedman–Diaconis), with each side's
 * mean marked. Colours come from CSS classes over --vscode-* variables; text
 * goes in through .text().
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const MARGIN = { top: 16, right: 16, bottom: 42, left: 48 };

type Series = 'before' | 'after';

export class RewardHistogram {
  readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  private data: { before: Distribution; after: Distribution; bins: RewardBins } | null = null;

  constructor(host: HTMLElement) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    host.append(svg);
    this.svg = select(svg).attr('class', 'rw-histogram').attr('role', 'img').attr('aria-roledescription', 'chart');
    new ResizeObserver(() => this.draw()).observe(svg);
  }

  setData(before: Distribution, after: Distribution, bins: RewardBins): void {
    this.data = { before, after, bins };
    this.draw();
  }

  private draw(): void {
    const node = this.svg.node()!;
    const width = node.clientWidth || 640;
    const height = node.clientHeight || 240;
    this.svg.selectAll('*').remove();
    sizeChart(this.svg, width, height);
    const d = this.data;
    if (!d) return;
    const { edges } = d.bins;
    const bins = edges.slice(0, -1).map((_e, i) => i);
    const max = Math.max(1, ...d.bins.before, ...d.bins.after);
    const x = scaleLinear()
      .domain([edges[0]!, edges.at(-1)!])
      .range([MARGIN.left, width - MARGIN.right]);
    const y = scaleLinear().domain([0, max]).nice().range([height - MARGIN.bottom, MARGIN.top]);
    // Each bin holds a before and an after bar side by side, with a gap between bins.
    const binWidth = (i: number): number => x(edges[i + 1]!) - x(edges[i]!);
    const gap = (i: number): number => Math.min(10, binWidth(i) * 0.25);
    const barWidth = (i: number): number => Math.max(0.5, (binWidth(i) - gap(i)) / 2);
    const barX = (i: number, series: Series): number => x(edges[i]!) + gap(i) / 2 + (series === 'after' ? barWidth(i) : 0);
    const decimals = Math.max(1, Math.min(4, Math.ceil(-Math.log10(edges[1]! - edges[0]!) + 1e-9)));
    const range = (i: number): string => `${edges[i]!.toFixed(decimals)}–${edges[i + 1]!.toFixed(decimals)}`;
    const at = (v: number): number => x(v);

    this.svg.attr('aria-label', `Final reward histogram, ${d.before.count} rollouts. Before: mean ${fmt(d.before.mean)}. After: mean ${fmt(d.after.mean)}.`);
    drawAxes(this.svg, { width, height, margin: MARGIN }, {
      prefix: 'rw',
      grid: { y, ticks: Math.min(5, max) },
      x: axisBottom(x).tickValues(edgeTicks(edges, Math.max(2, Math.floor((width - MARGIN.left - MARGIN.right) / 50)))),
      y: axisLeft(y).ticks(Math.min(5, max)).tickFormat(integerTicks),
      xTitle: 'final reward',
      yTitle: 'rollouts',
    });

    const bars = this.svg.append('g').attr('class', 'rw-bars');
    for (const series of ['before', 'after'] as const) {
      const hist = d.bins[series];
      bars
        .selectAll(`rect.rw-bar-${series}`)
        .data(bins)
        .join('rect')
        .attr('class', `rw-bar rw-bar-${series}`)
        .attr('data-series', series)
        .attr('data-bin', (i) => i)
        .attr('data-x0', (i) => edges[i]!)
        .attr('data-x1', (i) => edges[i + 1]!)
        .attr('data-count', (i) => hist[i] ?? 0)
        .attr('x', (i) => barX(i, series))
        .attr('width', (i) => barWidth(i))
        .attr('y', (i) => y(hist[i] ?? 0))
        .attr('height', (i) => y(0) - y(hist[i] ?? 0))
        .append('title')
        .text((i) => `${series === 'before' ? 'Before' : 'After'}: ${hist[i] ?? 0} rollouts with reward ${range(i)}`);
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

/** Ticks on the bin edges, every k-th so that at most `most` are labelled. */
function edgeTicks(edges: readonly number[], most: number): number[] {
  const k = Math.max(1, Math.ceil(edges.length / most));
  return edges.filter((_e, i) => i % k === 0);
}
