import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { buildEvaluationReport, reportOptionsFromConfig, type EvaluationReport } from '../../../src/core/analysis/evaluationReport';
import { markdownText, reportHtml, reportMarkdown, reportTables } from '../../../src/core/analysis/reportFormat';

/*
 * Markdown and HTML of a real report (simulated endpoint) whose task ids carry
 * markup and table syntax: they must come out as text, and the tables keep
 * their shape.
 */

const EVIL = ['<script>alert(1)</script>', 'a|b||c', '*bold* _x_ `code` [l](http://x) & <b>'];

/** Cells of a GFM table row: split on pipes that are not escaped. */
function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

describe('report rendering', () => {
  let dir: string;
  let report: EvaluationReport;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-reportfmt-'));
    const data = join(dir, 'tasks.jsonl');
    const rows = EVIL.map((id, i) => ({
      id,
      goal: `Does treatment ${i} reduce the risk of the outcome studied here?`,
      context: `A randomised trial of treatment ${i} in adults. The outcome was lower in the treated group.`,
      expected_decision: i === 1 ? 'no' : 'yes',
    }));
    writeFileSync(data, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
    await initWorkspace(dir, { dataset: data });
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const ds = await lab.loadDataset();
      const env = await lab.environment(ds.tasks);
      const r = await runRollouts(env, { tasks: lab.selectTasks(ds, { split: 'all', seed: 1 }), samples: 1, concurrency: 3, params: { command: 'eval', split: 'all' }, seed: 1 });
      report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, r.runId));
    } finally {
      await lab.close();
    }
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the premise: a simulated run whose task ids carry markup', () => {
    assert.equal(report.run.simulated, true);
    assert.equal(report.run.counts.succeeded, EVIL.length);
    assert.deepEqual(report.lowest.map((l) => l.taskId).sort(), [...EVIL].sort());
  });

  it('Markdown: SIMULATED up front, every table row as wide as its header, markup and pipes escaped', () => {
    const md = reportMarkdown(report);
    assert.match(md.split('\n').slice(0, 4).join('\n'), /SIMULATED endpoint/);
    assert.ok(!md.includes('<script'), 'no raw script tag');
    assert.ok(!md.includes('<b>'), 'no raw HTML from data');
    assert.ok(md.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(md.includes('a\\|b\\|\\|c'));
    assert.ok(md.includes('\\*bold\\* \\_x\\_ \\`code\\` \\[l\\](http://x) &amp; &lt;b&gt;'));
    // Each table: header, delimiter, rows with the same number of cells.
    const lines = md.split('\n');
    let tables = 0;
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i]!.startsWith('|') || !lines[i + 1]?.startsWith('|') || !/^\|( ---:? \|)+$/.test(lines[i + 1]!)) continue;
      tables++;
      const width = cells(lines[i]!).length;
      assert.equal(cells(lines[i + 1]!).length, width);
      for (let j = i + 2; j < lines.length && lines[j]!.startsWith('|'); j++) assert.equal(cells(lines[j]!).length, width, `row ${lines[j]}`);
    }
    assert.equal(tables, reportTables(report).filter((t) => t.rows.length).length);
    // The evil ids appear in the lowest-reward table, escaped, one row each.
    const lowest = md.slice(md.indexOf('## Lowest-reward rollouts'));
    for (const id of EVIL) assert.ok(lowest.includes(`| ${markdownText(id)} |`), id);
    // Numbers are the report's.
    assert.ok(md.includes(`| Average final reward | ${report.table.finalReward.mean!.toFixed(3)} |`));
  });

  it('HTML: a standalone page that runs nothing, everything escaped, SIMULATED marked', () => {
    const html = reportHtml(report);
    assert.match(html, /^<!DOCTYPE html>/);
    assert.ok(!/<script/i.test(html), 'no script element at all');
    assert.ok(!/\son\w+=/i.test(html), 'no event handler attributes');
    assert.ok(!/(src|href)=/i.test(html), 'nothing loaded from anywhere');
    assert.match(html, /<p class="simulated" role="note">SIMULATED endpoint/);
    assert.match(html, /<title>[^<]*\(SIMULATED\)<\/title>/);
    assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    assert.ok(html.includes('a|b||c'), 'pipes need no escaping in HTML');
    assert.ok(html.includes('&amp; &lt;b&gt;'));
    assert.ok(!html.includes('<b>'));
    assert.match(html, /@media print/);
    // One data row per table row, one table per non-empty section.
    const tables = reportTables(report).filter((t) => t.rows.length);
    assert.equal((html.match(/<table>/g) ?? []).length, tables.length);
    assert.equal((html.match(/<tbody>[\s\S]*?<\/tbody>/g) ?? []).map((b) => (b.match(/<tr>/g) ?? []).length).join(), tables.map((t) => t.rows.length).join());
    // The criteria chart: a bar per scored criterion.
    assert.equal((html.match(/class="bar"/g) ?? []).length, report.criteria.filter((c) => c.stat.mean !== null).length);
  });

  it('a run on configured models says nothing about simulation', () => {
    const real: EvaluationReport = { ...report, run: { ...report.run, simulated: false } };
    assert.ok(!reportMarkdown(real).includes('SIMULATED'));
    assert.ok(!reportHtml(real).includes('SIMULATED'));
  });
});
