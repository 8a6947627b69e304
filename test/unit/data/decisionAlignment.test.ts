import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  RESEARCH_LAB_DECISIONS,
  decisionAlignment,
  decisionAlignmentSql,
  decisionLabelsOf,
  type Alignment,
  type DecisionLabels,
} from '../../../src/core/data/decisionAlignment';
import { LabConfigSchema } from '../../../src/core/config/schema';
import { loadSqlJs } from '../../../src/core/store/sqlJsLoader';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { buildEvaluationReport } from '../../../src/core/analysis/evaluationReport';
import { computeMetrics } from '../../../src/core/analysis/metrics';
import { compareRuns } from '../../../src/core/analysis/comparison';
import { comparisonTask } from '../../../src/core/analysis/comparisonTask';
import { promptVersionStats } from '../../../src/core/analysis/promptStats';
import { diffStoredRollouts } from '../../../src/core/analysis/traceDiff';
import { reportMarkdown } from '../../../src/core/analysis/reportFormat';
import { makeRollout, makeRun, tempWorkspace } from '../store/helpers/storeFixtures';

const DECISIONS = ['GO', 'go', ' No Go ', 'NO_GO', 'NOGO', 'NO-GO', 'no\tgo', 'yes', 'No', 'MAYBE', 'ACCEPT', 'accept ', 'reject', 'PERHAPS', 'Gö', "it's", '', null];
const EXPECTED = ['yes', 'no', 'maybe', ' YES', 'No', 'unsure', '', null];
const MAPPINGS: Record<string, DecisionLabels> = {
  'the research lab': RESEARCH_LAB_DECISIONS,
  'a graph of its own': { ACCEPT: 'yes', reject: 'no' },
  'none (labels read as themselves)': {},
};

describe('decision alignment: one definition', () => {
  it('the SQL the table filters with selects exactly what decisionAlignment says, for every spelling and mapping', async () => {
    const SQL = await loadSqlJs();
    const db = new SQL.Database();
    db.run('CREATE TABLE r(i INTEGER, decision TEXT, expected TEXT)');
    const pairs: Array<[string | null, string | null]> = DECISIONS.flatMap((d) => EXPECTED.map((e): [string | null, string | null] => [d, e]));
    pairs.forEach(([d, e], i) => db.run('INSERT INTO r VALUES(?, ?, ?)', [i, d, e]));
    for (const [name, labels] of Object.entries(MAPPINGS)) {
      for (const kind of ['aligned', 'misaligned', 'other'] as const) {
        const sql = db.exec(`SELECT i FROM r WHERE ${decisionAlignmentSql(kind, 'decision', 'expected', labels)} ORDER BY i`);
        const got = (sql[0]?.values ?? []).map((v) => Number(v[0]));
        const want = pairs.flatMap(([d, e], i) => {
          const a: Alignment = decisionAlignment(d, e, labels);
          return (kind === 'other' ? a === 'maybe' || a === 'unknown' : a === kind) ? [i] : [];
        });
        assert.deepEqual(got, want, `${kind} under ${name}`);
      }
    }
    db.close();
    // The research lab's case the issue met: GO stands for "yes", NO-GO for "no", however spelled.
    assert.equal(decisionAlignment('GO', 'yes'), 'aligned');
    assert.equal(decisionAlignment(' no go ', 'no'), 'aligned');
    assert.equal(decisionAlignment('NO-GO', 'yes'), 'misaligned');
    assert.equal(decisionAlignment('GO', 'maybe'), 'maybe');
    assert.equal(decisionAlignment('ACCEPT', 'yes', MAPPINGS['a graph of its own']), 'aligned');
    assert.equal(decisionAlignment('yes', 'YES', {}), 'aligned', 'without a mapping a decision matches the label it spells, in any case');
    assert.equal(decisionAlignment('GO', 'yes', {}), 'unknown', 'a graph of its own declares GO if it means yes');
  });

  it('the mapping is what the graph declares in lab.json, the research lab\'s by default', () => {
    const base = { models: { strong: { model: 'x' } }, agents: {} };
    assert.deepEqual(decisionLabelsOf(LabConfigSchema.parse(base)), RESEARCH_LAB_DECISIONS);
    assert.deepEqual(decisionLabelsOf(LabConfigSchema.parse({ ...base, graph: { kind: 'module', module: 'g.ts' } })), {});
    assert.deepEqual(decisionLabelsOf(LabConfigSchema.parse({ ...base, graph: { kind: 'module', module: 'g.ts', decisions: { APPROVE: 'yes', REVISE: 'no' } } })), { APPROVE: 'yes', REVISE: 'no' });
    const bad = LabConfigSchema.safeParse({ ...base, graph: { decisions: { GO: 'true' } } });
    assert.equal(bad.success, false, 'a decision stands for yes, no or maybe');
  });
});

