import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig } from '../../../src/core/config/loader';
import type { LabConfig } from '../../../src/core/config/schema';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { startSimServer } from '../../../src/core/sim/simServer';
import { TraceStore } from '../../../src/core/store/traceStore';
import type { RolloutAgentRecord, RolloutRecord } from '../../../src/core/store/types';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { defaultPreflightAgents, runPreflight } from '../../../src/core/train/export/preflight';
import { preflightReportText } from '../../../src/core/train/export/preflightText';
import { MAX_LISTED, type PreflightCheck, type PreflightReport } from '../../../src/core/train/export/preflightTypes';
import { makeAgent, makeRollout, makeRun } from '../store/helpers/storeFixtures';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

/**
 * One real workspace for every test: 3 train tasks × 2 samples with logprobs
 * off, then 2 val tasks × 2 samples with logprobs on for the seniors' model,
 * then 1 train rollout against an endpoint that fails every call. Every model
 * is pointed at the test's own OpenAI-compatible server (not the built-in
 * simulated endpoint), so the rollouts count as real ones.
 */
let dir: string;
let store: TraceStore;
let config: LabConfig;
let train: RolloutRecord[];
let val: RolloutRecord[];
let failed: RolloutRecord[];

function editConfig(patch: (cfg: Record<string, any>) => void): void {
  const file = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  patch(cfg);
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

async function gather(split: 'train' | 'val', limit: number, samples: number, baseUrl?: string): Promise<RolloutRecord[]> {
  const lab = await Lab.open({ workspace: dir, env: {}, ...(baseUrl ? { baseUrl } : {}) });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split, limit, seed: 5 });
    const res = await runRollouts(await lab.environment(ds.tasks), { tasks, samples, concurrency: 2, params: {}, seed: 5 });
    return res.rollouts;
  } finally {
    await lab.close();
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rl-preflight-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  // init's trained models ask for logprobs and token ids: this fixture needs calls without them.
  editConfig((c) => {
    for (const m of [c.models.junior, c.models.senior]) Object.assign(m, { logprobs: false, tokenIds: false });
  });
  const endpoint = await startSimServer();
  try {
    train = await gather('train', 3, 2, endpoint.url);
    editConfig((c) => (c.models.senior.logprobs = true));
    val = await gather('val', 2, 2, endpoint.url);
  } finally {
    await endpoint.close();
  }
  editConfig((c) => {
    for (const m of Object.values(c.models) as Array<Record<string, unknown>>) m.maxRetries = 0;
  });
  const server = await startSimServer({ faults: () => ({ kind: 'server-error', status: 500 }) });
  try {
    failed = await gather('train', 1, 1, server.url);
  } finally {
    await server.close();
  }
  config = (await loadConfig(dir)).config;
  store = await TraceStore.open(dir);
});

