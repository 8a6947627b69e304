import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimServer, type SimServer } from '../../src/core/sim/simServer';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';
import { cli, cliAsync, editLab, json, tempWorkspace, type RunDoc } from './cliHelpers';
import { assertOneCurrentEach, currentByKey, plannedSlices, rounded, storedAttempts, storedRunStatus } from './shardedHelpers';

/*
 * A run split over worker processes, on a real store on disk, against the
 * simulated OpenAI-compatible endpoint (answers derived from the request, so
 * a rollout's reward depends on its task, sample and seed only): four local
 * workers store every planned rollout once and give the metrics of a run in
 * one process; a worker killed mid-run and started again redoes only what it
 * had not finished; two copies of one slice leave one current attempt per key.
 */

const TASKS = 8;
const SAMPLES = 2;
const PLANNED = TASKS * SAMPLES;
const plan = ['--limit', String(TASKS), '--samples', String(SAMPLES), '--seed', '3'];

let ws: string;
let server: SimServer;
let base: string[];

interface WorkerDoc extends RunDoc {
  skipped: number;
  shard?: { index: number; count: number; planned: number; runDone: boolean | null };
  outcome: { planned: number; succeeded: number; superseded: number };
}

before(async () => {
  ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws]);
  assert.equal(init.code, 0, init.stderr);
  // A little latency per call, so a worker is still busy when the kill test looks at it.
  server = await startSimServer({ latencyMs: 25 });
  base = ['--workspace', ws, '--base-url', server.url];
});
after(async () => {
  await server.close();
  rmSync(ws, { recursive: true, force: true });
});






const attempts = (runId: string): Promise<RolloutRecord[]> => storedAttempts(ws, runId);
const runStatus = (runId: string): Promise<string | undefined> => storedRunStatus(ws, runId);

test('4 local workers on one run store every planned rollout once, with the rewards and metrics of a run in one process', async () => {
  const single = await cliAsync(['run', ...base, ...plan, '--concurrency', '2', '--json']).done;
  assert.equal(single.code, 0, single.stderr);
  const one = json<RunDoc>(single);
  const sharded = await cliAsync(['run', ...base, ...plan, '--workers', '4', '--concurrency', '2', '--json']).done;
  assert.equal(sharded.code, 0, sharded.stderr);
  const doc = json<RunDoc & { workers: Array<{ shard: string; state: string }>; done: boolean }>(sharded);
  assert.deepEqual(doc.workers.map((w) => [w.shard, w.state]), [['0/4', 'succeeded'], ['1/4', 'succeeded'], ['2/4', 'succeeded'], ['3/4', 'succeeded']]);
  assert.equal(doc.done, true);
  assert.match(sharded.stderr, /on 4 local worker processes/);
  assert.match(sharded.stderr, new RegExp(`\\[${PLANNED}/${PLANNED}\\] ${PLANNED} succeeded`), 'the combined progress line reaches the whole plan');

  const all = await attempts(doc.runId);
  assert.equal(all.length, PLANNED, 'each planned rollout stored exactly once: no attempt doubled, none superseded');
  const got = assertOneCurrentEach(all, PLANNED, 'workers');
  const want = currentByKey(await attempts(one.runId));
  for (const [k, r] of got) assert.equal(r.finalReward, want.get(k)![0]!.finalReward, `reward of ${k}`);
  // Equal up to the order the means added the rollouts in.
  assert.deepEqual(rounded(doc.metrics), rounded(one.metrics), 'the metrics over the whole run equal the single process run');
  assert.equal(await runStatus(doc.runId), 'done');
});

