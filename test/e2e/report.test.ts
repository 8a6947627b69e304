import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimServer } from '../../src/core/sim/simServer';
import type { EvaluationReport } from '../../src/core/analysis/evaluationReport';
import { cli, cliAsync, json, tempWorkspace, PUBMEDQA, type RunDoc } from './cliHelpers';

/*
 * `rollout-lab report` as a user runs it, on a store made by `rollout-lab
 * eval`: the simulated endpoint for one run, and a faulty endpoint for another
 * (its first call answers 503 with no retries, its judge never answers JSON),
 * so the report has failure categories to show.
 */

describe('rollout-lab report', () => {
  let ws: string;
  let simRun: RunDoc;
  let faultRun: RunDoc;

  before(async () => {
    ws = tempWorkspace();
    assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
    const file = join(ws, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    for (const m of Object.values(cfg.models) as Array<Record<string, unknown>>) m.maxRetries = 0;
    writeFileSync(file, JSON.stringify(cfg, null, 2));

    const server = await startSimServer({
      faults: ({ index, agent }) => (index === 0 ? { kind: 'server-error', status: 503 } : agent === 'Judge' ? { kind: 'not-json' } : null),
    });
    try {
      // The CLI runs in its own process while the fault server answers in this one.
      const r = await cliAsync(['eval', '--workspace', ws, '--base-url', server.url, '--limit', '3', '--concurrency', '1', '--json']).done;
      assert.equal(r.code, 0, r.stderr);
      faultRun = json<RunDoc>(r);
    } finally {
      await server.close();
    }
    const s = cli(['eval', '--workspace', ws, '--limit', '3', '--json']);
    assert.equal(s.code, 0, s.stderr);
    simRun = json<RunDoc>(s);
  });
  after(() => {
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  it('prints the newest evaluation run as Markdown by default, SIMULATED up front', () => {
    const r = cli(['report', '--workspace', ws]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^# Evaluation report: ${simRun.runId}\\n`));
    assert.match(r.stdout.split('\n').slice(0, 4).join('\n'), /SIMULATED endpoint/);
    assert.match(r.stdout, /\| Execution success rate \| 100\.0 % \| /);
    assert.match(r.stdout, new RegExp(`\\| Average final reward \\| ${simRun.metrics.averageFinalReward.toFixed(3)} \\| `));
  });

  it('JSON: the same evaluation table that eval printed, with failure categories from the faulty run', () => {
    const r = cli(['report', '--workspace', ws, '--run', faultRun.runId, '--format', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const report = json<EvaluationReport>(r);
    assert.equal(report.run.id, faultRun.runId);
    assert.equal(report.run.simulated, false);
    assert.deepEqual(report.table.metrics, faultRun.metrics, 'the report and eval agree on every number of the table');
    assert.deepEqual(report.run.counts, { total: 3, succeeded: 2, failed: 1, noOutput: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 0 });
    assert.equal(report.table.metrics.failures.server_error, 1, 'the failed rollout carries its category');
    const server = report.failures.categories.find((c) => c.kind === 'server_error');
    assert.ok(server, JSON.stringify(report.failures.categories));
    assert.equal(server.fatal, 1);
    assert.match(server.examples[0]!.message, /503/);
    const judge = report.failures.categories.find((c) => c.kind === 'judge_failed');
    assert.equal(judge?.rollouts, 2);
    assert.equal(report.table.judgeFailures?.count, 2);
    const md = cli(['report', '--workspace', ws, '--run', faultRun.runId]).stdout;
    assert.ok(!md.includes('SIMULATED'), 'a run on a configured endpoint is not marked simulated');
    assert.match(md, /\| Server error \(HTTP 5xx\) \| 1 \| 1 \| /);
  });

  it('writes HTML to --out (the format follows the extension) and Markdown with --format', () => {
    const html = join(ws, 'out', 'report.html');
    const r = cli(['report', '--workspace', ws, '--out', html]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, new RegExp(`wrote the evaluation report of ${simRun.runId} to .*report\\.html \\(SIMULATED endpoint\\)`));
    const page = readFileSync(html, 'utf8');
    assert.match(page, /^<!DOCTYPE html>/);
    assert.match(page, /class="simulated"/);
    assert.ok(!/<script/i.test(page));
    const md = join(ws, 'report.txt');
    assert.equal(cli(['report', '--workspace', ws, '--format', 'md', '--out', md]).code, 0);
    assert.match(readFileSync(md, 'utf8'), /^# Evaluation report: /);
  });

  it('bad input: an unknown run says how to list runs; a bad format names the choices; nothing is written', () => {
    const before = readdirSync(ws).sort();
    const r = cli(['report', '--workspace', ws, '--run', 'run-nope', '--out', join(ws, 'x.md')]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
    assert.match(r.stderr, /run "run-nope" is not in this workspace's store .*rollout-lab traces/);
    assert.ok(r.stderr.includes(simRun.runId), 'it names the newest runs');
    assert.ok(!existsSync(join(ws, 'x.md')));
    const f = cli(['report', '--workspace', ws, '--format', 'pdf']);
    assert.equal(f.code, 2);
    assert.match(f.stderr, /--format must be md, html or json/);
    assert.deepEqual(readdirSync(ws).sort(), before);
  });
});