describe('decision alignment reads the same on every surface', () => {
  let ws: ReturnType<typeof tempWorkspace>;
  let store: TraceStore;
  // Nine scored rollouts as the issue saw them: 5 aligned of 9 labelled yes / no.
  const CASES: Record<string, Array<[string | null, string]>> = {
    'run-lab': [['GO', 'yes'], ['GO', 'yes'], ['NO-GO', 'no'], ['no go', 'no'], ['GO', 'yes'], ['GO', 'no'], ['NO-GO', 'yes'], ['NO-GO', 'yes'], [null, 'no'], ['GO', 'maybe']],
    'run-own': [['APPROVE', 'yes'], ['approve', 'yes'], ['REVISE', 'no'], ['REVISE', 'no'], ['APPROVE', 'yes'], ['APPROVE', 'no'], ['REVISE', 'yes'], ['REVISE', 'yes'], [null, 'no'], ['APPROVE', 'maybe']],
  };
  const LABELS: Record<string, DecisionLabels> = { 'run-lab': RESEARCH_LAB_DECISIONS, 'run-own': { APPROVE: 'yes', REVISE: 'no' } };
  const written = new Map<string, RolloutRecord[]>();

  before(async () => {
    ws = tempWorkspace();
    store = await TraceStore.open(ws.dir);
    store.putPromptVersion({ hash: 'pv-Supervisor-1', agent: 'Supervisor', text: 'You supervise.', firstSeen: 1 });
    for (const [runId, cases] of Object.entries(CASES)) {
      // Each run twice, so a comparison has two sides to read.
      for (const id of [runId, `${runId}-again`]) {
        store.startRun(makeRun(id, { status: 'done', planned: cases.length }));
        const rs = cases.map(([decision, expectedDecision], i) => ({
          ...makeRollout({ runId: id, taskId: `t${i}`, startTime: 10_000 + i, finalReward: 0.2 + i / 20 }),
          decision,
          expectedDecision,
        }));
        for (const r of rs) {
          store.startRollout(r);
          store.finishRollout(r);
        }
        written.set(id, rs);
      }
    }
  });
  after(async () => {
    await store.close();
    ws.cleanup();
  });

  for (const runId of Object.keys(CASES)) {
    it(`${runId}: the table's marks, its filter, the report, the metrics, the comparison, prompt stats and the diff`, () => {
      const labels = LABELS[runId]!;
      const rs = written.get(runId)!;
      const truth = new Map(rs.map((r) => [r.id, decisionAlignment(r.decision, r.expectedDecision, labels)]));
      const aligned = [...truth.values()].filter((a) => a === 'aligned').length;
      const misaligned = [...truth.values()].filter((a) => a === 'misaligned').length;
      assert.deepEqual([aligned, misaligned], [5, 3], 'the premise: 5 aligned, 3 not, one undecided, one maybe');

      // Rollouts Table: each row's mark, and the filter's three choices.
      const page = store.queryTable({ runIds: [runId] }, null, labels);
      for (const row of page.rows) assert.equal(row.alignment, truth.get(row.id), `row ${row.taskId}`);
      const filtered = (decision: 'match' | 'mismatch' | 'none'): number => store.queryTable({ runIds: [runId], decision }, null, labels).total;
      assert.deepEqual([filtered('match'), filtered('mismatch'), filtered('none')], [aligned, misaligned, rs.length - aligned - misaligned]);

      // Evaluation Report (the panel, `report` and its Markdown) and the metrics `run --json` prints.
      const report = buildEvaluationReport(store, { runId, criteria: {}, decisionLabels: labels });
      assert.deepEqual([report.table.decisionAlignment?.count, report.table.decisionAlignment?.n], [aligned, 9]);
      assert.match(reportMarkdown(report), /Decision alignment \| 55\.6 %/);
      const metrics = computeMetrics(rs, { criteria: [], judge: true, custom: false }, labels);
      assert.deepEqual([metrics.alignedCount, metrics.alignmentDenominator], [aligned, 9]);
      assert.deepEqual(metrics.maybe, { rollouts: 1, go: 1, noGo: 0, undecided: 0 });

      // Comparison (a run against itself), its per-task view, prompt statistics and the trace diff.
      const cmp = compareRuns(store, runId, `${runId}-again`, [], labels).aggregate;
      assert.deepEqual([cmp.alignment.a.aligned, cmp.alignment.a.total, cmp.alignment.b.aligned], [aligned, 9, aligned]);
      for (const r of rs) {
        const task = comparisonTask(store, { runA: runId, runB: `${runId}-again` }, r.taskId, labels);
        assert.equal(task.a.samples[0]!.alignment, truth.get(r.id));
        assert.equal(diffStoredRollouts(store, r.id, r.id, labels).left.alignment, truth.get(r.id));
      }
      // Every run ran the same prompt version: its alignment is over all of them, each under this mapping.
      const stats = promptVersionStats(store, 'Supervisor', { labels }).find((s) => s.rollouts > 0)!;
      const all = [...written.values()].flat();
      const allAligned = all.filter((r) => decisionAlignment(r.decision, r.expectedDecision, labels) === 'aligned').length;
      const labelled = all.filter((r) => r.expectedDecision === 'yes' || r.expectedDecision === 'no').length;
      assert.ok(Math.abs(stats.decisionAlignment! - (100 * allAligned) / labelled) < 1e-9, `${stats.decisionAlignment} vs ${allAligned}/${labelled}`);
    });
  }
});