after(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

function check(report: PreflightReport, id: string): PreflightCheck {
  const c = report.checks.find((x) => x.id === id);
  assert.ok(c, `check ${id} is in the report: ${report.checks.map((x) => x.id).join(', ')}`);
  return c;
}

/** The ids of the checks that are errors. */
function errors(report: PreflightReport): string[] {
  return report.checks.filter((c) => c.severity === 'error').map((c) => c.id);
}

/** A hand-made rollout as a real model's (the store fixtures' default is a simulated one). */
function realRollout(spec: Parameters<typeof makeRollout>[0]): RolloutRecord {
  return { ...makeRollout(spec), simulated: false };
}

/** Opens an empty store in a temp folder, writes `rollouts` into it (with their spans), runs `fn`. */
async function withStore(rollouts: Array<[RolloutRecord, SpanRecord[]]>, fn: (s: TraceStore) => void | Promise<void>): Promise<void> {
  const ws = mkdtempSync(join(tmpdir(), 'rl-preflight-store-'));
  const made = await TraceStore.open(ws);
  try {
    made.startRun(makeRun('run-made'));
    for (const [r, spans] of rollouts) {
      made.startRollout({ ...r, status: 'running', endTime: null });
      for (const sp of spans) made.writeSpan(sp);
      made.finishRollout(r);
    }
    await fn(made);
  } finally {
    await made.close();
    rmSync(ws, { recursive: true, force: true });
  }
}

function withTraining(patch: Partial<LabConfig['training']>): LabConfig {
  return { ...config, training: { ...config.training, ...patch } };
}

test('the fixture is what the tests expect: 6 + 4 succeeded rollouts and 1 failed, none simulated', () => {
  assert.ok([...train, ...val, ...failed].every((r) => !r.simulated));
  assert.equal(train.length, 6);
  assert.ok(train.every((r) => r.status === 'succeeded' && r.finalReward !== null));
  assert.equal(val.length, 4);
  assert.ok(val.every((r) => r.status === 'succeeded' && r.split === 'val'));
  assert.equal(failed.length, 1);
  assert.equal(failed[0]!.status, 'failed');
});

test('grpo with groups of 2 while groupSize is 8: the small-group check counts them and is an error, as no group is complete', () => {
  const report = runPreflight(store, config, { phase: 'grpo', split: 'train' });
  assert.equal(config.training.groupSize, 8);
  const small = check(report, 'small-groups');
  assert.equal(small.severity, 'error');
  assert.equal(small.count, 3);
  assert.match(small.title, /3 of 3 groups .*group size 8 \(3 of size 2\); 0 complete/);
  assert.deepEqual(new Set(small.rollouts), new Set(train.map((r) => r.id)));
  assert.equal(report.counts.groups, 3);
  assert.equal(report.counts.completeGroups, 0);
  assert.equal(report.ok, false);

  // groupSize 2 makes every group complete; groupSize 3 with a complete group is only a warning.
  const complete = runPreflight(store, withTraining({ groupSize: 2 }), { phase: 'grpo', split: 'train' });
  assert.equal(check(complete, 'small-groups').severity, 'info');
  assert.equal(check(complete, 'small-groups').count, 0);
  assert.equal(complete.counts.completeGroups, 3);
});

test('failed rollouts are reported with their ids and left out of the usable ones', () => {
  const report = runPreflight(store, config, { phase: 'sft', split: 'train' });
  const c = check(report, 'failed-rollouts');
  assert.equal(c.severity, 'warning');
  assert.equal(c.count, 1);
  assert.deepEqual(c.rollouts, [failed[0]!.id]);
  assert.match(c.title, /1 of 7 rollouts \(train split\) failed/);
  assert.equal(report.counts.rollouts, 7);
  assert.equal(report.counts.usable, 6);
  assert.equal(check(runPreflight(store, config, { phase: 'sft', split: 'val' }), 'failed-rollouts').severity, 'info');
});

test('by default a phase is checked on the split it trains on: train, and every split for apo', () => {
  assert.deepEqual(runPreflight(store, config, { phase: 'sft' }), runPreflight(store, config, { phase: 'sft', split: 'train' }));
  assert.equal(runPreflight(store, config, { phase: 'grpo' }).counts.rollouts, runPreflight(store, config, { phase: 'grpo', split: 'train' }).counts.rollouts);
  assert.ok(runPreflight(store, config, { phase: 'sft', split: 'all' }).counts.rollouts! > runPreflight(store, config, { phase: 'sft' }).counts.rollouts!);
});

test('logprobs: none on the train split is an error, all on the val split passes, a mix is a warning naming the model to fix', () => {
  const none = check(runPreflight(store, config, { phase: 'grpo', split: 'train' }), 'missing-logprobs');
  assert.equal(none.severity, 'error');
  assert.ok(none.count > 0);
  assert.deepEqual(new Set(none.rollouts), new Set(train.map((r) => r.id)));
  assert.match(none.fix, /models\.senior\.logprobs: true/);

  const all = runPreflight(store, config, { phase: 'grpo', split: 'val' });
  assert.equal(check(all, 'missing-logprobs').severity, 'info');
  assert.equal(check(all, 'missing-logprobs').count, 0);
  assert.equal(all.counts.callsWithLogprobs, all.counts.llmCalls);
  assert.ok(all.counts.llmCalls! > 0);

  const mixed = runPreflight(store, config, { split: 'all', phase: 'grpo' });
  const m = check(mixed, 'missing-logprobs');
  assert.equal(m.severity, 'warning');
  assert.equal(m.count, none.count, 'exactly the train calls lack logprobs');
  assert.equal(mixed.counts.llmCalls, none.count + all.counts.llmCalls!);
  // The simulator returns no token ids: the trainer re-tokenises, which only informs.
  assert.equal(check(mixed, 'missing-token-ids').severity, 'info');
  assert.equal(check(mixed, 'missing-token-ids').count, mixed.counts.llmCalls);
});

test('zero-variance groups: re-scoring a group to equal rewards makes it counted, with its rollouts', () => {
  const cfg = withTraining({ groupSize: 2 });
  const beforeReport = runPreflight(store, cfg, { phase: 'grpo', split: 'train' });
  const flagged = new Set(check(beforeReport, 'zero-variance-groups').rollouts);
  const byTask = new Map<string, RolloutRecord[]>();
  for (const r of train) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r]);
  const group = [...byTask.values()].find((g) => !g.some((r) => flagged.has(r.id)));
  assert.ok(group, 'a group with some spread of rewards');
  store.applyRescore({
    id: 'rs_0000000000a1',
    at: Date.now(),
    criteria: { novelty: { weight: 1 } },
    rewards: group.map((r) => ({ rolloutId: r.id, before: r.finalReward, after: 0.5 })),
  });
  const afterReport = runPreflight(store, cfg, { phase: 'grpo', split: 'train' });
  const c = check(afterReport, 'zero-variance-groups');
  assert.equal(c.severity, 'warning');
  assert.equal(c.count, (beforeReport.counts.zeroVarianceGroups ?? 0) + 1);
  assert.equal(afterReport.counts.zeroVarianceGroups, c.count);
  for (const r of group) assert.ok(c.rollouts.includes(r.id));
  assert.match(c.title, /no learning signal/);
});

