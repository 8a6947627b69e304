import type { CriterionReport } from '../../src/core/analysis/reportBreakdowns';
import { num } from '../../src/core/analysis/numberFormat';
import { interval } from '../../src/core/analysis/reportFormat';
import { arrowNavigation, el } from './dom';

/*
 * Mean judge score per criterion as a horizontal bar on a 0..1 scale, with
 * its confidence interval as a whisker. Plain elements positioned in percent
 * (element.style from script is allowed by the CSP), so it scales with the
 * panel and reads with a screen reader row by row.
 */

const pct = (v: number): string => `${(Math.max(0, Math.min(1, v)) * 100).toFixed(2)}%`;

export function criteriaChart(criteria: readonly CriterionReport[], level: number): HTMLElement {
  const chart = el('div', 'er-chart');
  chart.setAttribute('role', 'list');
  chart.setAttribute('aria-label', `Mean judge score per criterion with ${Math.round(level * 100)} % confidence intervals`);
  const axis = el('div', 'er-chart-axis');
  axis.setAttribute('aria-hidden', 'true');
  axis.append(el('span', 'er-chart-label'));
  const ticks = el('div', 'er-chart-ticks');
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const tick = el('span', 'er-chart-tick', String(t));
    tick.style.left = pct(t);
    ticks.append(tick);
  }
  axis.append(ticks, el('span', 'er-chart-value'));

  for (const k of criteria) {
    const row = el('div', 'er-chart-row');
    row.setAttribute('role', 'listitem');
    row.tabIndex = 0;
    row.dataset.criterion = k.name;
    const ci = k.stat.ci;
    row.setAttribute(
      'aria-label',
      `${k.name}: mean ${num(k.stat.mean)}, ${Math.round(level * 100)} % CI ${interval(ci)}, weight ${num(k.weight, 2)}, share ${k.share === null ? 'n/a' : `${(100 * k.share).toFixed(1)} %`}`,
    );
    row.title = k.description ?? '';
    const track = el('div', 'er-chart-track');
    if (k.stat.mean !== null) {
      const bar = el('div', 'er-chart-bar');
      bar.style.width = pct(k.stat.mean);
      bar.dataset.mean = String(k.stat.mean);
      track.append(bar);
    }
    if (ci) {
      const whisker = el('div', 'er-chart-ci');
      whisker.style.left = pct(ci[0]);
      whisker.style.width = `calc(${pct(ci[1])} - ${pct(ci[0])})`;
      whisker.dataset.low = String(ci[0]);
      whisker.dataset.high = String(ci[1]);
      track.append(whisker);
    }
    row.append(el('span', 'er-chart-label', k.name), track, el('span', 'er-chart-value', num(k.stat.mean)));
    chart.append(row);
  }
  chart.prepend(axis);
  arrowNavigation(chart, '.er-chart-row');
  return chart;
}
