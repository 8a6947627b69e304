import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HumanMessage } from '@langchain/core/messages';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutRecord } from '../../../src/core/store/types';
import { compareRuns } from '../../../src/core/analysis/comparison';
import { listComparisons } from '../../../src/core/analysis/comparisonList';
import { comparisonTask } from '../../../src/core/analysis/comparisonTask';
import { protocolInJudgeMessage } from '../../../src/core/analysis/judgeInputProtocol';
import { judgeMessages } from '../../../src/core/reward/judge';
import { wilsonInterval } from '../../../src/core/analysis/statistics';
import { toMessageRecord } from '../../../src/core/trace/messages';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { makeRollout, makeRun, spanId, tempWorkspace } from '../store/helpers/storeFixtures';

// R's `sleep` data (extra hours of sleep, two drugs on the same ten patients), shifted and scaled into 0..1.
const SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
const SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
const A_REWARDS = SLEEP_1.map((x) => 0.5 + x / 10);
const B_REWARDS = SLEEP_2.map((x) => 0.5 + x / 10);
// t.test(sleep$extra[11:20], sleep$extra[1:10], paired = TRUE) in R: t = 4.0621, df = 9, p = 0.002833, CI 0.7001142 to 2.4598858 (÷10 here).
const R_T = 4.062128;
const R_P = 0.002832890;
const R_CI: [number, number] = [0.07001142, 0.24598858];

/** Γ(x) for x a positive multiple of ½: exact products, independent of the library's log-gamma. */
function gammaHalf(x: number): number {
  let g = Number.isInteger(x) ? 1 : Math.sqrt(Math.PI);
  for (let k = Number.isInteger(x) ? 1 : 0.5; k < x; k++) g *= k;
  return g;
}

/** Two-sided p of Student's t by Simpson integration of its density (independent of the incomplete beta). */
function tTwoSidedP(t: number, df: number): number {
  const c = gammaHalf((df + 1) / 2) / (Math.sqrt(df * Math.PI) * gammaHalf(df / 2));
  const pdf = (x: number): number => c * (1 + (x * x) / df) ** (-(df + 1) / 2);
  const n = 20_000;
  const h = Math.abs(t) / n;
  let s = pdf(0) + pdf(Math.abs(t));
  for (let i = 1; i < n; i++) s += (i % 2 ? 4 : 2) * pdf(i * h);
  return 1 - 2 * ((s * h) / 3);
}

