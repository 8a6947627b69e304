import { statusText } from '../store/failureKinds';
import type { EvaluationReport } from './evaluationReport';
import type { MeanStat, RateStat } from './reportStats';
import { count, duration, num, pct } from './numberFormat';

/*
 * What an evaluation report says, as tables of plain text cells (reportTables),
 * and two renderings of them: GitHub-flavoured Markdown and a standalone HTML
 * document. The report panel draws the same tables, so the three never
 * disagree on a number. Every piece of text from a run (task ids, error
 * messages, agent names) is escaped for the format it goes into.
 */

export const SIMULATED_NOTICE = 'SIMULATED endpoint: these numbers measure the built-in simulator, not a model.';

/** A link to a rollout (the panel opens it in the trace explorer; the exports show its id). */
export interface RolloutLink {
  rolloutId: string;
  text: string;
  title?: string;
}

/** A cell: text, or rollout links (with optional text after them). */
export type ReportCell = string | { links: RolloutLink[]; text?: string };

export interface ReportTableView {
  id: 'facts' | 'evaluation' | 'criteria' | 'agents' | 'decisions' | 'failures' | 'lowest';
  title: string;
  /** One sentence under the title: how to read the table. */
  caption: string;
  header: string[];
  /** Columns that hold numbers (right-aligned). */
  numeric: boolean[];
  rows: ReportCell[][];
  /** Shown instead of an empty table. */
  empty: string;
}




export function interval(ci: [number, number] | null, digits = 3, unit = ''): string {
  return ci ? `${ci[0].toFixed(digits)}${unit} – ${ci[1].toFixed(digits)}${unit}` : 'n/a';
}

export function utc(t: number | null): string {
  return t === null ? '-' : new Date(t).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}


function meanCells(s: MeanStat, digits = 3): string[] {
  return [num(s.mean, digits), interval(s.ci, digits), String(s.n)];
}

function rateCells(s: RateStat): string[] {
  return [pct(s.rate), interval(s.ci, 1, ' %'), `${s.count}/${s.n}`];
}