test('a worker killed mid-run and started again redoes only its unfinished rollouts: nothing lost, nothing doubled', async () => {
  // The run is created by the worker of slice 0, which runs its share; slice 1 joins it.
  const first = await cliAsync(['run', ...base, ...plan, '--shard', '0/2', '--concurrency', '2', '--json']).done;
  assert.equal(first.code, 0, first.stderr);
  const w0 = json<WorkerDoc>(first);
  assert.equal(w0.shard?.runDone, false, 'slice 1 has not run yet');
  assert.notEqual(await runStatus(w0.runId), 'done', 'a worker does not mark the run done while another slice is unfinished');
  const slice1 = w0.shard ? PLANNED - w0.shard.planned : 0;
  assert.ok(slice1 >= 3, `slice 1 holds ${slice1} keys: enough to kill its worker part way`);

  const slices = await plannedSlices(ws, { limit: TASKS, seed: 3, samples: SAMPLES, count: 2 });
  const inSlice1 = (r: RolloutRecord): boolean => slices.get(`${r.taskId}#${r.sample}`) === 1;
  const join = ['run', ...base, '--resume', w0.runId, '--shard', '1/2', '--concurrency', '1', '--json'];
  const killed = cliAsync(join);
  // Killed once it has finished some of its slice and not all of it (looked up in the store, not timed).
  let finished: RolloutRecord[] = [];
  for (;;) {
    finished = (await attempts(w0.runId)).filter((r) => inSlice1(r) && r.status === 'succeeded');
    if (finished.length >= 1 || killed.child.exitCode !== null) break;
    await sleep(50);
  }
  killed.child.kill('SIGKILL');
  await killed.done;
  const before = await attempts(w0.runId);
  const doneBefore = before.filter((r) => inSlice1(r) && r.status === 'succeeded');
  assert.ok(doneBefore.length >= 1 && doneBefore.length < slice1, `the kill came part way through slice 1 (${doneBefore.length} of ${slice1} done)`);

  const again = await cliAsync(join).done;
  assert.equal(again.code, 0, again.stderr);
  const doc = json<WorkerDoc>(again);
  assert.equal(doc.skipped, doneBefore.length, 'the restart skips what the killed worker finished');
  assert.equal(doc.shard?.runDone, true, 'the last slice to end finds every key standing');
  assert.equal(await runStatus(w0.runId), 'done');

  const all = await attempts(w0.runId);
  const current = assertOneCurrentEach(all, PLANNED, 'after the restart');
  for (const r of doneBefore) assert.equal(current.get(`${r.taskId}#${r.sample}`)?.id, r.id, `${r.taskId}#${r.sample} was not rerun`);
  // What the kill cut off is kept, interrupted and superseded; nothing else was redone.
  const superseded = all.filter((r) => r.supersededBy);
  assert.ok(superseded.every((r) => r.status === 'failed' && r.failure === 'interrupted'), superseded.map((r) => `${r.id} ${r.status} ${r.failure}`).join(', '));
  assert.equal(all.length, PLANNED + superseded.length);
  assert.equal(doc.outcome.superseded, superseded.length);

  const wrong = cli(['run', '--workspace', ws, '--resume', w0.runId, '--shard', '0/3']);
  assert.equal(wrong.code, 2, wrong.stderr);
  assert.match(wrong.stderr, /is split into 2 slices, not 3: join it with --shard K\/2/);
});