test('long prompts: a low training.maxPromptTokens reports every call, a high one none; the size is said to be an estimate', () => {
  const low = runPreflight(store, withTraining({ maxPromptTokens: 1 }), { phase: 'sft', split: 'train', minReward: 0 });
  const c = check(low, 'long-prompts');
  assert.equal(c.severity, 'error', 'every call over the limit: the trainer would drop them all');
  assert.match(c.title, /so no row is left to train on$/);
  assert.ok(c.count > 0);
  assert.equal(c.count, low.counts.longPrompts);
  assert.deepEqual(new Set(c.rollouts), new Set(train.map((r) => r.id)));
  assert.match(c.title, /estimated at 4 characters a token/);
  const high = runPreflight(store, withTraining({ maxPromptTokens: 1_000_000 }), { phase: 'sft', split: 'train', minReward: 0 });
  assert.equal(check(high, 'long-prompts').count, 0);
  assert.equal(check(high, 'long-prompts').severity, 'info');
});

test('sft: the minimum reward decides the examples; none passing is an error', () => {
  const all = runPreflight(store, config, { phase: 'sft', split: 'train', minReward: 0 });
  assert.equal(all.counts.passMinReward, 6);
  assert.equal(check(all, 'min-reward').severity, 'info');
  assert.equal(all.ok, true, preflightReportText(all));
  const none = runPreflight(store, config, { phase: 'sft', split: 'train', minReward: 1 });
  const c = check(none, 'min-reward');
  assert.equal(c.severity, 'error');
  assert.equal(none.counts.passMinReward, 0);
  assert.equal(c.count, 6);
  assert.equal(none.ok, false);
  assert.match(preflightReportText(none), /✗ 0 of 6 rollouts reach the minimum reward 1/);
});

test('bandit: every Supervisor decision has candidates and a choice; fewer than 20 is a warning', () => {
  const report = runPreflight(store, config, { split: 'all', phase: 'bandit' });
  assert.equal(report.counts.decisions, 10);
  assert.equal(report.counts.completeDecisions, 10);
  assert.equal(check(report, 'incomplete-decisions').count, 0);
  const few = check(report, 'few-decisions');
  assert.equal(few.severity, 'warning');
  assert.match(few.title, /only 10 usable decisions/);
  assert.equal(report.ok, true);
});

