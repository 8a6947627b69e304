import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimServer, type SimServer } from '../../src/core/sim/simServer';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';
import { cli, cliAsync, editLab, json, tempWorkspace, type RunDoc } from './cliHelpers';
import { assertOneCurrentEach, plannedSlices, rounded, storedAttempts } from './shardedHelpers';
import { slurmSkip, startSlurm, type SlurmCluster } from '../unit/train/launchers/slurmCluster';

/*
 * `run --workers 4 --on slurm` on a real one-node Slurm (scripts/startSlurm.sh:
 * munged, slurmctld and slurmd started here), against the OpenAI-compatible
 * simulated endpoint: one job array of four tasks stores every planned rollout
 * once, with the rewards and metrics of a run in one process; an array task
 * cancelled mid-run with scancel and requeued with scontrol redoes only the
 * rollouts of its slice that had not ended, and the coordinator follows it to
 * its new end: nothing lost, nothing doubled.
 */

const skip = slurmSkip('sharded runs on a Slurm job array');
const SAMPLES = 2;

let cluster: SlurmCluster;
let ws: string;
let server: SimServer;
let base: string[];

before(async () => {
  if (skip) return;
  cluster = startSlurm('shards');
  cluster.use();
  ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws]);
  assert.equal(init.code, 0, init.stderr);
  editLab(ws, (cfg) => (cfg.workers = { slurm: { pollSeconds: 0.5 } }));
  // Latency per model call, so a task is still at work when the requeue test cancels it.
  server = await startSimServer({ latencyMs: 40 });
  base = ['--workspace', ws, '--base-url', server.url];
});
after(async () => {
  if (skip) return;
  await server.close();
  cluster.stop();
  rmSync(ws, { recursive: true, force: true });
});



const attempts = (runId: string): Promise<RolloutRecord[]> => storedAttempts(ws, runId);

/** The id of the sharded run with this seed that a coordinator has stored and not ended. */
async function runningRun(seed: number): Promise<string | null> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRuns().find((r) => r.status === 'running' && r.params['shards'] === 4 && r.params['seed'] === seed)?.id ?? null;
  } finally {
    await store.close();
  }
}

const slurm = (...args: string[]): string => {
  const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
};

/** The array of a run, as squeue knows it by the job name the workers give it. */
function arrayOf(runId: string): string | null {
  const lines = slurm('squeue', '-h', '-t', 'all', '-n', `rollout-lab-${runId}`, '-o', '%F').split('\n').filter(Boolean);
  return lines[0] ?? null;
}

function taskState(jobId: string, task: number): string {
  const line = slurm('scontrol', 'show', 'job', jobId, '-o').split('\n').find((l) => new RegExp(`ArrayTaskId=${task}(\\s|$)`).test(l));
  return /JobState=(\S+)/.exec(line ?? '')?.[1] ?? 'unknown';
}

async function until<T>(what: string, probe: () => Promise<T | null> | T | null, child?: { exitCode: number | null }): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== null) return v;
    if (child && child.exitCode !== null) throw new Error(`the coordinator ended before ${what}`);
    await sleep(100);
  }
}

interface WorkersDoc extends RunDoc {
  done: boolean;
  on: string;
  workers: Array<{ shard: string; state: string; restarts: number; detail: string | null }>;
}

