import type { ComparisonResult } from '../../src/core/analysis/comparison';
import { el, table } from './dom';
import { pct } from '../../src/core/analysis/numberFormat';
import { interval, meanPm, num, pValue, signed } from './format';

const VERDICT: Record<ComparisonResult['aggregate']['verdict'], string> = {
  'b-better': 'B is better (significant)',
  'a-better': 'A is better (significant)',
  'no-significant-difference': 'no significant difference',
  'too-few-pairs': 'too few paired tasks to test',
};

/** The header: what A and B are, and the runs behind them. */
export function renderHeader(r: ComparisonResult): HTMLElement {
  const header = el('header', 'cmp-header');
  for (const [name, side] of [['A', r.a], ['B', r.b]] as const) {
    const box = el('div', `cmp-label cmp-label-${name.toLowerCase()}`);
    box.append(el('span', 'cmp-side-tag', name), el('span', 'cmp-side-name', side.label));
    // The spec says what changed; a variant that only names itself changes nothing worth repeating.
    const changes = side.variant && (Object.keys(side.variant.models ?? {}).length || Object.keys(side.variant.prompts ?? {}).length);
    const sub = el('div', 'cmp-side-run muted', `${side.runId}${changes && side.spec !== side.label ? ` · ${side.spec}` : ''}`);
    box.append(sub);
    header.append(box);
    if (name === 'A') header.append(el('span', 'cmp-vs muted', 'vs'));
  }
  return header;
}

/** The aggregate: means with intervals, the paired difference and both tests, wins/ties/losses. */
export function renderAggregate(r: ComparisonResult): HTMLElement {
  const g = r.aggregate;
  const section = el('section', 'cmp-aggregate');
  section.setAttribute('aria-label', 'Aggregate');
  const verdict = el('p', `cmp-verdict cmp-verdict-${g.verdict}`);
  verdict.append(el('strong', undefined, VERDICT[g.verdict]), document.createTextNode(` — ${g.summary}`));
  section.append(verdict);
  const level = `${Math.round(r.level * 100)} % CI`;
  const rows: string[][] = [
    ['Mean reward', meanPm(g.meanA, g.ciA), meanPm(g.meanB, g.ciB), signed(g.meanDifference)],
    [level, interval(g.ciA), interval(g.ciB), interval(g.ciDifference)],
    ['Decision alignment', `${pct(g.alignment.a.percent)} (${g.alignment.a.aligned}/${g.alignment.a.total})`, `${pct(g.alignment.b.percent)} (${g.alignment.b.aligned}/${g.alignment.b.total})`, ''],
    ['Rollouts (failed)', `${r.a.rollouts} (${r.a.failed})`, `${r.b.rollouts} (${r.b.failed})`, ''],
  ];
  const t = table(['', 'A', 'B', 'B − A'], rows, 'cmp-table cmp-aggregate-table');
  t.setAttribute('aria-label', 'Mean reward of A and B and their difference');
  section.append(t);
  const facts = el('dl', 'cmp-facts');
  const fact = (label: string, value: string, cls?: string): void => {
    facts.append(el('dt', undefined, label), el('dd', cls, value));
  };
  fact('Paired tasks', String(g.pairs), 'cmp-pairs');
  fact('Paired t-test', g.pairedT ? `p ${pValue(g.pairedT.pValue)} (t = ${num(g.pairedT.t, 2)}, df ${g.pairedT.df})` : 'n/a', 'cmp-p-t');
  fact('Wilcoxon signed-rank', g.wilcoxon ? `p ${pValue(g.wilcoxon.pValue)} (${g.wilcoxon.method}, W+ = ${g.wilcoxon.wPlus})` : 'n/a (no non-zero difference)', 'cmp-p-w');
  fact('Significance', g.significant ? `significant at the ${Math.round(r.alpha * 100)} % level` : `not significant at the ${Math.round(r.alpha * 100)} % level`, 'cmp-significance');
  fact('B wins / ties / losses', `${g.wins} / ${g.ties} / ${g.losses}`, 'cmp-wtl');
  if (r.unpaired.length) fact('Not paired', `${r.unpaired.length} task${r.unpaired.length === 1 ? '' : 's'}: ${r.unpaired.map((u) => `${u.taskId} (${u.reason})`).join('; ')}`, 'cmp-unpaired');
  section.append(facts);
  return section;
}

/** Per-criterion mean differences with their paired p-values. */
export function renderCriteria(r: ComparisonResult): HTMLElement {
  const section = el('section', 'cmp-criteria');
  section.append(el('h2', undefined, 'Judge criteria'));
  const t = table(
    ['Criterion', 'A', 'B', 'B − A', 'p (paired t)', 'Tasks'],
    r.aggregate.criteria.map((c) => [c.criterion, num(c.meanA), num(c.meanB), signed(c.difference), pValue(c.pValue), String(c.n)]),
    'cmp-table cmp-criteria-table',
  );
  t.setAttribute('aria-label', 'Mean judge score per criterion');
  section.append(t);
  return section;
}
