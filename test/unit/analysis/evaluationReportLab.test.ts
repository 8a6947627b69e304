import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { metricsTable } from '../../../src/core/analysis/metricsTable';
import { buildEvaluationReport, reportOptionsFromConfig, type EvaluationReport } from '../../../src/core/analysis/evaluationReport';
import { MAX_DECISION_ROWS } from '../../../src/core/analysis/reportBreakdowns';
import { reportMarkdown, reportTables } from '../../../src/core/analysis/reportFormat';
import { wilsonInterval } from '../../../src/core/analysis/statistics';
import type { Lab } from '../../../src/core/lab/lab';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { Attr } from '../../../src/core/trace/span';
import { SQL_QUESTIONS, textToSqlLab, type TextToSqlLab } from '../../fixtures/reports/textToSqlLab';
import { makeRollout, makeRun, tempWorkspace } from '../store/helpers/storeFixtures';

/*
 * The report of a lab that is not the research lab (see textToSqlLab): its
 * decisions, its reward's breakdown and info must show, and nothing it does
 * not have (judge rows, decision alignment).
 */

describe('the report follows the lab: a text-to-SQL graph with a custom reward and no judge', () => {
  let sql: TextToSqlLab;
  let lab: Lab;
  let rollouts: RolloutRecord[];
  let report: EvaluationReport;

  before(async () => {
    sql = await textToSqlLab();
    ({ lab, rollouts } = sql);
    report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, sql.runId));
  });

  after(async () => {
    await sql?.close();
  });

  const byGoal = (marker: string): RolloutRecord[] => rollouts.filter((r) => sql.question(r).includes(marker));

  it('a graph that ends without an answer fails as "no output", keeps its reward and its trace says why', () => {
    assert.equal(rollouts.length, SQL_QUESTIONS.length);
    const [empty] = byGoal('[empty]');
    assert.equal(empty!.status, 'failed');
    assert.equal(empty!.failure, 'no_output');
    assert.equal(empty!.finalReward, 0, "the custom reward's, as before");
    assert.match(empty!.error!, /the graph finished without a final output/);
    assert.deepEqual(empty!.rewardBreakdown, { execution_match: 0, valid_sql: 0 });
    const spans = lab.store.getSpans(empty!.id);
    const root = spans.find((s) => s.kind === 'rollout')!;
    assert.equal(root.status, 'error');
    assert.equal(root.attributes[Attr.failure], 'no_output');
    assert.ok(spans.some((s) => s.kind === 'reward' && s.name === 'custom'), 'still scored');
    for (const r of rollouts.filter((x) => x !== empty)) {
      assert.equal(r.status, 'succeeded');
      assert.equal(r.failure, null);
      assert.deepEqual(r.rewardBreakdown, { execution_match: r.decision === 'CORRECT' ? 1 : 0, valid_sql: 1 });
      assert.equal(r.criteria, null, 'the judge never ran');
    }
  });

  it('the evaluation table: honest success rate, no judge rows, no alignment, the breakdown as rows, intervals inside 0..1', () => {
    const t = report.table;
    assert.deepEqual(t.metrics.shape, { judge: false, alignment: false, customReward: true });
    assert.deepEqual([t.executionSuccess.count, t.executionSuccess.n], [5, 6]);
    assert.deepEqual([t.noOutput.count, t.noOutput.n], [1, 6]);
    assert.equal(t.finalReward.mean, 0.5);
    assert.deepEqual(t.finalReward.ci, wilsonInterval(3, 6), 'a pass/fail reward gets the Wilson interval');
    assert.equal(t.decisionAlignment, null);
    assert.equal(t.judgeFailures, null);
    assert.deepEqual(t.judge, []);
    assert.deepEqual(
      t.customReward.map((p) => [p.part, p.stat.mean]),
      [
        ['execution_match', 0.5],
        ['valid_sql', 5 / 6],
      ],
    );
    for (const p of t.customReward) assert.ok(p.stat.ci && p.stat.ci[0] >= 0 && p.stat.ci[1] <= 1, `${p.part}: ${p.stat.ci}`);

    const rows = reportTables(report).find((x) => x.id === 'evaluation')!.rows.map((r) => r[0]);
    assert.deepEqual(rows, ['Execution success rate', 'No final output', 'Average final reward', 'Average turn count', 'Reward: execution_match', 'Reward: valid_sql']);
    const cli = metricsTable(t.metrics, true);
    assert.doesNotMatch(cli, /Judge|Alignment/);
    assert.match(cli, /Decisions\s+6\s+3 CORRECT, 2 INCORRECT, 1 none/);
  });

  it('no criteria section without a judge; decisions as the graph emits them, with no expected columns for unlabelled tasks', () => {
    assert.deepEqual(report.criteria, []);
    const ids = reportTables(report).map((x) => x.id);
    assert.ok(!ids.includes('criteria'), ids.join());
    const d = report.decisions;
    assert.equal(d.alignment, false);
    assert.deepEqual(d.decisions, ['CORRECT', 'INCORRECT', '(none)']);
    assert.deepEqual(d.expected, []);
    assert.deepEqual(
      d.byDecision.map((b) => [b.decision, b.count, b.reward.mean]),
      [
        ['CORRECT', 3, 1],
        ['INCORRECT', 2, 0],
        ['(none)', 1, 0],
      ],
    );
    for (const b of d.byDecision) assert.ok(b.reward.ci && b.reward.ci[0] >= 0 && b.reward.ci[1] <= 1, `${b.decision}: ${b.reward.ci}`);
    const table = reportTables(report).find((x) => x.id === 'decisions')!;
    assert.deepEqual(table.header, ['Decision', 'Rollouts', 'Mean reward', '95 % CI']);
    assert.deepEqual(table.rows.map((r) => r[0]), ['CORRECT', 'INCORRECT', '(none)']);
  });

  it("failure categories and the lowest rollouts: no output with its example, the reward's breakdown and info as columns", () => {
    const noOutput = report.failures.categories.find((c) => c.kind === 'no_output')!;
    assert.equal(noOutput.label, 'No final output');
    assert.equal(noOutput.fatal, 1);
    assert.deepEqual(noOutput.examples.map((e) => e.rolloutId), [byGoal('[empty]')[0]!.id]);
    assert.equal(report.failures.failedRollouts, 1);

    assert.deepEqual(report.rewardParts, ['execution_match', 'valid_sql']);
    const empty = report.lowest.find((l) => l.failure === 'no_output')!;
    assert.equal(empty.status, 'failed');
    assert.equal(empty.rewardInfo, 'nothing to run');
    assert.ok(report.lowest.some((l) => l.rewardInfo === 'ran: SELECT count(*) FROM book'));
    const table = reportTables(report).find((x) => x.id === 'lowest')!;
    assert.deepEqual(table.header, ['Rollout', 'Task', 'Status', 'Reward', 'execution_match', 'valid_sql', 'Decision', 'Expected', 'Turns', 'Reward info']);
    const row = table.rows.find((r) => r[1] === empty.taskId)!;
    assert.deepEqual(row.slice(2, 6), ['failed (no output)', '0.000', '0.000', '0.000']);
    for (const r of table.rows) assert.equal(r.length, table.header.length);

    assert.ok(report.notes.some((n) => /^1 rollout finished without a final output: failed in the execution success rate, and counted with the reward given/.test(n)), report.notes.join(' | '));
    const md = reportMarkdown(report);
    assert.doesNotMatch(md, /Judge|Decision alignment/, 'nothing of the research lab the graph never used');
  });
});

