import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimServer, type SimServer } from '../../src/core/sim/simServer';
import { TraceStore } from '../../src/core/store/traceStore';
import type { ComparisonResult } from '../../src/core/analysis/comparison';
import { cli, cliAsync, json, tempWorkspace, PUBMEDQA } from './cliHelpers';

let ws: string;
let trained: SimServer;

before(async () => {
  ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]);
  assert.equal(init.code, 0, init.stderr);
  // The "trained" model is a second OpenAI-compatible server that answers differently (another seed), reached over real HTTP.
  trained = await startSimServer({ seed: 7 });
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as { models: Record<string, unknown> };
  cfg.models.trained = { baseUrl: trained.url, model: 'senior-grpo', version: 'grpo-step-200', temperature: 0.1 };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
});
after(async () => {
  await trained.close();
  rmSync(ws, { recursive: true, force: true });
});

interface StoredRollout {
  id: string;
  taskId: string;
  finalReward: number | null;
  status: string;
  agents: Array<{ agent: string; model: string | null; modelVersion: string | null; promptVersion: string | null }>;
}

async function storedRollouts(runId: string): Promise<StoredRollout[]> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({ runId }).rollouts;
  } finally {
    await store.close();
  }
}

test('compare base vs a trained model for the senior agents: same tasks, the trained endpoint answers only them, numbers match the store', async () => {
  // The CLI runs in its own process while this one serves the trained model, so it must not block.
  const r = await cliAsync([
    'compare', '--workspace', ws, '--a', 'base', '--b', 'model:HypothesisRefiner=trained,model:ProtocolDesigner=trained,label:trained seniors',
    '--limit', '5', '--concurrency', '2', '--json',
  ]).done;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /SIMULATED/);
  const doc = json<ComparisonResult>(r);
  assert.match(doc.id!, /^cmp-/);
  assert.equal(doc.a.label, 'base');
  assert.equal(doc.b.label, 'trained seniors');
  assert.equal(doc.b.spec, 'model:HypothesisRefiner=trained,model:ProtocolDesigner=trained,label:trained seniors');
  assert.equal(doc.aggregate.pairs + doc.unpaired.length, 5);

  const agents = new Set(trained.requests.map((q) => q.agent));
  assert.ok(agents.size > 0, 'the trained endpoint was called');
  for (const a of agents) assert.ok(a === 'HypothesisRefiner' || a === 'ProtocolDesigner', `only the senior agents go to the trained model (got ${a})`);
  assert.ok(trained.requests.every((q) => q.model === 'senior-grpo'));

  const A = await storedRollouts(doc.a.runId);
  const B = await storedRollouts(doc.b.runId);
  assert.deepEqual(A.map((x) => x.taskId).sort(), B.map((x) => x.taskId).sort(), 'the same validation tasks on both sides');
  for (const x of B) {
    const by = new Map(x.agents.map((a) => [a.agent, a]));
    for (const senior of ['HypothesisRefiner', 'ProtocolDesigner']) {
      if (!by.has(senior)) continue;
      assert.equal(by.get(senior)!.model, 'trained');
      assert.equal(by.get(senior)!.modelVersion, 'grpo-step-200');
    }
    assert.equal(by.get('Supervisor')?.model, 'supervisor');
  }
  for (const x of A) for (const a of x.agents) assert.notEqual(a.model, 'trained');

  // The aggregate recomputed from the stored rewards (one sample per task).
  const reward = (rs: StoredRollout[], task: string): number | undefined => rs.find((x) => x.taskId === task && x.status === 'succeeded')?.finalReward ?? undefined;
  const pairs = A.map((x) => x.taskId).filter((t) => reward(A, t) !== undefined && reward(B, t) !== undefined);
  assert.equal(doc.aggregate.pairs, pairs.length);
  const d = pairs.map((t) => reward(B, t)! - reward(A, t)!);
  const m = d.reduce((s, x) => s + x, 0) / d.length;
  assert.ok(Math.abs(doc.aggregate.meanDifference! - m) < 1e-12, `mean difference ${doc.aggregate.meanDifference} vs ${m}`);
  assert.equal(doc.aggregate.wins, d.filter((x) => x > 0).length);
  assert.equal(doc.aggregate.losses, d.filter((x) => x < 0).length);
  const sd = Math.sqrt(d.reduce((s, x) => s + (x - m) ** 2, 0) / (d.length - 1));
  if (sd > 0) assert.ok(Math.abs(doc.aggregate.pairedT!.t - m / (sd / Math.sqrt(d.length))) < 1e-9, 'paired t statistic');
  for (const t of doc.tasks) {
    assert.ok(Math.abs(t.rewardA - reward(A, t.taskId)!) < 1e-12);
    assert.ok(Math.abs(t.rewardB - reward(B, t.taskId)!) < 1e-12);
    assert.deepEqual(t.rolloutIdsB, [B.find((x) => x.taskId === t.taskId)!.id]);
  }

  // The --runs form compares the two stored runs again: the same numbers, and a readable table.
  const again = cli(['compare', '--workspace', ws, '--runs', `${doc.a.runId},${doc.b.runId}`, '--json']);
  assert.equal(again.code, 0, again.stderr);
  assert.deepEqual(json<ComparisonResult>(again).aggregate, doc.aggregate);
  const text = cli(['compare', '--workspace', ws, '--runs', `${doc.a.runId},${doc.b.runId}`]);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /A = base .* B = trained seniors/);
  assert.match(text.stdout, /paired tasks \d+ · B wins \d+, ties \d+, losses \d+ · paired t p/);
  for (const t of doc.tasks) assert.match(text.stdout, new RegExp(`^${t.taskId} `, 'm'));
});

