import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';
import type { SimFault } from '../../../src/core/sim/simFaults';
import type { RolloutRecord } from '../../../src/core/store/types';
import { buildEvaluationReport, defaultReportRun, reportOptionsFromConfig, type EvaluationReport } from '../../../src/core/analysis/evaluationReport';
import { classifyFailure } from '../../../src/core/reward/failureClassification';
import type { FailureKind } from '../../../src/core/store/failureKinds';
import { decisionAlignment } from '../../../src/core/data/decisionAlignment';

/*
 * The report of a real run against the simulated endpoint with faults: one
 * task's calls are rate-limited, one's get a 503, one's hang past the
 * timeout (all three fail: no retries), one has a reviewer answering prose
 * instead of JSON (a step failure the graph survives) and one has a judge
 * that never answers JSON (judge failure). Every number is checked against a
 * computation written here from the rollout records, independent of the
 * report's code (t quantiles from a printed table, Wilson by its formula).
 */

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/** t(0.975, df) for df = 1..20, as printed in t tables (R: qt(0.975, df)). */
const T975 = [
  NaN, 12.706204736, 4.30265273, 3.182446305, 2.776445105, 2.570581836, 2.446911851, 2.364624252, 2.306004135, 2.262157163, 2.228138852, 2.20098516,
  2.17881283, 2.160368656, 2.144786688, 2.131449546, 2.119905299, 2.109815578, 2.10092204, 2.093024054, 2.085963447,
];
const Z975 = 1.959963984540054;

