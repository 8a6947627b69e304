import type { ScaleLinear, Selection } from 'd3';

/*
 * The frame of a d3 chart: its size, horizontal grid lines, a bottom and a
 * left axis, the axis titles, and a message when there is nothing to draw,
 * with classes under the panel's prefix so its stylesheet colours them over
 * --vscode-* variables.
 */

type Svg = Selection<SVGSVGElement, unknown, null, undefined>;
type Group = Selection<SVGGElement, unknown, null, undefined>;

export interface PlotArea {
  width: number;
  height: number;
  margin: { top: number; right: number; bottom: number; left: number };
}

export interface ChartAxes {
  /** The panel's class prefix: groups `<p>-grid`, `<p>-axis <p>-axis-x`, `<p>-axis <p>-axis-y` and `<p>-axis-titles`. */
  prefix: string;
  /** The configured d3 axes (axisBottom, axisLeft) over the chart's scales. */
  x: (g: Group) => void;
  y: (g: Group) => void;
  /** Another class on the x axis group. */
  xClass?: string;
  xTitle?: string;
  yTitle?: string;
  /** Grid lines across the plot at `ticks` ticks of the y scale, drawn first (under everything else). */
  grid?: { y: ScaleLinear<number, number>; ticks: number };
}

/** Draws the grid, axes and titles of a chart into `svg`; returns the axis groups (for tick decorations). */
export function drawAxes(svg: Svg, area: PlotArea, axes: ChartAxes): { x: Group; y: Group } {
  const { width, height, margin } = area;
  const p = axes.prefix;
  if (axes.grid) {
    const { y, ticks } = axes.grid;
    svg
      .append('g')
      .attr('class', `${p}-grid`)
      .selectAll('line')
      .data(y.ticks(ticks))
      .join('line')
      .attr('x1', margin.left)
      .attr('x2', width - margin.right)
      .attr('y1', (t) => y(t))
      .attr('y2', (t) => y(t));
  }
  const x = svg
    .append('g')
    .attr('class', `${p}-axis ${p}-axis-x${axes.xClass ? ` ${axes.xClass}` : ''}`)
    .attr('transform', `translate(0,${height - margin.bottom})`)
    .call(axes.x);
  const y = svg.append('g').attr('class', `${p}-axis ${p}-axis-y`).attr('transform', `translate(${margin.left},0)`).call(axes.y);
  if (axes.xTitle || axes.yTitle) {
    const titles = svg.append('g').attr('class', `${p}-axis-titles`);
    if (axes.xTitle) titles.append('text').attr('x', (margin.left + width - margin.right) / 2).attr('y', height - 6).attr('text-anchor', 'middle').text(axes.xTitle);
    if (axes.yTitle) {
      titles
        .append('text')
        .attr('transform', `translate(14,${(margin.top + height - margin.bottom) / 2}) rotate(-90)`)
        .attr('text-anchor', 'middle')
        .text(axes.yTitle);
    }
  }
  return { x, y };
}

/** Sizes a chart's svg to its box, its viewBox the same. */
export function sizeChart(svg: Svg, width: number, height: number): void {
  svg.attr('width', width).attr('height', height).attr('viewBox', `0 0 ${width} ${height}`);
}

/** A line of text in the middle of a chart with nothing to draw (yet). */
export function chartMessage(svg: Svg, width: number, height: number, className: string, text: string): void {
  svg.append('text').attr('class', className).attr('x', width / 2).attr('y', height / 2).attr('text-anchor', 'middle').text(text);
}

/** Tick labels for whole numbers only (steps, rollouts, counts): fractional ticks stay blank. */
export function integerTicks(v: number | { valueOf(): number }): string {
  return Number.isInteger(v.valueOf()) ? String(v) : '';
}