function close(actual: number | null | undefined, expected: number, tol: number, what: string): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected}`);
}

interface Fixture {
  store: TraceStore;
  cleanup(): Promise<void>;
  records: RolloutRecord[];
}

/**
 * Two runs of one comparison on tasks t0..t9 (A has two samples on the even
 * tasks, averaging to the sleep value), plus t10 run only in A and t11 whose
 * only B rollout failed; one ordinary run beside them.
 */
async function fixture(): Promise<Fixture> {
  const ws = tempWorkspace();
  const store = await TraceStore.open(ws.dir);
  const cmp = (side: 'a' | 'b', label: string, variant: Record<string, unknown>): Record<string, unknown> => ({ command: 'compare', comparison: { id: 'cmp-1', side, label, variant } });
  store.startRun(makeRun('run-a', { startTime: 1000, status: 'done', params: cmp('a', 'base', { label: 'base' }) }));
  store.startRun(makeRun('run-b', { startTime: 2000, status: 'done', params: cmp('b', 'tuned', { label: 'tuned', prompts: { Supervisor: { version: 'abc123' } } }) }));
  store.startRun(makeRun('run-plain', { startTime: 3000, status: 'done', params: { command: 'run' } }));
  const records: RolloutRecord[] = [];
  const add = (runId: string, taskId: string, sample: number, reward: number | null, over: Partial<RolloutRecord> = {}): RolloutRecord => {
    const r = { ...makeRollout({ runId, taskId, sample, finalReward: reward, split: 'val', startTime: 10_000 + records.length }), ...over };
    store.startRollout({ ...r, status: 'running', finalReward: null });
    store.finishRollout(r);
    records.push(r);
    return r;
  };
  for (let i = 0; i < 10; i++) {
    const expectedDecision = i % 3 === 0 ? 'yes' : i % 3 === 1 ? 'no' : 'maybe';
    // Criterion "clarity" moves by a task-dependent amount; "novelty" never changes.
    const critA = { novelty: 0.5, clarity: 0.4 + 0.03 * i };
    const critB = { novelty: 0.5, clarity: 0.4 + 0.03 * i + (i % 4 === 0 ? -0.02 : 0.05 + 0.01 * i) };
    if (i % 2 === 0 && i !== 4) {
      add('run-a', `t${i}`, 0, A_REWARDS[i]! + 0.1, { expectedDecision, decision: 'GO', criteria: critA });
      add('run-a', `t${i}`, 1, A_REWARDS[i]! - 0.1, { expectedDecision, decision: 'NO-GO', criteria: critA });
    } else {
      add('run-a', `t${i}`, 0, A_REWARDS[i]!, { expectedDecision, decision: 'NO-GO', criteria: critA });
    }
    add('run-b', `t${i}`, 0, B_REWARDS[i]!, { expectedDecision, decision: 'GO', criteria: critB });
  }
  add('run-a', 't10', 0, 0.9, { expectedDecision: 'yes' });
  add('run-a', 't11', 0, 0.8, { expectedDecision: 'yes' });
  add('run-b', 't11', 0, null, { status: 'failed', error: 'endpoint down', criteria: null, decision: null });
  add('run-plain', 't0', 0, 0.1);
  return {
    store,
    records,
    cleanup: async () => {
      await store.close();
      ws.cleanup();
    },
  };
}

test('compareRuns pairs tasks by id, averages samples, and its paired t matches R on the sleep data', async () => {
  const f = await fixture();
  try {
    const r = compareRuns(f.store, 'run-a', 'run-b', ['novelty', 'clarity']);
    assert.equal(r.id, 'cmp-1');
    assert.equal(r.a.label, 'base');
    assert.equal(r.b.label, 'tuned');
    assert.equal(r.b.spec, 'prompt:Supervisor=abc123,label:tuned');
    assert.equal(r.a.rollouts, 12 + 4, 'A: ten tasks, four of them twice, plus t10 and t11');
    assert.equal(r.b.failed, 1);
    assert.deepEqual(r.unpaired, [
      { taskId: 't10', scoredIn: 'a', reason: 'not run in B' },
      { taskId: 't11', scoredIn: 'a', reason: 'no scored rollout in B (1 failed)' },
    ]);
    assert.equal(r.aggregate.pairs, 10);
    const byTask = new Map(r.tasks.map((t) => [t.taskId, t]));
    for (let i = 0; i < 10; i++) {
      const t = byTask.get(`t${i}`)!;
      close(t.rewardA, A_REWARDS[i]!, 1e-12, `t${i} reward A (mean of its samples)`);
      close(t.rewardB, B_REWARDS[i]!, 1e-12, `t${i} reward B`);
      close(t.difference, B_REWARDS[i]! - A_REWARDS[i]!, 1e-12, `t${i} difference`);
      assert.equal(t.samplesA, i % 2 === 0 && i !== 4 ? 2 : 1);
      assert.equal(t.rolloutIdsA.length, t.samplesA);
      for (const id of t.rolloutIdsA) assert.equal(f.records.find((x) => x.id === id)!.taskId, `t${i}`);
    }
    // The task list comes sorted by difference, largest first.
    const diffs = r.tasks.map((t) => t.difference);
    assert.deepEqual(diffs, [...diffs].sort((x, y) => y - x));

    const g = r.aggregate;
    close(g.meanA, A_REWARDS.reduce((s, x) => s + x, 0) / 10, 1e-12, 'mean A');
    close(g.meanB, B_REWARDS.reduce((s, x) => s + x, 0) / 10, 1e-12, 'mean B');
    close(g.meanDifference, 0.158, 1e-12, 'mean difference (R: mean of differences 1.58 ÷ 10)');
    close(g.pairedT!.t, R_T, 1e-5, 'paired t');
    assert.equal(g.pairedT!.df, 9);
    close(g.pairedT!.pValue, R_P, 1e-7, 'paired t p-value');
    close(g.ciDifference![0], R_CI[0], 1e-7, 'CI low');
    close(g.ciDifference![1], R_CI[1], 1e-7, 'CI high');
    // One pair is tied (patient 5: −0.1 on both drugs); the other nine all favour B: W+ = 45, exact p = 2 / 2⁹.
    assert.equal(g.wilcoxon!.n, 9);
    assert.equal(g.wilcoxon!.zeros, 1);
    assert.equal(g.wilcoxon!.wPlus, 45);
    close(g.wilcoxon!.pValue, 2 / 512, 1e-15, 'Wilcoxon exact p');
    assert.deepEqual([g.wins, g.ties, g.losses], [9, 1, 0]);
    assert.equal(g.significant, true);
    assert.equal(g.verdict, 'b-better');
    assert.match(g.summary, /B \(tuned\) scores 0\.158 higher than A \(base\) on 10 paired tasks/);
    assert.match(g.summary, /significant at the 5 % level/);
    // The mean's interval for each side: m ± t(0.975, 9)·s/√n, with t(0.975, 9) = 2.262157 from tables.
    for (const [xs, ci] of [[A_REWARDS, g.ciA], [B_REWARDS, g.ciB]] as const) {
      const m = xs.reduce((s, x) => s + x, 0) / xs.length;
      const sd = Math.sqrt(xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1));
      close(ci![0], m - (2.262157 * sd) / Math.sqrt(10), 1e-6, 'CI of a side, low');
      close(ci![1], m + (2.262157 * sd) / Math.sqrt(10), 1e-6, 'CI of a side, high');
    }

    // Per criterion: novelty never moves (degenerate, p = 1); clarity by the independent t computation.
    const novelty = g.criteria.find((c) => c.criterion === 'novelty')!;
    assert.equal(novelty.difference, 0);
    assert.equal(novelty.pValue, 1);
    const clarity = g.criteria.find((c) => c.criterion === 'clarity')!;
    const d = Array.from({ length: 10 }, (_, i) => (i % 4 === 0 ? -0.02 : 0.05 + 0.01 * i));
    const md = d.reduce((s, x) => s + x, 0) / 10;
    const sdd = Math.sqrt(d.reduce((s, x) => s + (x - md) ** 2, 0) / 9);
    assert.equal(clarity.n, 10);
    close(clarity.difference, md, 1e-9, 'clarity mean difference');
    close(clarity.pValue, tTwoSidedP(md / (sdd / Math.sqrt(10)), 9), 1e-7, 'clarity paired p-value');

    // Alignment over the paired yes/no tasks' samples: A says GO then NO-GO on its doubled tasks, NO-GO elsewhere; B always GO.
    let aAligned = 0;
    let aTotal = 0;
    let bAligned = 0;
    let bTotal = 0;
    for (let i = 0; i < 10; i++) {
      const exp = i % 3 === 0 ? 'yes' : i % 3 === 1 ? 'no' : 'maybe';
      if (exp === 'maybe') continue;
      const decisionsA = i % 2 === 0 && i !== 4 ? ['GO', 'NO-GO'] : ['NO-GO'];
      aTotal += decisionsA.length;
      aAligned += decisionsA.filter((x) => (x === 'GO') === (exp === 'yes')).length;
      bTotal++;
      if (exp === 'yes') bAligned++;
    }
    assert.deepEqual(g.alignment.a, { aligned: aAligned, total: aTotal, percent: (100 * aAligned) / aTotal });
    assert.deepEqual(g.alignment.b, { aligned: bAligned, total: bTotal, percent: (100 * bAligned) / bTotal });
    assert.equal(byTask.get('t0')!.alignedA, 0.5);
    assert.equal(byTask.get('t2')!.alignedA, null, 'a "maybe" task has no alignment');

    // Swapping the sides mirrors every number.
    const swapped = compareRuns(f.store, 'run-b', 'run-a', ['novelty', 'clarity']);
    close(swapped.aggregate.meanDifference, -0.158, 1e-12, 'swapped difference');
    close(swapped.aggregate.pairedT!.pValue, R_P, 1e-7, 'swapped p');
    assert.deepEqual([swapped.aggregate.wins, swapped.aggregate.ties, swapped.aggregate.losses], [0, 1, 9]);
    assert.equal(swapped.aggregate.verdict, 'a-better');
  } finally {
    await f.cleanup();
  }
});

test('compareRuns: two ordinary runs, too few pairs, and unknown runs', async () => {
  const f = await fixture();
  try {
    const r = compareRuns(f.store, 'run-plain', 'run-b', []);
    assert.equal(r.id, null, 'runs from different comparisons have no comparison id');
    assert.equal(r.a.label, 'run-plain');
    assert.equal(r.a.spec, null);
    assert.deepEqual(r.criteria, ['clarity', 'novelty'], 'criteria default to those in the rollouts');
    assert.equal(r.aggregate.pairs, 1);
    assert.equal(r.aggregate.pairedT, null);
    assert.equal(r.aggregate.verdict, 'too-few-pairs');
    assert.match(r.aggregate.summary, /no significance test/);
    assert.equal(r.unpaired.length, 10);
    assert.throws(() => compareRuns(f.store, 'run-a', 'run-nope', []), /side B run "run-nope" is not in this workspace's store/);
    assert.throws(() => compareRuns(f.store, 'run-a', 'run-a', []), /two different runs/);
  } finally {
    await f.cleanup();
  }
});

test('compareRuns counts a rollout without output with its reward, and keeps every interval inside what rewards can take', async () => {
  const ws = tempWorkspace();
  const store = await TraceStore.open(ws.dir);
  try {
    store.startRun(makeRun('run-x', { status: 'done' }));
    store.startRun(makeRun('run-y', { status: 'done' }));
    // A pass/fail reward: A passes tasks 0, 2, 4; on task 1 its graph gave no output (failed, scored 0); B passes all five.
    [1, 0, 1, 0, 1].forEach((reward, i) => {
      const noOutput = i === 1 ? ({ status: 'failed', failure: 'no_output' } as const) : {};
      for (const [runId, r, over] of [['run-x', reward, noOutput], ['run-y', 1, {}]] as const) {
        const rec = makeRollout({ runId, taskId: `t${i}`, finalReward: r, ...over });
        store.startRollout(rec);
        store.finishRollout(rec);
      }
    });
    const r = compareRuns(store, 'run-x', 'run-y', []);
    assert.equal(r.aggregate.pairs, 5, 'the task without output is paired, with its reward');
    assert.deepEqual(r.unpaired, []);
    assert.equal(r.aggregate.meanA, 0.6);
    assert.deepEqual(r.aggregate.ciA, wilsonInterval(3, 5), 'a pass/fail mean gets the Wilson interval, not [-0.08, 1.28]');
    assert.deepEqual(r.aggregate.ciB, wilsonInterval(5, 5));
    const [lo, hi] = r.aggregate.ciDifference!;
    assert.ok(lo >= -1 && hi === 1, `a difference of 0..1 rewards stays in -1..1: ${lo}, ${hi}`);
    assert.match(r.aggregate.summary, /95 % CI -?\d\.\d{3} to 1\.000/);
  } finally {
    await store.close();
    ws.cleanup();
  }
});

test('compareRuns reports no decision alignment for a graph whose decisions are not GO / NO-GO', async () => {
  const ws = tempWorkspace();
  const store = await TraceStore.open(ws.dir);
  try {
    store.startRun(makeRun('run-x', { status: 'done' }));
    store.startRun(makeRun('run-y', { status: 'done' }));
    for (let i = 0; i < 3; i++) {
      for (const runId of ['run-x', 'run-y']) {
        const rec = { ...makeRollout({ runId, taskId: `t${i}`, finalReward: 1 }), expectedDecision: 'yes', decision: 'CORRECT' };
        store.startRollout(rec);
        store.finishRollout(rec);
      }
    }
    const r = compareRuns(store, 'run-x', 'run-y', []);
    assert.deepEqual([r.aggregate.alignment.a.percent, r.aggregate.alignment.b.percent], [null, null], 'not 0 %: alignment does not apply');
    assert.ok(r.tasks.every((t) => t.alignedA === null && t.alignedB === null));
  } finally {
    await store.close();
    ws.cleanup();
  }
});

test('listComparisons finds the pair from the runs\' params and ignores ordinary runs', async () => {
  const f = await fixture();
  try {
    f.store.startRun(makeRun('run-c', { startTime: 5000, status: 'cancelled', params: { comparison: { id: 'cmp-2', side: 'a', label: 'x', variant: { label: 'x' } } } }));
    f.store.startRun(makeRun('run-d', { startTime: 6000, status: 'done', params: { comparison: { id: 'cmp-3', side: 'q', label: 'bad' } } }));
    const list = listComparisons(f.store);
    assert.deepEqual(
      list.map((c) => [c.id, c.runA, c.runB, c.status]),
      [
        ['cmp-2', 'run-c', null, 'cancelled'],
        ['cmp-1', 'run-a', 'run-b', 'done'],
      ],
    );
    assert.equal(list[1]!.labelB, 'tuned');
    assert.equal(list[1]!.specA, 'base');
    assert.equal(list[1]!.startTime, 1000);
  } finally {
    await f.cleanup();
  }
});

test('comparisonTask reads the final output from the root span, and from the judge input for older rollouts', async () => {
  const f = await fixture();
  try {
    const protocolA = 'Protocol A: <script>alert(1)</script>\n{"steps": ["x"]}';
    const protocolB = 'Protocol B\n\nCriteria:\n- not the judge criteria, part of the protocol';
    const ra = f.records.find((r) => r.runId === 'run-a' && r.taskId === 't1')!;
    const rb = f.records.find((r) => r.runId === 'run-b' && r.taskId === 't1')!;
    const span = (traceId: string, over: Partial<SpanRecord>): SpanRecord => ({
      traceId, spanId: spanId(), parentSpanId: null, name: 'x', kind: 'node', startTime: 10_000, endTime: 10_001, status: 'ok', attributes: {}, ...over,
    });
    const rootA = span(ra.id, { name: 'rollout', kind: 'rollout', attributes: { [Attr.finalOutput]: protocolA, 'rollout_lab.task.goal': 'Does X help Y?' } });
    const judgeA = span(ra.id, { name: 'judge', kind: 'reward', parentSpanId: rootA.spanId, attributes: { [Attr.rewardKind]: 'judge', 'rollout_lab.judge.rationale': 'clear steps' } });
    // B was stored before the root kept the output: the judge's own call holds it.
    const rootB = span(rb.id, { name: 'rollout', kind: 'rollout', attributes: { 'rollout_lab.task.goal': 'Does X help Y?' } });
    const judgeB = span(rb.id, { name: 'judge', kind: 'reward', parentSpanId: rootB.spanId, attributes: { [Attr.rewardKind]: 'judge', 'rollout_lab.judge.rationale': 'vague' } });
    const msgs = judgeMessages({ goal: 'Does X help Y?', context: 'Protocol to score:\nnot this', output: protocolB, criteria: { clarity: { description: 'clear' } } });
    const callB = span(rb.id, { name: 'judge llm', kind: 'llm', parentSpanId: judgeB.spanId, attributes: { [Attr.inputMessages]: JSON.stringify(msgs.map(toMessageRecord)) } });
    for (const s of [rootA, judgeA, rootB, judgeB, callB]) f.store.writeSpan(s);

    const d = comparisonTask(f.store, { runA: 'run-a', runB: 'run-b' }, 't1');
    assert.equal(d.goal, 'Does X help Y?');
    assert.equal(d.expectedDecision, 'no');
    assert.equal(d.a.label, 'base');
    assert.equal(d.a.samples.length, 1);
    assert.equal(d.a.samples[0]!.protocol, protocolA);
    assert.equal(d.a.samples[0]!.protocolSource, 'output');
    assert.equal(d.a.samples[0]!.rationale, 'clear steps');
    assert.equal(d.b.samples[0]!.protocol, protocolB);
    assert.equal(d.b.samples[0]!.protocolSource, 'judge-input');
    assert.equal(d.b.samples[0]!.rationale, 'vague');
    assert.deepEqual(d.b.samples[0]!.criteria, rb.criteria);
    assert.equal(d.b.samples[0]!.rolloutId, rb.id);
    assert.throws(() => comparisonTask(f.store, { runA: 'run-a', runB: 'run-b' }, 'no-such-task'), /no finished rollout/);
    assert.equal(protocolInJudgeMessage(String(new HumanMessage('no markers here').content)), null);
  } finally {
    await f.cleanup();
  }
});