test('apo: too few rollouts for the critic and too few validation tasks are warnings', () => {
  const cfg: LabConfig = { ...config, optimize: { ...config.optimize, lowRewardRollouts: 20, validationTasks: 6 } };
  const report = runPreflight(store, cfg, { phase: 'apo', agents: ['Supervisor'] });
  const low = check(report, 'few-low-reward-rollouts');
  assert.equal(low.severity, 'warning');
  assert.match(low.title, /Supervisor \(10\)/);
  const valTasks = check(report, 'few-validation-tasks');
  assert.equal(valTasks.severity, 'warning');
  assert.equal(report.counts.valTasks, 2, 'the val tasks with rollouts in the store');
  const given = runPreflight(store, cfg, { phase: 'apo', agents: ['Supervisor'], valTasks: 200 });
  assert.equal(check(given, 'few-validation-tasks').severity, 'info');
  assert.equal(report.ok, true);
});

test('agents that never ran are an error; the research-lab graph keeps its reference roles', () => {
  const report = runPreflight(store, config, { split: 'all', phase: 'sft', agents: ['Nobody'] });
  const c = check(report, 'agents-without-rollouts');
  assert.equal(c.severity, 'error');
  assert.match(c.title, /Nobody/);
  assert.equal(report.ok, false);
  assert.deepEqual(defaultPreflightAgents(store, config, 'sft'), ['Geneticist', 'Pharmacologist', 'Neurologist']);
  assert.deepEqual(defaultPreflightAgents(store, config, 'grpo'), ['HypothesisRefiner', 'ProtocolDesigner']);
  assert.deepEqual(defaultPreflightAgents(store, config, 'bandit'), ['Supervisor']);
});

test('hand-made rollouts: no final reward is an error for grpo and a warning for sft; judge failures warn; ids are capped', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rl-preflight-made-'));
  const made = await TraceStore.open(ws);
  try {
    made.startRun(makeRun('run-made'));
    const agents = [makeAgent('HypothesisRefiner'), makeAgent('Geneticist')];
    const ids: string[] = [];
    for (let i = 0; i < MAX_LISTED + 5; i++) {
      const r = realRollout({ runId: 'run-made', taskId: `t${i % 4}`, sample: i, finalReward: null, startTime: 10_000 + i, agents });
      made.startRollout({ ...r, status: 'running', endTime: null });
      made.finishRollout(r);
      ids.push(r.id);
    }
    const judged = realRollout({ runId: 'run-made', taskId: 't0', sample: 99, finalReward: 0.1, startTime: 20_000, agents });
    made.startRollout({ ...judged, status: 'running', endTime: null });
    made.finishRollout({ ...judged, judgeFailed: true });

    const grpo = runPreflight(made, config, { split: 'all', phase: 'grpo' });
    const missing = check(grpo, 'missing-rewards');
    assert.equal(missing.severity, 'error');
    assert.equal(missing.count, MAX_LISTED + 5);
    assert.equal(missing.rollouts.length, MAX_LISTED);
    assert.deepEqual(missing.rollouts, ids.slice(0, MAX_LISTED), 'listed in the order they ran');
    assert.equal(grpo.ok, false);
    const sft = runPreflight(made, config, { split: 'all', phase: 'sft', minReward: 0 });
    assert.equal(check(sft, 'missing-rewards').severity, 'warning');
    const judge = check(sft, 'judge-failures');
    assert.equal(judge.severity, 'warning');
    assert.deepEqual(judge.rollouts, [judged.id]);
    assert.match(judge.title, /penalty 0\.1/);
  } finally {
    await made.close();
    rmSync(ws, { recursive: true, force: true });
  }
});

