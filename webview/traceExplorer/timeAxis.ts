import { axisTop } from 'd3-axis';
import { scaleLinear } from 'd3-scale';
import { select } from 'd3-selection';
import { formatTick } from './format';

/** Horizontal inset of the waterfall track, the same in the CSS (--te-track-pad) as here. */
export const TRACK_PAD = 12;
const HEIGHT = 24;

/**
 * The waterfall's time axis: 0 at the rollout's first span, in ms or s. Bars
 * are placed in percent of the same track, so only the axis redraws when the
 * pane is resized.
 */
export class TimeAxis {
  readonly element: SVGSVGElement;
  private width = 0;
  private durationMs = 0;

  constructor() {
    this.element = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    this.element.setAttribute('class', 'te-axis');
    this.element.setAttribute('height', String(HEIGHT));
    this.element.setAttribute('aria-hidden', 'true');
    new ResizeObserver((entries) => {
      const w = Math.floor(entries[entries.length - 1]!.contentRect.width);
      if (w !== this.width) {
        this.width = w;
        this.draw();
      }
    }).observe(this.element);
  }

  /** A rollout with no spans, or whose spans take no time, has no axis (0 ms has no scale to show). */
  setDuration(ms: number): void {
    this.durationMs = Number.isFinite(ms) && ms > 0 ? ms : 0;
    this.draw();
  }

  private draw(): void {
    const svg = select(this.element);
    svg.selectAll('*').remove();
    if (this.width <= 2 * TRACK_PAD || this.durationMs <= 0) return;
    // Ticks fall on round numbers of the unit that suits the duration (ms, s or min), not on round ms.
    const unit = this.durationMs >= 180_000 ? 60_000 : this.durationMs >= 3_000 ? 1000 : 1;
    const x = scaleLinear().domain([0, this.durationMs / unit]).range([TRACK_PAD, this.width - TRACK_PAD]);
    const ticks = Math.max(2, Math.floor((this.width - 2 * TRACK_PAD) / 90));
    svg
      .append('g')
      .attr('transform', `translate(0,${HEIGHT - 1})`)
      .call(axisTop<number>(x).ticks(ticks).tickSize(4).tickFormat((d) => formatTick(+d * unit)));
  }
}