function close(actual: number | null | undefined, expected: number, what: string, tol = 1e-6): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected}`);
}

function tCi(xs: number[]): [number, number] {
  const n = xs.length;
  const m = xs.reduce((a, b) => a + b, 0) / n;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (n - 1));
  const h = (T975[n - 1]! * sd) / Math.sqrt(n);
  return [m - h, m + h];
}

function wilsonPct(k: number, n: number): [number, number] {
  const p = k / n;
  const d = 1 + (Z975 * Z975) / n;
  const c = (p + (Z975 * Z975) / (2 * n)) / d;
  const h = (Z975 / d) * Math.sqrt((p * (1 - p)) / n + (Z975 * Z975) / (4 * n * n));
  return [100 * Math.max(0, c - h), 100 * Math.min(1, c + h)];
}

const avg = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

type Plan = 'rate-limit' | 'server-error' | 'hang' | 'reviewer-prose' | 'judge-prose' | 'clean';
const PLAN: Plan[] = ['rate-limit', 'server-error', 'hang', 'reviewer-prose', 'judge-prose', 'clean', 'clean', 'clean', 'clean'];

describe('evaluation report of a run with faults', () => {
  let dir: string;
  let lab: Lab;
  let server: SimServer;
  let runId: string;
  let laterRunId: string;
  let trainRunId: string;
  let rollouts: RolloutRecord[];
  let report: EvaluationReport;
  const byPlan = new Map<Plan, RolloutRecord>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rl-report-'));
    await initWorkspace(dir, { dataset: PUBMEDQA });
    const file = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    for (const m of Object.values(cfg.models) as Array<Record<string, unknown>>) {
      m.maxRetries = 0;
      m.timeoutMs = 1500;
    }
    writeFileSync(file, JSON.stringify(cfg, null, 2));

    // Which task a request belongs to: every agent's and the judge's request quotes the task's question.
    const probe = await Lab.open({ workspace: dir, env: {} });
    const ds = await probe.loadDataset();
    const tasks = probe.selectTasks(ds, { split: 'val', limit: PLAN.length, seed: 11 });
    await probe.close();
    assert.equal(tasks.length, PLAN.length);
    const planOf = (text: string): Plan => {
      const i = tasks.findIndex((t) => text.includes(t.goal));
      return i < 0 ? 'clean' : PLAN[i]!;
    };
    server = await startSimServer({
      faults: ({ agent, request }): SimFault | null => {
        const plan = planOf(JSON.stringify(request.messages));
        if (plan === 'rate-limit') return { kind: 'rate-limit', retryAfterMs: 1 };
        if (plan === 'server-error') return { kind: 'server-error', status: 503 };
        if (plan === 'hang') return { kind: 'hang' };
        if (plan === 'reviewer-prose' && agent === 'PeerReviewer') return { kind: 'not-json' };
        if (plan === 'judge-prose' && agent === 'Judge') return { kind: 'not-json' };
        return null;
      },
    });

    // A training run first, then the evaluation with faults, then a clean one on another endpoint run: default choice is tested on these.
    lab = await Lab.open({ workspace: dir, env: {}, baseUrl: server.url });
    const env = await lab.environment(ds.tasks);
    trainRunId = (await runRollouts(env, { tasks: lab.selectTasks(ds, { split: 'train', limit: 2, seed: 1 }), samples: 1, concurrency: 2, params: { command: 'run', split: 'train' }, seed: 1 })).runId;
    const r = await runRollouts(env, { tasks, samples: 1, concurrency: 3, params: { command: 'eval', split: 'val', limit: PLAN.length }, seed: 11 });
    runId = r.runId;
    rollouts = lab.store.listRollouts({ runId, limit: 1000 }).rollouts;
    tasks.forEach((t, i) => {
      if (PLAN[i] !== 'clean') byPlan.set(PLAN[i]!, rollouts.find((x) => x.taskId === t.id)!);
    });
    report = buildEvaluationReport(lab.store, { ...reportOptionsFromConfig(lab.loaded.config, runId), now: 1234 });
  });

  after(async () => {
    await lab?.close();
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the faults did what they were meant to (the premise of the other checks)', () => {
    assert.equal(rollouts.length, PLAN.length);
    for (const p of ['rate-limit', 'server-error', 'hang'] as const) {
      assert.equal(byPlan.get(p)!.status, 'failed', `${p}: ${byPlan.get(p)!.error}`);
      assert.equal(byPlan.get(p)!.finalReward, null, 'a rollout that threw has no reward');
    }
    assert.deepEqual(
      (['rate-limit', 'server-error', 'hang'] as const).map((p) => byPlan.get(p)!.failure),
      ['rate_limit', 'server_error', 'timeout'],
      'the runner records why each failed',
    );
    for (const r of rollouts.filter((x) => x.status === 'succeeded')) assert.equal(r.failure, null);
    assert.equal(byPlan.get('reviewer-prose')!.status, 'succeeded');
    assert.ok(byPlan.get('reviewer-prose')!.agents.find((a) => a.agent === 'PeerReviewer')!.errors > 0);
    assert.equal(byPlan.get('judge-prose')!.status, 'succeeded');
    assert.equal(byPlan.get('judge-prose')!.judgeFailed, true);
  });

  it('run facts', () => {
    assert.equal(report.run.id, runId);
    assert.equal(report.run.command, 'eval');
    assert.equal(report.run.split, 'val');
    assert.equal(report.run.simulated, false, 'a configured endpoint is not reported as simulated');
    assert.equal(report.run.tasks, PLAN.length);
    assert.deepEqual(report.run.counts, { total: 9, succeeded: 6, failed: 3, noOutput: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 0 });
    assert.equal(report.generatedAt, 1234);
    assert.deepEqual(JSON.parse(JSON.stringify(report)), report, 'plain JSON data');
  });

  it('the evaluation table agrees with an independent computation, with Wilson and t intervals', () => {
    const ok = rollouts.filter((r) => r.status === 'succeeded');
    const t = report.table;
    assert.deepEqual([t.executionSuccess.count, t.executionSuccess.n], [6, 9]);
    close(t.executionSuccess.rate, (100 * 6) / 9, 'success rate');
    const w = wilsonPct(6, 9);
    close(t.executionSuccess.ci![0], w[0], 'success CI low');
    close(t.executionSuccess.ci![1], w[1], 'success CI high');
    assert.equal(t.metrics.executionSuccessRate, t.executionSuccess.rate);

    const rewards = ok.map((r) => r.finalReward!);
    close(t.finalReward.mean, avg(rewards), 'mean reward');
    const ci = tCi(rewards);
    close(t.finalReward.ci![0], ci[0], 'reward CI low');
    close(t.finalReward.ci![1], ci[1], 'reward CI high');
    assert.equal(t.finalReward.n, 6);

    let aligned = 0;
    let denom = 0;
    for (const r of ok) {
      const exp = r.expectedDecision?.toLowerCase();
      if (exp !== 'yes' && exp !== 'no') continue;
      denom++;
      if (decisionAlignment(r.decision, r.expectedDecision) === 'aligned') aligned++;
    }
    assert.ok(t.decisionAlignment, 'labelled tasks and GO / NO-GO decisions: alignment applies');
    assert.deepEqual([t.decisionAlignment.count, t.decisionAlignment.n], [aligned, denom]);
    if (denom) {
      const wa = wilsonPct(aligned, denom);
      close(t.decisionAlignment.ci![0], wa[0], 'alignment CI low');
      close(t.decisionAlignment.ci![1], wa[1], 'alignment CI high');
    }
    assert.ok(t.judgeFailures, 'the research lab has a judge');
    assert.deepEqual([t.judgeFailures.count, t.judgeFailures.n], [1, 6]);
    close(t.turns.mean, avg(ok.map((r) => r.turns!)), 'turns');

    const judged = ok.filter((r) => !r.judgeFailed);
    assert.equal(judged.length, 5);
    for (const j of t.judge) {
      const xs = judged.map((r) => r.criteria![j.criterion]!);
      close(j.stat.mean, avg(xs), `judge ${j.criterion}`);
      // Scores lie in 0..1, so the report clips the t interval to those bounds.
      const t95 = tCi(xs);
      const c = [Math.max(0, t95[0]), Math.min(1, t95[1])];
      if (Math.max(...xs) > Math.min(...xs)) {
        close(j.stat.ci![0], c[0], `${j.criterion} CI low`);
        close(j.stat.ci![1], c[1], `${j.criterion} CI high`);
      }
      assert.equal(t.metrics.judge[j.criterion], j.stat.mean);
    }
  });

  it('per criterion: weight, mean and the share of the reward it contributes', () => {
    const criteria = lab.loaded.config.reward.criteria;
    const names = Object.keys(criteria);
    assert.deepEqual(report.criteria.map((c) => c.name), names);
    const judged = rollouts.filter((r) => r.status === 'succeeded' && !r.judgeFailed);
    const wsum = names.reduce((s, n) => s + criteria[n]!.weight, 0);
    const contrib = names.map((n) => (criteria[n]!.weight / wsum) * avg(judged.map((r) => r.criteria![n]!)));
    const total = contrib.reduce((a, b) => a + b, 0);
    report.criteria.forEach((c, i) => {
      assert.equal(c.weight, criteria[c.name]!.weight);
      close(c.contribution, contrib[i]!, `${c.name} contribution`);
      close(c.share, contrib[i]! / total, `${c.name} share`);
    });
    close(report.criteria.reduce((s, c) => s + c.share!, 0), 1, 'shares sum to 1');
    // For judged rollouts the contributions add up to their mean final reward (the weighted sum).
    close(total, avg(judged.map((r) => r.finalReward!)), 'contributions = mean judged reward', 1e-9);
  });

  it('per agent: activity summed from the records, versions, and reward with vs without errors', () => {
    const agents = new Set(rollouts.flatMap((r) => r.agents.map((a) => a.agent)));
    assert.deepEqual(report.agents.map((a) => a.agent), [...agents].sort());
    for (const a of report.agents) {
      const rows = rollouts.flatMap((r) => r.agents.filter((x) => x.agent === a.agent).map((x) => ({ r, x })));
      assert.equal(a.rollouts, rows.length);
      assert.equal(a.llmCalls, rows.reduce((s, { x }) => s + x.llmCalls, 0));
      assert.equal(a.visits, rows.reduce((s, { x }) => s + x.visits, 0));
      assert.equal(a.errors, rows.reduce((s, { x }) => s + x.errors, 0));
      assert.equal(a.inputTokens, rows.reduce((s, { x }) => s + x.inputTokens, 0));
      assert.deepEqual(a.promptVersions.map((p) => p.version).sort(), [...new Set(rows.map(({ x }) => x.promptVersion))].sort());
      const withErr = rows.filter(({ x, r }) => x.errors > 0 && r.finalReward !== null).map(({ r }) => r.finalReward!);
      const without = rows.filter(({ x, r }) => x.errors === 0 && r.finalReward !== null).map(({ r }) => r.finalReward!);
      assert.equal(a.rewardWithErrors.n, withErr.length);
      assert.equal(a.rewardWithoutErrors.n, without.length);
      if (withErr.length) close(a.rewardWithErrors.mean, avg(withErr), `${a.agent} with errors`);
      if (without.length) close(a.rewardWithoutErrors.mean, avg(without), `${a.agent} without errors`);
    }
    const reviewer = report.agents.find((a) => a.agent === 'PeerReviewer')!;
    assert.ok(reviewer.rolloutsWithErrors >= 1);
    close(reviewer.rewardWithErrors.mean, byPlan.get('reviewer-prose')!.finalReward!, 'the reviewer failed in one rollout');
  });

  it('per decision: GO / NO-GO / none × yes / no / maybe', () => {
    const ok = rollouts.filter((r) => r.status === 'succeeded');
    assert.equal(report.decisions.rollouts, ok.length);
    const label = (d: string | null): string => (!d ? '(none)' : /^(GO|YES)$/i.test(d) ? 'GO' : /^(NO-GO|NOGO|NO)$/i.test(d) ? 'NO-GO' : d);
    assert.equal(report.decisions.alignment, true);
    assert.deepEqual(report.decisions.decisions, ['GO', 'NO-GO', '(none)'], 'the alignment rows, always shown');
    assert.deepEqual(report.decisions.expected, ['yes', 'no', 'maybe']);
    let total = 0;
    for (const cell of report.decisions.cells) {
      const here = ok.filter((r) => label(r.decision) === cell.decision && (r.expectedDecision ?? '').toLowerCase() === cell.expected);
      assert.equal(cell.count, here.length, `${cell.decision} × ${cell.expected}`);
      if (here.length) close(cell.meanReward, avg(here.map((r) => r.finalReward!)), `${cell.decision} × ${cell.expected} reward`);
      else assert.equal(cell.meanReward, null);
      total += cell.count;
    }
    assert.equal(total, ok.length);
    for (const b of report.decisions.byDecision) assert.equal(b.count, ok.filter((r) => label(r.decision) === b.decision).length);
  });

  it('failure categories: each failure where it belongs, with example rollouts', () => {
    const cat = (k: FailureKind): EvaluationReport['failures']['categories'][number] | undefined => report.failures.categories.find((c) => c.kind === k);
    const expectFatal = (k: FailureKind, plan: Plan): void => {
      const c = cat(k);
      assert.ok(c, `category ${k} in ${JSON.stringify(report.failures.categories.map((x) => x.kind))}`);
      assert.equal(c.fatal, 1, k);
      assert.deepEqual(c.examples.map((e) => e.rolloutId), [byPlan.get(plan)!.id]);
      assert.equal(c.examples[0]!.taskId, byPlan.get(plan)!.taskId);
    };
    expectFatal('rate_limit', 'rate-limit');
    expectFatal('server_error', 'server-error');
    expectFatal('timeout', 'hang');
    assert.match(cat('rate_limit')!.examples[0]!.message, /429/);
    const invalid = cat('invalid_output')!;
    assert.ok(invalid.examples.some((e) => e.rolloutId === byPlan.get('reviewer-prose')!.id && e.agent === 'PeerReviewer'), 'the reviewer step failure');
    assert.equal(invalid.fatal, 0);
    const judge = cat('judge_failed')!;
    assert.deepEqual(judge.examples.map((e) => e.rolloutId), [byPlan.get('judge-prose')!.id]);
    assert.equal(judge.fatal, 0);
    assert.equal(report.failures.failedRollouts, 3);
    assert.ok(report.failures.spansRead > 0 && report.failures.spansRead <= 200);
    // Fatal failures come first.
    const fatals = report.failures.categories.map((c) => c.fatal);
    assert.deepEqual(fatals, [...fatals].sort((a, b) => b - a));
  });

  it('reads no spans past the bound and still classifies failed rollouts from their records', () => {
    const lean = buildEvaluationReport(lab.store, { ...reportOptionsFromConfig(lab.loaded.config, runId), maxSpanReads: 0 });
    assert.equal(lean.failures.spansRead, 0);
    assert.ok(lean.failures.unread >= 1, 'the reviewer rollout was left unread');
    for (const k of ['rate_limit', 'server_error', 'timeout', 'judge_failed'] as const) assert.ok(lean.failures.categories.some((c) => c.kind === k), k);
    assert.ok(!lean.failures.categories.some((c) => c.kind === 'invalid_output'), 'step failures need spans');
    assert.deepEqual(lean.table, report.table, 'the table never depends on spans');
  });

  it('the lowest-reward rollouts, lowest first', () => {
    const ok = rollouts.filter((r) => r.finalReward !== null).sort((a, b) => a.finalReward! - b.finalReward!);
    assert.deepEqual(report.lowest.map((l) => l.finalReward), ok.slice(0, 10).map((r) => r.finalReward));
    assert.ok(report.lowest.some((l) => l.rolloutId === byPlan.get('judge-prose')!.id && l.judgeFailed));
    assert.equal(buildEvaluationReport(lab.store, { runId, criteria: {}, lowest: 2 }).lowest.length, 2);
  });

  it('the default run is the newest evaluation run, else the newest run; an unknown run is a clear error', async () => {
    assert.equal(defaultReportRun(lab.store.listRuns())?.id, runId);
    const env = await lab.environment((await lab.loadDataset()).tasks);
    const ds = await lab.loadDataset();
    laterRunId = (await runRollouts(env, { tasks: lab.selectTasks(ds, { split: 'train', limit: 1, seed: 2 }).slice(0, 1), samples: 1, concurrency: 1, params: { command: 'run' }, seed: 2 })).runId;
    assert.equal(defaultReportRun(lab.store.listRuns())?.id, runId, 'a later training run does not replace the evaluation run');
    assert.equal(defaultReportRun(lab.store.listRuns().filter((r) => r.id !== runId))?.id, laterRunId, 'without an evaluation run: the newest run');
    assert.notEqual(trainRunId, laterRunId);
    assert.equal(defaultReportRun([]), null);
    assert.throws(() => buildEvaluationReport(lab.store, { runId: 'run-nope', criteria: {} }), /run "run-nope" is not in the trace store/);
  });

  it('classifies error messages and span error types', () => {
    const cases: Array<[string | null, string | null, FailureKind]> = [
      ["model 'junior' at http://x: HTTP 429 — check the server log or raise models.junior.maxRetries", null, 'rate_limit'],
      ["model 'junior' at http://x: HTTP 503 after 2 retries — check the server log", null, 'server_error'],
      ["model 'junior' at http://x: timed out after 400 ms — check the server or raise models.junior.timeoutMs", null, 'timeout'],
      ["model 'junior' at http://x: connection failed (ECONNREFUSED) — check", null, 'connection'],
      ["model 'junior' at http://x: HTTP 404 — check models.junior.baseUrl", null, 'client_error'],
      ['Recursion limit of 140 reached without hitting a stop condition.', null, 'max_turns'],
      ['the answer is not valid JSON', null, 'invalid_output'],
      ['cancelled', null, 'cancelled'],
      ['something odd', '429', 'rate_limit'],
      ['something odd', '502', 'server_error'],
      ['', 'judge_failed', 'judge_failed'],
      ['', 'custom_reward_failed', 'custom_reward_failed'],
      ['something odd', null, 'other'],
      [null, null, 'other'],
    ];
    for (const [m, t, k] of cases) assert.equal(classifyFailure(m, t), k, `${m} / ${t}`);
  });
});