test('bandit: a Supervisor decision with no candidates before it is reported with its rollout', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rl-preflight-bandit-'));
  const made = await TraceStore.open(ws);
  try {
    made.startRun(makeRun('run-b'));
    const node = (traceId: string, agent: string, output: unknown, t: number): SpanRecord => ({
      traceId,
      spanId: randomBytes(8).toString('hex'),
      parentSpanId: null,
      name: agent,
      kind: 'node',
      startTime: t,
      endTime: t + 1,
      status: 'ok',
      attributes: { [Attr.agentName]: agent, [Attr.nodeName]: agent, [Attr.output]: JSON.stringify(output) },
    });
    const agents = [makeAgent('Geneticist'), makeAgent('Supervisor')];
    const good = realRollout({ runId: 'run-b', taskId: 't1', finalReward: 0.6, agents });
    const bad = realRollout({ runId: 'run-b', taskId: 't2', finalReward: 0.4, startTime: 20_000, agents });
    for (const [r, spans] of [
      [good, [node(good.id, 'Geneticist', { hypothesis: 'h' }, 1), node(good.id, 'Supervisor', { selected_hypothesis_index: 0 }, 3)]],
      [bad, [node(bad.id, 'Supervisor', { selected_hypothesis_index: 0 }, 3)]],
    ] as const) {
      made.startRollout({ ...r, status: 'running', endTime: null });
      for (const s of spans) made.writeSpan(s);
      made.finishRollout(r);
    }
    const report = runPreflight(made, config, { split: 'all', phase: 'bandit' });
    assert.equal(report.counts.decisions, 2);
    assert.equal(report.counts.completeDecisions, 1);
    const c = check(report, 'incomplete-decisions');
    assert.equal(c.severity, 'warning');
    assert.deepEqual(c.rollouts, [bad.id]);
  } finally {
    await made.close();
    rmSync(ws, { recursive: true, force: true });
  }
});

test('simulated rollouts: left out and counted; when nothing else is in scope, an error instead of "ready to run"; included, a warning', async () => {
  const agents = [makeAgent('Geneticist')];
  const sim = [0, 1, 2].map((i) => makeRollout({ runId: 'run-made', taskId: `t${i}`, finalReward: 0.9, startTime: 10_000 + i, agents }));
  assert.ok(sim.every((r) => r.simulated));
  await withStore(sim.map((r) => [r, []]), (made) => {
    const only = runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['Geneticist'] });
    const c = check(only, 'simulated-rollouts');
    assert.equal(c.severity, 'error');
    assert.match(c.title, /^all 3 rollouts are simulated, so nothing is left to train on: 3 simulated rollouts left out \(pass --include-simulated to use them\)$/);
    assert.deepEqual(c.rollouts, sim.map((r) => r.id));
    assert.equal(only.ok, false);
    assert.equal(only.counts.simulated, 3);
    assert.equal(only.counts.rollouts, 0);
    assert.match(preflightReportText(only), /the phase would fail: fix the errors first/);
    assert.doesNotMatch(preflightReportText(only), /ready to run/);
    const hinted = runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['Geneticist'], includeSimulatedHint: 'set "includeSimulated": true on the phase' });
    assert.match(check(hinted, 'simulated-rollouts').title, /\(set "includeSimulated": true on the phase\)$/);

    const included = runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['Geneticist'], includeSimulated: true });
    // These hand-made rollouts have no spans, so no model call to train on: the one error is the rows the export would write.
    assert.deepEqual(errors(included), ['training-rows'], preflightReportText(included));
    const w = check(included, 'simulated-rollouts');
    assert.equal(w.severity, 'warning');
    assert.match(w.title, /3 of 3 rollouts are simulated and included: a model trained on them learns the simulator, not the task/);
    assert.equal(included.counts.passMinReward, 3);
  });
  const real = [3, 4].map((i) => realRollout({ runId: 'run-made', taskId: `t${i}`, finalReward: 0.9, startTime: 10_000 + i, agents }));
  await withStore([...sim, ...real].map((r) => [r, []]), (made) => {
    const mixed = runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['Geneticist'] });
    const c = check(mixed, 'simulated-rollouts');
    assert.equal(c.severity, 'info');
    assert.equal(c.title, '3 simulated rollouts left out (pass --include-simulated to use them)');
    assert.deepEqual(errors(mixed), ['training-rows']);
    const rows = check(mixed, 'training-rows').title;
    assert.match(rows, /^0 rows to train on; dropped: /);
    assert.match(rows, /simulated: 3 rollouts answered by the simulated endpoint/);
    assert.match(rows, /agent not found: 2 rollouts with no model call of Geneticist \(the rollouts' summaries count model calls of Geneticist, but no model-call span of theirs is stored/);
    assert.equal(mixed.counts.rollouts, 2);
    assert.equal(mixed.counts.passMinReward, 2);
  });
});