describe('the decision table of graphs with their own decisions', () => {
  it('keeps the most frequent decisions as rows, the rest under (other); labelled tasks still get their columns', async () => {
    const ws = tempWorkspace();
    const store = await TraceStore.open(ws.dir);
    try {
      store.startRun(makeRun('run-d', { status: 'done' }));
      const add = (decision: string, expectedDecision: 'yes' | 'no' | null, n: number): void => {
        for (let i = 0; i < n; i++) {
          const r = { ...makeRollout({ runId: 'run-d', taskId: `${decision}-${i}`, finalReward: expectedDecision === 'yes' ? 1 : 0 }), decision, expectedDecision, criteria: null };
          store.startRollout(r);
          store.finishRollout(r);
        }
      };
      // Fourteen labels: two frequent, twelve seen once.
      add('APPROVE', 'yes', 3);
      add('REVISE', 'no', 2);
      for (let k = 0; k < 12; k++) add(`LABEL-${String(k).padStart(2, '0')}`, null, 1);
      const report = buildEvaluationReport(store, { runId: 'run-d', criteria: {}, judge: false, customReward: true });
      const d = report.decisions;
      assert.equal(d.alignment, false, 'APPROVE / REVISE are not GO / NO-GO');
      assert.equal(d.decisions.length, MAX_DECISION_ROWS);
      assert.deepEqual(d.decisions.slice(0, 2), ['APPROVE', 'REVISE']);
      assert.equal(d.decisions.at(-1), '(other)');
      assert.equal(d.byDecision.at(-1)!.count, 12 - (MAX_DECISION_ROWS - 3), 'the labels without a row of their own');
      assert.equal(d.byDecision.reduce((s, b) => s + b.count, 0), 17);
      assert.deepEqual(d.expected, ['yes', 'no', 'unlabelled']);
      assert.equal(d.cells.find((c) => c.decision === 'APPROVE' && c.expected === 'yes')!.count, 3);
      assert.equal(report.table.decisionAlignment, null);
    } finally {
      await store.close();
      ws.cleanup();
    }
  });
});