test('a 4-task Slurm job array stores every planned rollout once, with the rewards and metrics of one process', { skip }, async () => {
  const plan = ['--limit', '10', '--samples', String(SAMPLES), '--seed', '5'];
  const single = await cliAsync(['run', ...base, ...plan, '--concurrency', '2', '--json']).done;
  assert.equal(single.code, 0, single.stderr);
  const one = json<RunDoc>(single);

  const r = await cliAsync(['run', ...base, ...plan, '--workers', '4', '--on', 'slurm', '--concurrency', '2', '--json']).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = json<WorkersDoc>(r);
  assert.equal(doc.on, 'slurm');
  assert.equal(doc.done, true);
  assert.deepEqual(doc.workers.map((w) => [w.shard, w.state]), [['0/4', 'succeeded'], ['1/4', 'succeeded'], ['2/4', 'succeeded'], ['3/4', 'succeeded']]);
  assert.match(r.stderr, /on Slurm job array \d+ \(4 tasks/);

  const all = await attempts(doc.runId);
  assert.equal(all.length, 20, 'every planned rollout stored exactly once');
  const got = assertOneCurrentEach(all, 20, 'array');
  const want = new Map((await attempts(one.runId)).map((x) => [`${x.taskId}#${x.sample}`, x]));
  for (const [k, x] of got) assert.equal(x.finalReward, want.get(k)!.finalReward, `reward of ${k}`);
  assert.deepEqual(rounded(doc.metrics), rounded(one.metrics));

  // Each slice ran as its own array task, on the node, writing its own log.
  const jobId = arrayOf(doc.runId);
  assert.ok(jobId, 'squeue still knows the array');
  const dir = path.join(ws, '.rollout-lab', 'workers', doc.runId);
  for (let k = 0; k < 4; k++) {
    assert.equal(taskState(jobId!, k), 'COMPLETED');
    const log = readFileSync(path.join(dir, `worker-${k}.log`), 'utf8');
    assert.match(log, new RegExp(`rollout-lab worker: slice ${k}/4 on ${cluster.node}`));
    // sbatch --export set it: each task leaves the run's end to the coordinator, not reading the other slices.
    assert.match(log, /"runDone":null/, `task ${k} ran as a worker its coordinator follows`);
  }
  const script = readFileSync(path.join(dir, 'workers.sbatch'), 'utf8');
  assert.match(script, /^#SBATCH --array=0-3$/m);
  assert.match(script, /^#SBATCH --requeue$/m);
});

test('an array task cancelled mid-run with scancel and requeued redoes only its unfinished rollouts: nothing lost, nothing doubled', { skip }, async () => {
  const tasks = 14;
  const planned = tasks * SAMPLES;
  const slices = await plannedSlices(ws, { limit: tasks, seed: 9, samples: SAMPLES, count: 4 });
  const coordinator = cliAsync(['run', ...base, '--limit', String(tasks), '--samples', String(SAMPLES), '--seed', '9', '--workers', '4', '--on', 'slurm', '--concurrency', '1', '--json']);
  const runId = await until('the run is stored', () => runningRun(9), coordinator.child);
  const jobId = await until('the array is submitted', () => arrayOf(runId), coordinator.child);
  const inSlice2 = (r: RolloutRecord): boolean => slices.get(`${r.taskId}#${r.sample}`) === 2;
  const slice2 = (await until('some of slice 2 is done', async () => {
    const done = (await attempts(runId)).filter((r) => inSlice2(r) && r.status === 'succeeded');
    return done.length >= 1 ? done : null;
  }, coordinator.child)).length;
  slurm('scancel', `${jobId}_2`);
  await until('task 2 is cancelled', () => (taskState(jobId, 2) === 'CANCELLED' ? true : null), coordinator.child);
  const cut = await attempts(runId);
  const doneBefore = cut.filter((r) => inSlice2(r) && r.status === 'succeeded');
  assert.ok(doneBefore.length >= slice2, 'what was done stays done');
  // Requeued as Slurm requeues a preempted task; started now rather than after its requeue delay.
  slurm('scontrol', 'requeue', `${jobId}_2`);
  slurm('scontrol', 'update', `JobId=${jobId}_2`, 'StartTime=now');

  const r = await coordinator.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = json<WorkersDoc>(r);
  assert.equal(doc.done, true);
  assert.deepEqual(doc.workers.map((w) => w.state), ['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  assert.equal(doc.workers[2]!.restarts, 1, 'the coordinator followed task 2 through its requeue');

  const all = await attempts(runId);
  const current = assertOneCurrentEach(all, planned, 'after the requeue');
  for (const x of doneBefore) assert.equal(current.get(`${x.taskId}#${x.sample}`)?.id, x.id, `${x.taskId}#${x.sample} was not rerun`);
  // Only what the cancel cut off was redone: kept, superseded, never counted.
  const superseded = all.filter((x) => x.supersededBy);
  assert.ok(superseded.every(inSlice2), 'only slice 2 was redone');
  assert.ok(superseded.every((x) => x.status !== 'succeeded'), superseded.map((x) => `${x.id} ${x.status}`).join(', '));
  assert.equal(all.length, planned + superseded.length);
  const log = readFileSync(path.join(ws, '.rollout-lab', 'workers', runId, 'worker-2.log'), 'utf8');
  assert.match(log, /slice 2\/4 on .*, start 0/);
  assert.match(log, /slice 2\/4 on .*, start 1/, 'the requeued task appended to its log');
  assert.ok(existsSync(path.join(ws, '.rollout-lab', 'workers', runId, 'workers.sbatch')));
});

test('Ctrl+C of the coordinator scancels the array; the run is cancelled, and resuming it over a new array finishes it once', { skip }, async () => {
  const tasks = 10;
  const planned = tasks * SAMPLES;
  const coordinator = cliAsync(['run', ...base, '--limit', String(tasks), '--samples', String(SAMPLES), '--seed', '13', '--workers', '4', '--on', 'slurm', '--concurrency', '1', '--json']);
  const runId = await until('the run is stored', () => runningRun(13), coordinator.child);
  const jobId = await until('the array is submitted', () => arrayOf(runId), coordinator.child);
  await until('a rollout is done', async () => ((await attempts(runId)).some((r) => r.status === 'succeeded') ? true : null), coordinator.child);
  coordinator.child.kill('SIGINT');
  const r = await coordinator.done;
  assert.equal(r.code, 1, r.stderr);
  const doc = json<WorkersDoc & { cancelled: boolean }>(r);
  assert.equal(doc.cancelled, true);
  assert.equal(doc.done, false);
  for (let k = 0; k < 4; k++) assert.notEqual(taskState(jobId, k), 'RUNNING', `task ${k} was stopped`);
  assert.ok(doc.workers.some((w) => w.state === 'cancelled'), JSON.stringify(doc.workers));
  assert.match(r.stderr, new RegExp(`finish every slice with: rollout-lab run --resume ${runId} --workers 4 --on slurm`));
  const before = (await attempts(runId)).filter((x) => x.status === 'succeeded' && !x.supersededBy);
  assert.ok(before.length < planned, 'the cancel came part way');

  const again = await cliAsync(['run', ...base, '--resume', runId, '--workers', '4', '--on', 'slurm', '--json']).done;
  assert.equal(again.code, 0, again.stderr);
  assert.equal(json<WorkersDoc>(again).done, true);
  const current = assertOneCurrentEach(await attempts(runId), planned, 'after the resume');
  for (const x of before) assert.equal(current.get(`${x.taskId}#${x.sample}`)?.id, x.id, `${x.taskId}#${x.sample} was not rerun`);
});

test('--on slurm where sbatch is missing says so, and leaves no run marked running', { skip }, async () => {
  // A PATH with node and nothing else.
  const bin = mkdtempSync(path.join(tmpdir(), 'rl-nosbatch-'));
  symlinkSync(process.execPath, path.join(bin, 'node'));
  try {
    const r = await cliAsync(['run', ...base, '--limit', '2', '--workers', '2', '--on', 'slurm', '--json'], { PATH: bin }).done;
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /sbatch is not on PATH: --on slurm submits the job array from this machine/);
    const store = await TraceStore.open(ws, { readOnly: true });
    try {
      assert.deepEqual(store.listRuns().filter((x) => x.status === 'running').map((x) => x.id), [], 'the run whose workers never started is not left running');
    } finally {
      await store.close();
    }
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});