test('compare base vs a stored prompt version of the Supervisor', async () => {
  const promptFile = join(ws, '.rollout-lab', 'prompts', 'Supervisor.md');
  const original = readFileSync(promptFile, 'utf8');
  writeFileSync(promptFile, `${original}\nReject any protocol without a negative control.\n`);
  const run = cli(['run', '--workspace', ws, '--limit', '1', '--json']);
  writeFileSync(promptFile, original);
  assert.equal(run.code, 0, run.stderr);
  const store = await TraceStore.open(ws, { readOnly: true });
  const v2 = store.listPromptVersions('Supervisor').find((v) => v.text.includes('negative control'))!;
  await store.close();
  assert.ok(v2, 'the edited prompt was stored as a version');

  const r = await cliAsync(['compare', '--workspace', ws, '--a', 'base', '--b', `prompt:Supervisor=${v2.hash.slice(0, 6)}`, '--limit', '3', '--json']).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = json<ComparisonResult>(r);
  assert.equal(doc.b.label, `prompt:Supervisor=${v2.hash.slice(0, 6)}`);
  const B = await storedRollouts(doc.b.runId);
  const A = await storedRollouts(doc.a.runId);
  assert.deepEqual(A.map((x) => x.taskId).sort(), B.map((x) => x.taskId).sort());
  for (const x of B) assert.equal(x.agents.find((a) => a.agent === 'Supervisor')!.promptVersion, v2.hash);
  for (const x of A) assert.notEqual(x.agents.find((a) => a.agent === 'Supervisor')!.promptVersion, v2.hash);
});

test('compare: bad specs and options fail with exit code 2 and one line', () => {
  const cases: Array<[string[], RegExp]> = [
    [['--a', 'base', '--b', 'model:Nobody=trained'], /agent "Nobody", which is not under "agents"/],
    [['--a', 'base', '--b', 'prompt:Supervisor=ffffffffff'], /no stored prompt version of Supervisor starts with "ffffffffff"/],
    [['--a', 'base', '--b', 'trained'], /cannot read "trained"/],
    [['--a', 'base'], /give --a SPEC and --b SPEC/],
    [['--runs', 'only-one'], /--runs takes two run ids/],
    [['--runs', 'run-x,run-y'], /side A run "run-x" is not in this workspace's store/],
  ];
  for (const [args, re] of cases) {
    const r = cli(['compare', '--workspace', ws, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    const last = r.stderr.trim().split('\n').pop()!;
    assert.match(last, re);
  }
});