test('the judge check says what scored the rollouts: the judge when it ran, the custom reward when the judge never ran', async () => {
  const agents = [makeAgent('Geneticist')];
  const custom = [0, 1].map((i) => ({ ...realRollout({ runId: 'run-made', taskId: `t${i}`, finalReward: 0.8, startTime: 10_000 + i, agents }), criteria: null }));
  await withStore(custom.map((r) => [r, []]), (made) => {
    const replace: LabConfig = { ...config, reward: { ...config.reward, module: 'rewards/sql.ts', mode: 'replace' } };
    const c = check(runPreflight(made, replace, { split: 'all', phase: 'sft', agents: ['Geneticist'], minReward: 0 }), 'judge-failures');
    assert.equal(c.title, 'the custom reward rewards/sql.ts scored the 2 rollouts (mode "replace"); the judge never ran');
    const combine: LabConfig = { ...config, reward: { ...config.reward, module: 'rewards/sql.ts', mode: 'combine' } };
    assert.match(check(runPreflight(made, combine, { split: 'all', phase: 'sft', agents: ['Geneticist'], minReward: 0 }), 'judge-failures').title, /the custom reward rewards\/sql\.ts and the judge scored the rollouts \(mode "combine"\); the judge scored 0 of 2/);
    const plain = check(runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['Geneticist'], minReward: 0 }), 'judge-failures');
    assert.match(plain.title, /^the judge scored 0 of 2 rollouts/);
  });
  // Rollouts the judge scored (the fixture's own) keep the old line.
  assert.equal(check(runPreflight(store, config, { phase: 'sft', split: 'train' }), 'judge-failures').title, 'the judge scored every rollout');
});

test('grpo keeps failed rollouts the runner still scored (no output) in its groups; sft and failures without a reward leave them out', async () => {
  const agents = [makeAgent('ProtocolDesigner')];
  const ok = realRollout({ runId: 'run-made', taskId: 't1', sample: 0, finalReward: 0.7, agents });
  const scored = realRollout({ runId: 'run-made', taskId: 't1', sample: 1, status: 'failed', failure: 'no_output', finalReward: 0, startTime: 10_001, agents });
  const broken = realRollout({ runId: 'run-made', taskId: 't1', sample: 2, status: 'failed', finalReward: null, startTime: 10_002, agents });
  await withStore([ok, scored, broken].map((r) => [r, []]), (made) => {
    const grpo = runPreflight(made, withTraining({ groupSize: 2 }), { split: 'all', phase: 'grpo', agents: ['ProtocolDesigner'] });
    assert.equal(grpo.counts.usable, 2);
    assert.equal(grpo.counts.scoredFailures, 1);
    assert.equal(grpo.counts.completeGroups, 1, 'the scored failure completes the group');
    const failedCheck = check(grpo, 'failed-rollouts');
    assert.deepEqual(failedCheck.rollouts, [broken.id]);
    assert.match(failedCheck.title, /1 of 3 rollouts failed or were cancelled; they are left out; 1 failed with a reward \(no output\) and are kept: GRPO learns from them too/);
    const sft = runPreflight(made, config, { split: 'all', phase: 'sft', agents: ['ProtocolDesigner'], minReward: 0 });
    assert.equal(sft.counts.usable, 1);
    assert.deepEqual(check(sft, 'failed-rollouts').rollouts, [scored.id, broken.id]);
  });
});