function valueText(v: unknown): string {
  if (v === null || v === undefined) return '-';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Every table of the report, in reading order. */
export function reportTables(report: EvaluationReport): ReportTableView[] {
  const { run, table } = report;
  const c = run.counts;
  const factRows: ReportCell[][] = [
    ['Run', run.id],
    ['Endpoint', run.simulated ? 'SIMULATED (built-in simulator)' : 'configured models'],
    ['Command', run.command ?? '-'],
    ['Split', run.split ?? '-'],
    ['Status', run.status],
    ['Started', utc(run.startTime)],
    ['Ended', utc(run.endTime)],
    ['Duration', duration(run.durationMs)],
    [
      'Rollouts',
      `${c.total} (${c.succeeded} succeeded, ${c.failed} failed${c.noOutput ? `, ${c.noOutput} of them without final output` : ''}, ${c.cancelled} cancelled${c.running ? `, ${c.running} running` : ''}${c.notStarted ? `, ${c.notStarted} not started` : ''}) of ${run.planned} planned${c.superseded ? `; ${c.superseded} earlier attempts superseded` : ''}`,
    ],
    ['Tasks', String(run.tasks)],
    ...Object.entries(run.params)
      .filter(([k]) => k !== 'command' && k !== 'split')
      .map(([k, v]) => [`Parameter: ${k}`, valueText(v)]),
  ];

  const m = table.metrics;
  const evalRows: ReportCell[][] = [
    ['Execution success rate', ...rateCells(table.executionSuccess), 'rollouts that finished with a final output and no execution error'],
  ];
  if (m.noOutput) {
    evalRows.push(['No final output', ...rateCells(table.noOutput), `the graph finished without one (failed, but scored)${m.truncated ? `; ${m.truncated} because an answer was truncated at max_tokens` : ''}`]);
  }
  evalRows.push([
    'Average final reward',
    ...meanCells(table.finalReward),
    [
      table.finalReward.n ? `min ${num(table.finalReward.min)}, max ${num(table.finalReward.max)}, sd ${num(table.finalReward.std)}` : '',
      m.noOutput ? 'rollouts without output included' : '',
      m.crashed ? `${m.crashed} failed without a reward (left out)` : '',
    ]
      .filter(Boolean)
      .join('; '),
  ]);
  if (table.decisionAlignment) {
    evalRows.push(['Decision alignment', ...rateCells(table.decisionAlignment), 'the decision stands for the task\'s "yes" or "no" (GO and NO-GO, or lab.json graph.decisions); a missing decision counts as not aligned']);
    if (m.maybe.rollouts) evalRows.push(['Maybe tasks', String(m.maybe.rollouts), '', '', `reported apart: ${m.maybe.go} decided yes, ${m.maybe.noGo} decided no, ${m.maybe.undecided} undecided`]);
  }
  const limit = report.turnLimit ?? null;
  evalRows.push([
    'Average turn count',
    ...meanCells(table.turns, 1),
    [
      table.turns.n ? `min ${num(table.turns.min, 0)}, max ${num(table.turns.max, 0)}` : '',
      limit ? `limit ${limit.maxTurns} (runner.maxTurns)${limit.over ? `; ${limit.over} over it — see the notes` : ''}` : '',
    ]
      .filter(Boolean)
      .join('; '),
  ]);
  if (table.judgeFailures) evalRows.push(['Judge failures', ...rateCells(table.judgeFailures), 'the judge answer could not be used; the failure penalty was applied']);
  for (const j of table.judge) evalRows.push([`Judge: ${j.criterion}`, ...meanCells(j.stat), '']);
  for (const p of table.customReward) evalRows.push([`Reward: ${p.part}`, ...meanCells(p.stat), 'custom reward breakdown']);

  const criteriaRows: ReportCell[][] = report.criteria.map((k) => [
    k.name,
    `${num(k.weight, 2)}${k.inConfig ? '' : ' (not configured)'}`,
    num(k.stat.mean),
    interval(k.stat.ci),
    String(k.stat.n),
    num(k.contribution),
    pct(k.share === null ? null : 100 * k.share),
  ]);

  const agentRows: ReportCell[][] = report.agents.map((a) => [
    a.agent,
    String(a.rollouts),
    String(a.visits),
    `${count(a.llmCalls)} / ${count(a.toolCalls)}`,
    a.errors ? `${count(a.errors)} in ${count(a.rolloutsWithErrors)}` : '0',
    `${count(a.inputTokens)} / ${count(a.outputTokens)}`,
    a.meanLatencyMs === null ? 'n/a' : duration(a.meanLatencyMs),
    [
      a.promptVersions.length ? `prompt ${a.promptVersions.map((p) => `${p.version ? p.version.slice(0, 7) : '-'}${a.promptVersions.length > 1 ? ` ×${p.rollouts}` : ''}`).join(', ')}` : '',
      a.models.map((x) => `${x.model ?? '-'}${x.version ? `@${x.version}` : ''}${a.models.length > 1 ? ` ×${x.rollouts}` : ''}`).join(', '),
    ]
      .filter(Boolean)
      .join(' · '),
    `${num(a.rewardWithErrors.mean)} (n ${a.rewardWithErrors.n}) / ${num(a.rewardWithoutErrors.mean)} (n ${a.rewardWithoutErrors.n})`,
  ]);

  const d = report.decisions;
  const decisionRows: ReportCell[][] = d.decisions.map((dec) => {
    const by = d.byDecision.find((b) => b.decision === dec)!;
    return [
      dec,
      ...d.expected.map((e) => {
        const cell = d.cells.find((x) => x.decision === dec && x.expected === e)!;
        return cell.count ? `${cell.count} (reward ${num(cell.meanReward)})` : '0';
      }),
      String(by.count),
      num(by.reward.mean),
      interval(by.reward.ci),
    ];
  });

  const failureRows: ReportCell[][] = report.failures.categories.map((f) => [
    f.label,
    String(f.rollouts),
    String(f.fatal),
    { links: f.examples.map((e) => ({ rolloutId: e.rolloutId, text: `task ${e.taskId}`, title: e.message })) },
    f.examples[0] ? `${f.examples[0].agent ? `${f.examples[0].agent}: ` : ''}${f.examples[0].message}` : '',
  ]);

  const parts = report.rewardParts;
  const withInfo = report.lowest.some((r) => r.rewardInfo !== null);
  const lowestRows: ReportCell[][] = report.lowest.map((r) => [
    { links: [{ rolloutId: r.rolloutId, text: r.rolloutId }] },
    r.taskId,
    statusText(r),
    num(r.finalReward),
    ...parts.map((p) => num(r.rewardBreakdown?.[p] ?? null)),
    r.decision ?? '-',
    r.expectedDecision ?? '-',
    r.turns === null ? '-' : limit && r.turns > limit.maxTurns ? `${r.turns} (over ${limit.maxTurns})` : String(r.turns),
    ...(m.shape.judge ? [r.judgeFailed ? 'yes' : ''] : []),
    ...(withInfo ? [r.rewardInfo ?? ''] : []),
  ]);

  const fr = report.failures;
  const level = `${Math.round(report.confidenceLevel * 100)} % CI`;
  const tables: ReportTableView[] = [
    { id: 'facts', title: 'Run', caption: 'What was run and how it ended.', header: ['Fact', 'Value'], numeric: [false, false], rows: factRows, empty: '' },
    {
      id: 'evaluation',
      title: 'Evaluation',
      caption: `The evaluation table with ${level.replace(' CI', '')} confidence intervals: Wilson score for rates and pass/fail rewards, Student t kept inside 0..1 for other means.`,
      header: ['Metric', 'Value', level, 'n', 'Detail'],
      numeric: [false, true, true, true, false],
      rows: evalRows,
      empty: 'No finished rollouts.',
    },
  ];
  if (m.shape.judge) {
    tables.push({
      id: 'criteria',
      title: 'Criteria',
      caption: 'Judge score per criterion over judged rollouts; the share is the part of the weighted judge reward each criterion contributes.',
      header: ['Criterion', 'Weight', 'Mean', level, 'n', 'Contribution', 'Share of reward'],
      numeric: [false, true, true, true, true, true, true],
      rows: criteriaRows,
      empty: 'No criteria configured or scored.',
    });
  }
  tables.push(
    {
      id: 'agents',
      title: 'Agents',
      caption: 'Per agent over the rollouts it ran in; the last column compares the final reward of rollouts where the agent had an error with those where it had none.',
      header: ['Agent', 'Rollouts', 'Visits', 'Calls LLM / tool', 'Errors (in rollouts)', 'Tokens in / out', 'Mean latency', 'Prompt · model', 'Reward with / without errors'],
      numeric: [false, true, true, true, true, true, true, false, true],
      rows: agentRows,
      empty: 'No agent ran.',
    },
    {
      id: 'decisions',
      title: 'Decisions',
      caption: `${
        d.expected.length ? 'Decision of the graph (rows) against the expected answer (columns)' : 'The decisions the graph emitted'
      } over rollouts it finished (failed ones without output included), with the mean final reward${d.expected.length ? ' of each cell' : ''}.`,
      header: ['Decision', ...d.expected.map((e) => `expected ${e}`), 'Rollouts', 'Mean reward', level],
      numeric: [false, ...d.expected.map(() => true), true, true, true],
      rows: d.rollouts ? decisionRows : [],
      empty: 'No rollout finished its graph.',
    },
    {
      id: 'failures',
      title: 'Failure categories',
      caption: `${fr.failedRollouts} rollouts failed; ${fr.rolloutsWithIssues} had a failure of some kind ("fatal" counts those that failed because of it).${fr.unread ? ` ${fr.unread} rollouts were classified from their record only (span reads are bounded).` : ''}`,
      header: ['Category', 'Rollouts', 'Fatal', 'Examples', 'First message'],
      numeric: [false, true, true, false, false],
      rows: failureRows,
      empty: 'No failures.',
    },
    {
      id: 'lowest',
      title: 'Lowest-reward rollouts',
      caption: `The rollouts with the lowest final reward (failed ones without output included)${parts.length ? ", with the custom reward's breakdown" : ''}.`,
      header: [
        'Rollout',
        'Task',
        'Status',
        'Reward',
        ...parts,
        'Decision',
        'Expected',
        'Turns',
        ...(m.shape.judge ? ['Judge failed'] : []),
        ...(withInfo ? ['Reward info'] : []),
      ],
      numeric: [false, false, false, true, ...parts.map(() => true), false, false, true, ...(m.shape.judge ? [false] : []), ...(withInfo ? [false] : [])],
      rows: lowestRows,
      empty: 'No rollout has a reward.',
    },
  );
  return tables;
}

// ---- Markdown ------------------------------------------------------------

/** Text safe in a GitHub-flavoured Markdown table cell: no pipes, HTML, emphasis or line breaks. */
export function markdownText(s: string): string {
  return s
    .replace(/[\r\n]+/g, ' ')
    .replace(/\\/g, '\\\\')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\|/g, '\\|')
    .replace(/([`*_[\]~#!])/g, '\\$1');
}

function markdownCell(c: ReportCell): string {
  if (typeof c === 'string') return markdownText(c);
  // Rollout ids are 32 hex digits, so a code span needs no escaping; the text beside them does.
  const links = c.links.map((l) => (/^[0-9a-f]{32}$/.test(l.rolloutId) ? `${l.text === l.rolloutId ? '' : `${markdownText(l.text)} `}\`${l.rolloutId}\`` : markdownText(l.text)));
  return [links.join('<br>'), c.text ? markdownText(c.text) : ''].filter(Boolean).join(' ');
}

export function reportMarkdown(report: EvaluationReport): string {
  const out: string[] = [];
  out.push(`# Evaluation report: ${markdownText(report.run.id)}`, '');
  if (report.run.simulated) out.push(`> **${markdownText(SIMULATED_NOTICE)}**`, '');
  for (const t of reportTables(report)) {
    out.push(`## ${markdownText(t.title)}`, '', markdownText(t.caption), '');
    if (t.rows.length === 0) {
      out.push(`_${markdownText(t.empty)}_`, '');
      continue;
    }
    out.push(`| ${t.header.map(markdownText).join(' | ')} |`);
    out.push(`|${t.numeric.map((n) => (n ? ' ---: ' : ' --- ')).join('|')}|`);
    for (const row of t.rows) out.push(`| ${row.map(markdownCell).join(' | ')} |`);
    out.push('');
  }
  if (report.notes.length) {
    out.push('## Notes', '');
    for (const n of report.notes) out.push(`- ${markdownText(n)}`);
    out.push('');
  }
  out.push(`Generated ${utc(report.generatedAt)} by Rollout Lab${report.run.simulated ? ' (SIMULATED endpoint)' : ''}.`, '');
  return out.join('\n');
}

// ---- HTML ----------------------------------------------------------------

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function htmlCell(c: ReportCell): string {
  if (typeof c === 'string') return escapeHtml(c);
  const links = c.links.map(
    (l) => `<span class="rollout"${l.title ? ` title="${escapeHtml(l.title)}"` : ''}>${l.text === l.rolloutId ? '' : `${escapeHtml(l.text)} `}<code>${escapeHtml(l.rolloutId)}</code></span>`,
  );
  return [links.join('<br>'), c.text ? escapeHtml(c.text) : ''].filter(Boolean).join(' ');
}

/** The criteria as bars with their confidence interval drawn as a whisker (inline SVG, prints as vectors). */
function criteriaChart(report: EvaluationReport): string {
  const rows = report.criteria.filter((k) => k.stat.mean !== null);
  if (rows.length === 0) return '';
  const rowH = 22;
  const labelW = 140;
  const barW = 360;
  const h = rows.length * rowH + 24;
  const x = (v: number): number => labelW + Math.max(0, Math.min(1, v)) * barW;
  const parts = rows.map((k, i) => {
    const y = i * rowH + 4;
    const mean = k.stat.mean!;
    const whisker = k.stat.ci
      ? `<line class="ci" x1="${x(k.stat.ci[0]).toFixed(1)}" x2="${x(k.stat.ci[1]).toFixed(1)}" y1="${y + 8}" y2="${y + 8}"/><line class="ci" x1="${x(k.stat.ci[0]).toFixed(1)}" x2="${x(k.stat.ci[0]).toFixed(1)}" y1="${y + 3}" y2="${y + 13}"/><line class="ci" x1="${x(k.stat.ci[1]).toFixed(1)}" x2="${x(k.stat.ci[1]).toFixed(1)}" y1="${y + 3}" y2="${y + 13}"/>`
      : '';
    return `<text x="${labelW - 8}" y="${y + 12}" text-anchor="end">${escapeHtml(k.name)}</text><rect class="bar" x="${labelW}" y="${y + 2}" width="${(x(mean) - labelW).toFixed(1)}" height="12"/>${whisker}<text x="${labelW + barW + 8}" y="${y + 12}">${escapeHtml(num(mean))}</text>`;
  });
  const axis = [0, 0.25, 0.5, 0.75, 1]
    .map((t) => `<line class="grid" x1="${x(t)}" x2="${x(t)}" y1="0" y2="${h - 20}"/><text class="tick" x="${x(t)}" y="${h - 6}" text-anchor="middle">${t}</text>`)
    .join('');
  return `<svg class="chart" role="img" aria-label="Mean judge score per criterion with ${Math.round(report.confidenceLevel * 100)} % confidence intervals" viewBox="0 0 ${labelW + barW + 60} ${h}" width="${labelW + barW + 60}" height="${h}">${axis}${parts.join('')}</svg>`;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --border: #d1d9e0; --head: #f6f8fa; --accent: #0969da; --warn-bg: #fff8c5; --warn-border: #d4a72c; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --border: #3d444d; --head: #151b23; --accent: #4493f8; --warn-bg: #272115; --warn-border: #9e6a03; } body { background: #0d1117; } }
body { font: 14px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 2rem auto; max-width: 1200px; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 1rem; word-break: break-all; }
h2 { font-size: 1.2rem; margin: 2rem 0 0.3rem; border-bottom: 1px solid var(--border); padding-bottom: 0.2rem; }
p.caption { color: var(--muted); margin: 0.2rem 0 0.6rem; }
.simulated { border: 2px solid var(--warn-border); background: var(--warn-bg); padding: 0.6rem 1rem; font-weight: 600; margin: 0 0 1rem; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid var(--border); padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: var(--head); }
td.num, th.num { text-align: right; white-space: nowrap; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; word-break: break-all; }
.empty { color: var(--muted); font-style: italic; }
svg.chart { max-width: 100%; height: auto; font-size: 12px; fill: var(--fg); }
svg.chart .bar { fill: var(--accent); opacity: 0.75; }
svg.chart .ci { stroke: var(--fg); stroke-width: 1.5; }
svg.chart .grid { stroke: var(--border); }
svg.chart .tick { fill: var(--muted); font-size: 10px; }
footer { color: var(--muted); margin-top: 2rem; font-size: 12px; }
@media print { body { margin: 0; max-width: none; font-size: 11px; color: #000; background: #fff; } :root { --fg: #000; --muted: #444; --border: #999; --head: #eee; --accent: #555; --warn-bg: #fff; --warn-border: #000; } h2 { break-after: avoid; } tr, svg { break-inside: avoid; } .table-wrap { overflow: visible; } th, td { padding: 0.15rem 0.3rem; } }
`;

export function reportHtml(report: EvaluationReport): string {
  const out: string[] = [];
  const title = `Evaluation report: ${report.run.id}${report.run.simulated ? ' (SIMULATED)' : ''}`;
  out.push('<!DOCTYPE html>', '<html lang="en">', '<head>', '<meta charset="utf-8">');
  out.push('<meta name="viewport" content="width=device-width, initial-scale=1">');
  // The document runs nothing and loads nothing: a CSP says so to whoever opens it.
  out.push(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`);
  out.push(`<title>${escapeHtml(title)}</title>`, `<style>${STYLE}</style>`, '</head>', '<body>');
  out.push(`<h1>Evaluation report: ${escapeHtml(report.run.id)}</h1>`);
  if (report.run.simulated) out.push(`<p class="simulated" role="note">${escapeHtml(SIMULATED_NOTICE)}</p>`);
  for (const t of reportTables(report)) {
    out.push(`<section id="${t.id}">`, `<h2>${escapeHtml(t.title)}</h2>`, `<p class="caption">${escapeHtml(t.caption)}</p>`);
    if (t.id === 'criteria') out.push(criteriaChart(report));
    if (t.rows.length === 0) {
      out.push(`<p class="empty">${escapeHtml(t.empty)}</p>`, '</section>');
      continue;
    }
    const cls = (i: number): string => (t.numeric[i] ? ' class="num"' : '');
    out.push('<div class="table-wrap">', '<table>', `<thead><tr>${t.header.map((h, i) => `<th scope="col"${cls(i)}>${escapeHtml(h)}</th>`).join('')}</tr></thead>`, '<tbody>');
    for (const row of t.rows) out.push(`<tr>${row.map((c, i) => (i === 0 ? `<th scope="row">${htmlCell(c)}</th>` : `<td${cls(i)}>${htmlCell(c)}</td>`)).join('')}</tr>`);
    out.push('</tbody>', '</table>', '</div>', '</section>');
  }
  if (report.notes.length) out.push('<section id="notes">', '<h2>Notes</h2>', '<ul>', ...report.notes.map((n) => `<li>${escapeHtml(n)}</li>`), '</ul>', '</section>');
  out.push(`<footer>Generated ${escapeHtml(utc(report.generatedAt))} by Rollout Lab${report.run.simulated ? ' (SIMULATED endpoint)' : ''}.</footer>`);
  out.push('</body>', '</html>', '');
  return out.join('\n');
}
