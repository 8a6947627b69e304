import { axisBottom, axisLeft, line, scaleLinear, scalePoint, select } from 'd3';
import type { LearningCurve, LearningCurvePoint, LearningCurveSeries, PairedChange } from '../../src/core/train/pipeline/learningCurve';
import { el, tableHead } from '../shared/dom';
import { drawAxes, sizeChart } from '../shared/chartAxes';

/*
 * The learning curve in the Reward Curve panel: per trained model, validation
 * reward per model version — the mean as a dot, its 95 % interval as a bar
 * with caps, a line through the evaluated versions, and the paired change from
 * the previous version above each step — then the same numbers as a table.
 * Colours are CSS classes over --vscode-* variables; text goes in through
 * textContent / .text(), never as HTML. The chart is keyboard reachable: the
 * arrows move between versions and a live region reads each one out.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const MARGIN = { top: 34, right: 28, bottom: 54, left: 52 };
const HEIGHT = 300;

const fixed = (x: number): string => x.toFixed(3);
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}`;

export function intervalText(ci: [number, number] | null): string {
  return ci ? `[${fixed(ci[0])}, ${fixed(ci[1])}]` : '–';
}

export function pValueText(p: number | null): string {
  return p === null ? '' : p < 0.001 ? 'p < 0.001' : `p ${p.toFixed(3)}`;
}

export function changeText(c: PairedChange | null): string {
  if (!c) return '–';
  if (c.delta === null) return `no tasks in common with ${c.versus}`;
  const ci = c.ci ? ` [${signed(c.ci[0])}, ${signed(c.ci[1])}]` : '';
  const p = pValueText(c.pValue);
  return `${signed(c.delta)}${ci}${p ? `, ${p}` : ''} (${c.pairs} pair${c.pairs === 1 ? '' : 's'} with ${c.versus})`;
}

function producedText(p: LearningCurvePoint): string {
  if (p.producedBy) return `${p.producedBy.phase}, ${new Date(p.producedBy.at).toLocaleString()}`;
  return p.version === null ? 'lab.json' : 'registered by hand';
}

function rolloutsText(p: LearningCurvePoint): string {
  if (!p.rollouts) return 'not evaluated';
  return `${p.rollouts} on ${p.tasks} task${p.tasks === 1 ? '' : 's'}${p.simulated ? ` (${p.simulated} simulated)` : ''}`;
}

/** One sentence per version, for the live region and the point's title. */
export function pointSentence(s: LearningCurveSeries, p: LearningCurvePoint): string {
  if (!p.rollouts || p.reward.mean === null) return `${p.label}${p.active ? ' (active)' : ''}: not evaluated on validation yet.`;
  const parts = [`${p.label}${p.active ? ' (active)' : ''}: mean reward ${fixed(p.reward.mean)}`, `95 % interval ${intervalText(p.reward.ci)}`, rolloutsText(p)];
  if (p.change) parts.push(`change ${changeText(p.change)}`);
  return `${parts.join(', ')}. Model ${s.model}.`;
}

export class LearningCurveView {
  readonly root: HTMLElement;
  private readonly body: HTMLElement;
  private readonly live: HTMLElement;
  private readonly observers: ResizeObserver[] = [];

  constructor() {
    this.root = el('div', 'lc-root');
    this.root.setAttribute('role', 'region');
    this.root.setAttribute('aria-label', 'Validation reward per model version');
    this.body = el('div', 'lc-body');
    this.live = el('div', 'lc-sr-only');
    this.live.setAttribute('aria-live', 'polite');
    this.root.append(this.body, this.live);
  }

  setMessage(text: string): void {
    this.clear();
    this.body.append(el('p', 'lc-message muted', text));
  }

