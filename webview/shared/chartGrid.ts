import type { ScaleLinear, Selection } from 'd3';

/** Horizontal grid lines across the plot, at `ticks` ticks of the y scale, in a group of class `className`. */
export function gridLines(
  svg: Selection<SVGSVGElement, unknown, null, undefined>,
  y: ScaleLinear<number, number>,
  ticks: number,
  className: string,
  from: number,
  to: number,
): void {
  svg
    .append('g')
    .attr('class', className)
    .selectAll('line')
    .data(y.ticks(ticks))
    .join('line')
    .attr('x1', from)
    .attr('x2', to)
    .attr('y1', (t) => y(t))
    .attr('y2', (t) => y(t));
}