test('a module graph: the agents that made model calls by default, or those marked trainable; none is an error; a bandit pre-flight says it needs the research-lab graph', async () => {
  const module = (trainable: string[] = []): LabConfig => ({
    ...config,
    graph: { kind: 'module', module: 'graph.ts', export: 'default' },
    agents: Object.fromEntries(['SqlWriter', 'Checker', 'Rewriter'].map((a) => [a, { ...config.agents.Geneticist!, ...(trainable.includes(a) ? { trainable: true } : {}) }])),
  });
  const calls = (agent: string): RolloutAgentRecord => makeAgent(agent, { visits: 0, llmCalls: 2 });
  const rollouts = [
    realRollout({ runId: 'run-made', taskId: 't1', agents: [calls('Checker'), calls('SqlWriter'), makeAgent('execute', { visits: 1, llmCalls: 0 })] }),
    realRollout({ runId: 'run-made', taskId: 't2', split: 'val', agents: [calls('Rewriter')] }),
  ];
  await withStore(rollouts.map((r) => [r, []]), (made) => {
    assert.deepEqual(defaultPreflightAgents(made, module(), 'grpo', { split: 'train' }), ['SqlWriter', 'Checker']);
    assert.deepEqual(defaultPreflightAgents(made, module(), 'sft'), ['SqlWriter', 'Checker', 'Rewriter']);
    assert.deepEqual(defaultPreflightAgents(made, module(['Rewriter']), 'sft', { split: 'train' }), ['Rewriter']);
    const report = runPreflight(made, module(), { phase: 'sft', split: 'train', minReward: 0 });
    assert.equal(check(report, 'agents-without-rollouts').title, 'usable rollouts (train split) for SqlWriter, Checker: 1', 'an agent that only made model calls counts as having run');
    assert.deepEqual(errors(report), ['training-rows'], 'no spans, so no model call to train on');
    assert.throws(() => runPreflight(made, module(), { split: 'all', phase: 'bandit' }), /only the built-in research-lab graph records; this lab runs its own graph/);
  });
  await withStore([], (empty) => {
    const none = runPreflight(empty, module(), { split: 'all', phase: 'grpo' });
    const c = check(none, 'agents-without-rollouts');
    assert.equal(c.severity, 'error');
    assert.match(c.title, /no agent made model calls in the usable rollouts, so there is nothing to train/);
  });
});

test('a check over zero items never passes: "no model calls to check", a warning or the phase\'s error, never "✓ all 0"', async () => {
  const agents = [makeAgent('HypothesisRefiner', { llmCalls: 2 }), makeAgent('Geneticist', { llmCalls: 1 })];
  // Rollouts whose agents ran, but whose spans hold no model call (recorded elsewhere, or lost).
  const rollouts = [0, 1].map((i) => realRollout({ runId: 'run-made', taskId: 't1', sample: i, finalReward: 0.5 + i / 10, startTime: 1_000 + i, agents }));
  await withStore(rollouts.map((r) => [r, []]), (made) => {
    const grpo = runPreflight(made, config, { split: 'all', phase: 'grpo' });
    const text = preflightReportText(grpo);
    assert.doesNotMatch(text, /all 0\b|among 0\b/, text);
    const lp = check(grpo, 'missing-logprobs');
    assert.equal(lp.severity, 'error', 'GRPO trains on model calls: none is an error');
    assert.match(lp.title, /^no model calls of .* to check for token logprobs/);
    assert.equal(check(grpo, 'missing-token-ids').severity, 'warning');
    assert.equal(check(grpo, 'long-prompts').severity, 'warning');
    assert.equal(grpo.ok, false);
    const sft = runPreflight(made, config, { split: 'all', phase: 'sft', minReward: 0 });
    assert.equal(check(sft, 'long-prompts').severity, 'warning');
    assert.match(check(sft, 'long-prompts').title, /^no model calls whose prompts could be checked/);
  });
  await withStore([], (empty) => {
    const report = runPreflight(empty, config, { split: 'all', phase: 'grpo' });
    const text = preflightReportText(report);
    assert.doesNotMatch(text, /all 0\b|among 0\b|✓ every/, text);
    assert.equal(check(report, 'small-groups').severity, 'error');
    assert.equal(check(report, 'failed-rollouts').severity, 'warning');
    assert.equal(check(report, 'judge-failures').severity, 'warning');
  });
});