  setData(curve: LearningCurve): void {
    this.clear();
    const where = curve.split === 'val' ? 'validation' : curve.split;
    const evaluated = curve.series.filter((s) => s.points.some((p) => p.rollouts > 0));
    if (!evaluated.length) {
      const empty = el('div', 'lc-empty');
      empty.append(
        el('p', 'lc-empty-title', `No ${where} reward per model version yet.`),
        el('p', 'muted', curve.hint ?? 'Evaluate on the validation set after each training phase: each evaluation adds a point for the model version it ran.'),
      );
      this.body.append(empty);
      return;
    }
    for (const s of curve.series) this.body.append(this.seriesSection(s, where, curve.confidence));
    if (curve.series.some((s) => s.points.some((p) => p.simulated > 0))) {
      this.body.append(el('p', 'lc-note', 'Hollow dots: some of the version\'s rollouts were answered by the SIMULATED endpoint; they measure the simulator, not a model.'));
    }
    if (curve.simulatedLeftOut) this.body.append(el('p', 'lc-note muted', `${curve.simulatedLeftOut} simulated rollouts left out.`));
  }

  private clear(): void {
    for (const o of this.observers.splice(0)) o.disconnect();
    this.body.replaceChildren();
  }

  private seriesSection(s: LearningCurveSeries, where: string, confidence: number): HTMLElement {
    const section = el('section', 'lc-series');
    section.dataset.model = s.model;
    const title = el('h3', 'lc-title', `${s.agents.join(', ')} — model ${s.model}`);
    const sub = el('span', 'lc-subtitle muted', ` · ${where} reward per version, ${Math.round(confidence * 100)} % intervals`);
    title.append(sub);
    const stage = el('div', 'lc-stage');
    const svgEl = document.createElementNS(SVG_NS, 'svg');
    stage.append(svgEl);
    section.append(title, stage, this.table(s));
    let cursor: number | null = null;
    const svg = select(svgEl)
      .attr('class', 'lc-chart')
      .attr('tabindex', 0)
      .attr('role', 'img')
      .attr('aria-roledescription', 'chart')
      .attr('aria-label', `Validation reward per version of model ${s.model}. Left and right arrows move between versions.`);
    const draw = (): void => this.draw(svgEl, s, cursor);
    svg.on('keydown', (ev: KeyboardEvent) => {
      const n = s.points.length;
      let next: number | null = null;
      if (ev.key === 'ArrowRight') next = cursor === null ? 0 : Math.min(n - 1, cursor + 1);
      else if (ev.key === 'ArrowLeft') next = cursor === null ? n - 1 : Math.max(0, cursor - 1);
      else if (ev.key === 'Home') next = 0;
      else if (ev.key === 'End') next = n - 1;
      else if (ev.key === 'Escape') next = null;
      else return;
      ev.preventDefault();
      cursor = next;
      draw();
      this.live.textContent = next === null ? '' : pointSentence(s, s.points[next]!);
    });
    svg.on('blur', () => {
      cursor = null;
      draw();
    });
    const ro = new ResizeObserver(draw);
    ro.observe(svgEl);
    this.observers.push(ro);
    draw();
    return section;
  }