test('two copies of the same slice run at once leave one current rollout per key', async () => {
  const first = await cliAsync(['run', ...base, ...plan, '--shard', '0/2', '--concurrency', '2', '--json']).done;
  assert.equal(first.code, 0, first.stderr);
  const runId = json<WorkerDoc>(first).runId;
  const join = ['run', ...base, '--resume', runId, '--shard', '1/2', '--concurrency', '2', '--json'];
  const [a, b] = await Promise.all([cliAsync(join).done, cliAsync(join).done]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  const all = await attempts(runId);
  assert.ok(all.length > PLANNED, `both copies ran some key of the slice (${all.length} attempts of ${PLANNED} keys)`);
  const current = assertOneCurrentEach(all, PLANNED, 'two copies');
  // A key both copies ran keeps the attempt that ended first; the other is kept too, superseded by it.
  for (const r of all.filter((x) => x.supersededBy)) {
    const winner = current.get(`${r.taskId}#${r.sample}`)!;
    assert.equal(r.supersededBy, winner.id);
    if (r.status === 'succeeded') assert.ok(winner.endTime! <= r.endTime!, `${winner.id} ended no later than ${r.id}, which it supersedes`);
  }
  const traces = json<{ total: number; rollouts: Array<{ supersededBy: string | null }> }>(cli(['traces', '--workspace', ws, '--run', runId, '--json']));
  assert.equal(traces.rollouts.filter((r) => !r.supersededBy).length, PLANNED, '`traces` counts each key once');
  assert.equal(await runStatus(runId), 'done');
});

test('a worker its coordinator follows leaves the end to its coordinator; the same slice rerun by hand marks the run done', async () => {
  const first = await cliAsync(['run', ...base, ...plan, '--shard', '0/2', '--concurrency', '2', '--json']).done;
  assert.equal(first.code, 0, first.stderr);
  const runId = json<WorkerDoc>(first).runId;
  const slice1 = ['run', ...base, '--resume', runId, '--shard', '1/2', '--concurrency', '2', '--json'];
  // What every place sets on the workers it starts for a coordinator.
  const followed = await cliAsync(slice1, { ROLLOUT_LAB_COORDINATED: '1' }).done;
  assert.equal(followed.code, 0, followed.stderr);
  const doc = json<WorkerDoc>(followed);
  assert.equal(doc.shard?.runDone, null, 'a coordinated worker does not check the whole run');
  assert.equal(doc.succeeded + doc.failed, doc.shard?.planned, "its figures are its own slice's");
  assert.notEqual(await runStatus(runId), 'done', 'nor does it mark the run done, though every key stands');
  assertOneCurrentEach(await attempts(runId), PLANNED, 'coordinated worker');
  // A slice rerun by hand (the coordinator's rerun command, without that setting) skips what stands and ends the run.
  const byHand = await cliAsync(slice1).done;
  assert.equal(byHand.code, 0, byHand.stderr);
  const again = json<WorkerDoc>(byHand);
  assert.equal(again.skipped, again.shard?.planned);
  assert.equal(again.shard?.runDone, true);
  assert.equal(await runStatus(runId), 'done');
});

test('a gather phase with "workers" runs its rollouts over worker processes; its record follows the whole run', async () => {
  editLab(ws, (cfg) => {
    (cfg.training ??= {}).phases = [{ name: 'gather-wide', kind: 'gather', limit: 6, samples: 2, workers: { count: 3 } }];
  });
  const r = await cliAsync(['pipeline', 'run', 'gather-wide', ...base, '--json']).done;
  assert.equal(r.code, 0, r.stderr);
  const rec = JSON.parse(r.stdout) as { state: string; runId: string; counts: Record<string, number>; error?: string };
  assert.equal(rec.state, 'done', rec.error);
  assert.equal(rec.counts['rollouts'], 12);
  assert.equal(rec.counts['succeeded'], 12);
  assert.match(r.stderr, /phase gather-wide: run \S+ on 3 local worker processes/);
  const all = await attempts(rec.runId);
  assert.equal(new Set(all.map((x) => `${x.taskId}#${x.sample}`)).size, 12);
  assert.equal(all.length, 12, 'each planned rollout once');
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    assert.equal(store.getRun(rec.runId)?.params['shards'], 3, 'the phase\'s run is split in 3');
  } finally {
    await store.close();
  }
});

test('--shard and --workers are checked before anything runs', async () => {
  for (const [args, message] of [
    [['--shard', '4/4'], /0-based/],
    [['--shard', '1'], /takes K\/N/],
    [['--workers', '0'], /--workers must be an integer/],
    [['--workers', '2', '--shard', '0/2'], /--workers or --shard, not both/],
    [['--workers', '2', '--on', 'mars'], /--on mars: workers start on local, slurm/],
    [['--on', 'local'], /pass it with --workers/],
  ] as const) {
    const r = cli(['run', '--workspace', ws, ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
  }
  // The test process serves the endpoint: a run against it goes in a process of its own, not a blocking one.
  const plain = json<RunDoc>(await cliAsync(['run', ...base, '--limit', '2', '--json']).done);
  const r = cli(['run', '--workspace', ws, '--resume', plain.runId, '--shard', '0/2']);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /is not split into slices/);
});