  private draw(svgEl: SVGSVGElement, s: LearningCurveSeries, cursor: number | null): void {
    const width = svgEl.clientWidth || 800;
    const height = HEIGHT;
    const svg = select(svgEl);
    svg.selectAll('*').remove();
    sizeChart(svg, width, height);
    const labels = s.points.map((p) => p.label);
    const x = scalePoint<string>().domain(labels).range([MARGIN.left, width - MARGIN.right]).padding(0.5);
    const y = scaleLinear().domain([0, 1]).range([height - MARGIN.bottom, MARGIN.top]);

    // Long labels are cut to the room a version has; the full label is in the tick's title and the table.
    const room = Math.max(6, Math.floor((x.step() || width) / 7));
    const { x: xAxis } = drawAxes(svg, { width, height, margin: MARGIN }, {
      prefix: 'rc',
      grid: { y, ticks: 5 },
      x: axisBottom(x).tickSizeOuter(0).tickFormat((label) => (label.length > room ? `${label.slice(0, room - 1)}…` : label)),
      xClass: 'lc-axis-x',
      y: axisLeft(y).ticks(5),
      yTitle: 'validation reward',
    });
    xAxis.selectAll<SVGGElement, string>('.tick').append('title').text((label) => label);
    // Under each version: its rollouts, or that it is not evaluated yet.
    xAxis
      .selectAll<SVGGElement, string>('.tick')
      .append('text')
      .attr('class', 'lc-n')
      .attr('y', 30)
      .attr('text-anchor', 'middle')
      .text((label) => {
        const p = s.points.find((q) => q.label === label)!;
        return p.rollouts ? `n ${p.rollouts}${p.active ? ' · active' : ''}` : `not evaluated${p.active ? ' · active' : ''}`;
      });

    const done = s.points.filter((p) => p.rollouts > 0 && p.reward.mean !== null);
    const path = line<LearningCurvePoint>()
      .x((p) => x(p.label)!)
      .y((p) => y(p.reward.mean!));
    svg.append('path').attr('class', 'lc-line').attr('d', path(done));

    // The paired change, above the middle of each step.
    const changes = svg.append('g').attr('class', 'lc-changes');
    done.forEach((p) => {
      const c = p.change;
      if (!c || c.delta === null) return;
      const prev = s.points.find((q) => q.label === c.versus);
      if (!prev) return;
      const xm = (x(prev.label)! + x(p.label)!) / 2;
      const t = changes
        .append('text')
        .attr('class', `lc-change ${c.pValue !== null && c.pValue < 0.05 ? (c.delta > 0 ? 'lc-up' : 'lc-down') : 'lc-flat'}`)
        .attr('data-version', p.label)
        .attr('x', xm)
        .attr('y', MARGIN.top - 14)
        .attr('text-anchor', 'middle')
        .text(`${signed(c.delta)}${c.pValue !== null ? ` (${pValueText(c.pValue)})` : ''}`);
      t.append('title').text(`change vs ${c.versus}: ${changeText(c)}`);
    });

    const points = svg.append('g').attr('class', 'lc-points');
    s.points.forEach((p, i) => {
      const g = points
        .append('g')
        .attr('class', `lc-point${p.simulated ? ' lc-simulated' : ''}${p.active ? ' lc-active' : ''}${cursor === i ? ' lc-cursor' : ''}`)
        .attr('data-version', p.label)
        .attr('data-rollouts', p.rollouts);
      g.append('title').text(pointSentence(s, p));
      const cx = x(p.label)!;
      if (!p.rollouts || p.reward.mean === null) {
        g.append('circle').attr('class', 'lc-missing').attr('cx', cx).attr('cy', y(0)).attr('r', 4);
        return;
      }
      g.attr('data-mean', p.reward.mean);
      if (p.reward.ci) {
        const [lo, hi] = p.reward.ci;
        g.attr('data-ci', JSON.stringify(p.reward.ci));
        g.append('line').attr('class', 'lc-ci').attr('x1', cx).attr('x2', cx).attr('y1', y(lo)).attr('y2', y(hi));
        for (const v of [lo, hi]) g.append('line').attr('class', 'lc-ci lc-cap').attr('x1', cx - 7).attr('x2', cx + 7).attr('y1', y(v)).attr('y2', y(v));
      }
      g.append('circle').attr('class', 'lc-dot').attr('cx', cx).attr('cy', y(p.reward.mean)).attr('r', 5.5);
      g.append('text')
        .attr('class', 'lc-value')
        .attr('x', cx + 10)
        .attr('y', y(p.reward.mean) + 4)
        .text(fixed(p.reward.mean));
    });
    if (cursor !== null && s.points[cursor]) {
      const cx = x(s.points[cursor]!.label)!;
      svg.append('line').attr('class', 'rc-cursor-line').attr('x1', cx).attr('x2', cx).attr('y1', MARGIN.top).attr('y2', height - MARGIN.bottom);
    }
  }

  private table(s: LearningCurveSeries): HTMLElement {
    const table = el('table', 'rc-table lc-table');
    table.append(el('caption', 'rc-sr-only', `Validation reward per version of model ${s.model}`));
    const thead = tableHead(['Version', 'Produced by', 'Rollouts', 'Mean reward', '95 % interval', 'Change vs previous (paired)']);
    const body = el('tbody');
    for (const p of s.points) {
      const tr = el('tr');
      tr.dataset.version = p.label;
      const cells = [
        `${p.label}${p.active ? ' (active)' : ''}`,
        producedText(p),
        rolloutsText(p),
        p.rollouts && p.reward.mean !== null ? fixed(p.reward.mean) : '–',
        p.rollouts ? intervalText(p.reward.ci) : '–',
        changeText(p.change),
      ];
      for (const c of cells) tr.append(el('td', undefined, c));
      body.append(tr);
    }
    table.append(thead, body);
    return table;
  }
}
