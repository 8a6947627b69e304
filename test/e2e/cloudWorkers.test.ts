import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { startSimServer, type SimServer } from '../../src/core/sim/simServer';
import type { RolloutRecord } from '../../src/core/store/types';
import { fakeTool, readRecord } from '../fakes/commandLineTools';
import { CLI, cli, cliAsync, editLab, json, tempWorkspace, type CliResult, type RunDoc } from './cliHelpers';
import { assertOneCurrentEach, rounded, storedAttempts, storedRunStatus } from './shardedHelpers';

/*
 * `run --workers 3 --on k8s` and `--on skypilot` end to end, through the same
 * code path a real cluster gets: the CLI writes the Indexed Job / the task
 * YAML and drives `kubectl` / `sky`, here fakes at the edge of the machine
 * (test/fakes/workers) that start the pods / nodes as local processes from
 * what they were given — the container's command, args and env, the node's
 * run script — with JOB_COMPLETION_INDEX / SKYPILOT_NODE_RANK per index and the
 * mount path mapped to the workspace. Every rollout is stored once and the
 * metrics equal a run in one process; a Ctrl+C of the coordinator reaches the
 * fake as `kubectl delete job` / `sky cancel`, the workers stop and the run is
 * cancelled; a pod deleted mid-run is replaced for its slice alone.
 */

const TASKS = 8;
const SAMPLES = 2;
const PLANNED = TASKS * SAMPLES;
const plan = ['--limit', String(TASKS), '--samples', String(SAMPLES), '--seed', '5'];
const API_KEY = 'sk-cloud-workers-test-3f9a';

let ws: string;
let state: string;
let server: SimServer;
let slow: SimServer;
let env: NodeJS.ProcessEnv;
let recordFile: string;

interface WorkersDoc extends RunDoc {
  on: string;
  done: boolean;
  cancelled: boolean;
  workers: Array<{ shard: string; state: string; detail: string | null; restarts: number; rerun: string }>;
}

before(async () => {
  ws = tempWorkspace();
  state = path.join(tmpdir(), `rl-cloud-${process.pid}`);
  rmSync(state, { recursive: true, force: true });
  const bin = path.join(state, 'bin');
  mkdirSync(bin, { recursive: true });
  fakeTool(bin, 'kubectl', '../workers/fake-kubectl.mjs');
  fakeTool(bin, 'sky', '../workers/fake-sky.mjs');
  recordFile = path.join(state, 'record.jsonl');
  env = {
    PATH: `${bin}${path.delimiter}${process.env.PATH}`,
    FAKE_STATE: state,
    FAKE_RECORD: recordFile,
    FAKE_K8S_PVCS: JSON.stringify({ 'lab-share': { path: ws, accessModes: ['ReadWriteMany'] }, 'one-node': { path: ws, accessModes: ['ReadWriteOnce'] } }),
    FAKE_K8S_SECRETS: JSON.stringify({ 'model-keys': { OPENAI_API_KEY: API_KEY } }),
    FAKE_SKY_BUCKETS: JSON.stringify({ 's3://rl-test/lab': ws }),
    OPENAI_API_KEY: API_KEY,
  };
  assert.equal(cli(['init', '--workspace', ws]).code, 0);
  editLab(ws, (cfg) => {
    cfg.workers = {
      k8s: { image: 'ghcr.io/example/rollout-lab:0.1', cli: [process.execPath, CLI], namespace: 'labs', workspace: { claim: 'lab-share', mountPath: '/workspace' }, envFromSecrets: ['model-keys'], pollSeconds: 0.2 },
      skypilot: { cli: [process.execPath, CLI], cloud: 'aws', workspace: { path: '/workspace', bucket: 's3://rl-test/lab' }, secrets: ['OPENAI_API_KEY'], setup: ['echo "node $SKYPILOT_NODE_RANK ready" >&2'], pollSeconds: 0.2 },
    };
  });
  server = await startSimServer({ latencyMs: 5 });
  // Slow enough that a Ctrl+C comes while every worker is mid-slice.
  slow = await startSimServer({ latencyMs: 400 });
});

after(async () => {
  // Whatever a failed test left running on the fake clusters goes.
  for (const c of existsSync(path.join(state, 'sky')) ? readdirSync(path.join(state, 'sky')) : []) runTool(['sky', 'down', '-y', c]);
  for (const j of existsSync(path.join(state, 'k8s/labs/jobs')) ? readdirSync(path.join(state, 'k8s/labs/jobs')) : []) runTool(['kubectl', '--namespace', 'labs', 'delete', 'job', j, '--ignore-not-found']);
  await server.close();
  await slow.close();
  rmSync(ws, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

/** A fake tool run without blocking this process, which serves the workers' model endpoint. */
function tool(argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((done) => child.on('close', (code) => done({ code, stdout, stderr })));
}

function runTool(argv: string[]): void {
  spawnSync(argv[0]!, argv.slice(1), { env: { ...process.env, ...env }, stdio: 'ignore' });
}





const attempts = (runId: string): Promise<RolloutRecord[]> => storedAttempts(ws, runId);
const runStatus = (runId: string): Promise<string | undefined> => storedRunStatus(ws, runId);

let single: { doc: RunDoc; byKey: Map<string, RolloutRecord> } | null = null;
async function singleRun(): Promise<{ doc: RunDoc; byKey: Map<string, RolloutRecord> }> {
  if (single) return single;
  const r = await cliAsync(['run', '--workspace', ws, '--base-url', server.url, ...plan, '--concurrency', '2', '--json'], env).done;
  assert.equal(r.code, 0, r.stderr);
  const doc = json<RunDoc>(r);
  single = { doc, byKey: assertOneCurrentEach(await attempts(doc.runId), PLANNED, 'one process') };
  return single;
}

const calls = (tool: string, from: number): string[][] => readRecord(recordFile).slice(from).filter((c) => c.tool === tool).map((c) => c.argv);
const recorded = (): number => readRecord(recordFile).length;

async function assertLikeOneProcess(r: CliResult, on: string): Promise<WorkersDoc> {
  assert.equal(r.code, 0, r.stderr);
  const doc = json<WorkersDoc>(r);
  assert.equal(doc.on, on);
  assert.equal(doc.done, true);
  assert.equal(doc.cancelled, false);
  assert.deepEqual(doc.workers.map((w) => [w.shard, w.state]), [['0/3', 'succeeded'], ['1/3', 'succeeded'], ['2/3', 'succeeded']]);
  const all = await attempts(doc.runId);
  assert.equal(all.length, PLANNED, 'each planned rollout stored exactly once');
  const got = assertOneCurrentEach(all, PLANNED, on);
  const one = await singleRun();
  for (const [k, rec] of got) assert.equal(rec.finalReward, one.byKey.get(k)!.finalReward, `reward of ${k}`);
  assert.deepEqual(rounded(doc.metrics), rounded(one.doc.metrics), 'the metrics over the whole run equal the single process run');
  assert.equal(await runStatus(doc.runId), 'done');
  return doc;
}

test('--on k8s: an Indexed Job of 3 pods, each its slice by JOB_COMPLETION_INDEX, stores every rollout once with the metrics of one process', async () => {
  const from = recorded();
  const r = await cliAsync(['run', '--workspace', ws, '--base-url', server.url, ...plan, '--workers', '3', '--on', 'k8s', '--concurrency', '2', '--json'], env).done;
  const doc = await assertLikeOneProcess(r, 'k8s');
  assert.match(r.stderr, /on Kubernetes Indexed Job rlw-run-[a-z0-9-]+ in namespace labs \(3 pods; workspace: claim lab-share at \/workspace\)/);
  const k = calls('kubectl', from);
  assert.deepEqual(k[0], ['kubectl', '--namespace', 'labs', 'get', 'pvc', 'lab-share', '-o', 'json'], 'the claim is checked first');
  const apply = readRecord(recordFile).slice(from).find((c) => c.tool === 'kubectl' && c.argv.includes('apply'))!;
  assert.deepEqual(apply.argv, ['kubectl', '--namespace', 'labs', 'apply', '-f', '-']);
  const job = parse(apply.stdin!) as Record<string, any>;
  assert.equal(job.spec.completionMode, 'Indexed');
  assert.equal(job.spec.completions, 3);
  const c = job.spec.template.spec.containers[0];
  assert.deepEqual(c.command, [process.execPath, CLI]);
  assert.deepEqual(c.args.slice(0, 5), ['run', '--resume', doc.runId, '--shard', '$(JOB_COMPLETION_INDEX)/3']);
  assert.ok(c.args.includes('/workspace') && !c.args.includes(ws), 'the pods open the workspace at the mount path');
  assert.ok(!apply.stdin!.includes(API_KEY), 'the API key reaches the pods from the Secret, not the manifest');
  assert.ok(k.some((a) => a.includes('get') && a.includes('jobs,pods')), 'followed with kubectl get jobs,pods');
});

test('--on skypilot: one task on 3 nodes, each its slice by SKYPILOT_NODE_RANK, stores every rollout once with the metrics of one process', async () => {
  const from = recorded();
  const r = await cliAsync(['run', '--workspace', ws, '--base-url', server.url, ...plan, '--workers', '3', '--on', 'skypilot', '--concurrency', '2', '--json'], env).done;
  const doc = await assertLikeOneProcess(r, 'skypilot');
  const s = calls('sky', from);
  const cluster = `rl-w-${doc.runId.toLowerCase()}`;
  const launch = s.find((a) => a[1] === 'launch')!;
  assert.deepEqual(launch.slice(0, 3), ['sky', 'launch', '-c']);
  assert.equal(launch[3], cluster);
  assert.ok(launch.includes('--secret') && launch.includes('OPENAI_API_KEY') && !launch.includes(API_KEY), 'the key goes as a SkyPilot secret, by name');
  assert.ok(s.some((a) => a[1] === 'queue' && a[2] === cluster), 'followed with sky queue');
  assert.deepEqual(s.at(-1), ['sky', 'down', '-y', cluster], 'the cluster goes once every worker has ended');
  const task = parse(readFileSync(launch[4]!, 'utf8')) as Record<string, any>;
  assert.equal(task.num_nodes, 3);
  assert.deepEqual(task.file_mounts, { '/workspace': { source: 's3://rl-test/lab', mode: 'MOUNT_CACHED' } });
  assert.match(task.run, /"\$shard\/3"/);
});

/** Starts a run on the slow endpoint, waits until every slice has stored a rollout and the run is not over, then sends Ctrl+C. */
async function cancelMidRun(on: string): Promise<{ r: CliResult; doc: WorkersDoc; from: number }> {
  const from = recorded();
  const dirs = path.join(ws, '.rollout-lab', 'workers');
  const before = new Set(existsSync(dirs) ? readdirSync(dirs) : []);
  const running = cliAsync(['run', '--workspace', ws, '--base-url', slow.url, '--limit', '12', '--samples', '2', '--seed', '9', '--workers', '3', '--on', on, '--concurrency', '1', '--json'], env);
  // The run's id is its workers' folder, made when they are submitted; cancelled once two rollouts are stored (looked up, not timed).
  for (;;) {
    assert.equal(running.child.exitCode, null, `the run is still going when it is cancelled: ${await Promise.race([running.done.then((x) => x.stderr), sleep(1).then(() => '')])}`);
    const runId = (existsSync(dirs) ? readdirSync(dirs) : []).find((d) => !before.has(d));
    if (runId && (await attempts(runId)).filter((x) => x.status === 'succeeded').length >= 2) break;
    await sleep(100);
  }
  running.child.kill('SIGINT');
  const r = await running.done;
  return { r, doc: json<WorkersDoc>(r), from };
}

test('--on k8s: Ctrl+C of the coordinator deletes the Job (kubectl delete job --cascade=foreground), its pods stop, and the run is cancelled, not done', async () => {
  const { r, doc, from } = await cancelMidRun('k8s');
  assert.equal(r.code, 1, r.stderr);
  assert.equal(doc.cancelled, true);
  assert.equal(doc.done, false);
  const del = calls('kubectl', from).find((a) => a.includes('delete'))!;
  assert.ok(del, 'the coordinator deleted the Job');
  assert.deepEqual(del.slice(3, 5), ['delete', 'job']);
  assert.ok(del.includes('--cascade=foreground'));
  assert.ok(doc.workers.every((w) => w.state === 'cancelled'), JSON.stringify(doc.workers));
  assert.equal(existsSync(path.join(state, 'k8s/labs/jobs', del[5]!)), false, 'the Job and its pods are gone');
  assert.equal(await runStatus(doc.runId), 'cancelled');
  const all = await attempts(doc.runId);
  assert.ok(all.length < 24 && all.every((x) => x.status !== 'running'), 'no rollout left running');
  assert.match(r.stderr, /is not done — finish every slice with: rollout-lab run --resume \S+ --workers 3 --on k8s/);
});

test('--on skypilot: Ctrl+C of the coordinator cancels the job (sky cancel), its nodes stop, and the run is cancelled, not done', async () => {
  const { r, doc, from } = await cancelMidRun('skypilot');
  assert.equal(r.code, 1, r.stderr);
  assert.equal(doc.cancelled, true);
  assert.equal(doc.done, false);
  const s = calls('sky', from);
  const cancel = s.find((a) => a[1] === 'cancel');
  assert.ok(cancel, 'the coordinator cancelled the job');
  assert.deepEqual(cancel.slice(0, 3), ['sky', 'cancel', '-y']);
  assert.ok(doc.workers.every((w) => w.state === 'cancelled'), JSON.stringify(doc.workers));
  assert.deepEqual(s.at(-1)?.slice(0, 3), ['sky', 'down', '-y']);
  assert.equal(await runStatus(doc.runId), 'cancelled');
});

test('--on k8s: bad settings are refused before anything is submitted, with what to fix', async () => {
  for (const [edit, message] of [
    [(k: Record<string, any>) => delete k.image, /workers\.k8s\.image is not set/],
    [(k: Record<string, any>) => (k.workspace.claim = 'one-node'), /one-node in namespace labs is ReadWriteOnce, not ReadWriteMany/],
    [(k: Record<string, any>) => (k.workspace.claim = 'nowhere'), /nowhere \(workers\.k8s\.workspace\.claim\) is not in namespace labs/],
  ] as const) {
    const saved = structuredClone(json<Record<string, any>>({ code: 0, stdout: readFileSync(path.join(ws, '.rollout-lab/lab.json'), 'utf8'), stderr: '' }));
    editLab(ws, (cfg) => edit(cfg.workers.k8s));
    const from = recorded();
    const r = await cliAsync(['run', '--workspace', ws, '--base-url', server.url, '--limit', '2', '--workers', '2', '--on', 'k8s'], env).done;
    editLab(ws, (cfg) => Object.assign(cfg, saved));
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.ok(!calls('kubectl', from).some((a) => a.includes('apply')), 'nothing applied');
  }
});

test('--on k8s: a pod deleted mid-run is replaced for its slice alone, which redoes only its unfinished rollouts', async () => {
  const dirs = path.join(ws, '.rollout-lab', 'workers');
  const before = new Set(existsSync(dirs) ? readdirSync(dirs) : []);
  const running = cliAsync(['run', '--workspace', ws, '--base-url', slow.url, '--limit', '6', '--samples', '2', '--seed', '11', '--workers', '3', '--on', 'k8s', '--concurrency', '1', '--json'], env);
  let runId: string | undefined;
  let pod: string | undefined;
  for (;;) {
    assert.equal(running.child.exitCode, null, 'the run is still going');
    runId = (existsSync(dirs) ? readdirSync(dirs) : []).find((d) => !before.has(d));
    const job = runId ? readdirSync(path.join(dirs, runId)).find((f) => f.endsWith('.yaml'))?.replace(/\.yaml$/, '') : undefined;
    if (job && (await attempts(runId!)).some((x) => x.status === 'succeeded')) {
      const r = await tool(['kubectl', '--namespace', 'labs', 'get', 'jobs,pods', '-l', `rollout-lab/workers=${job}`, '-o', 'json']);
      pod = (JSON.parse(r.stdout).items as Array<{ kind: string; metadata: { name: string; labels: Record<string, string> }; status: { phase: string } }>).find(
        (i) => i.kind === 'Pod' && i.metadata.labels['batch.kubernetes.io/job-completion-index'] === '1' && i.status.phase === 'Running',
      )?.metadata.name;
      if (pod) break;
    }
    await sleep(100);
  }
  const del = await tool(['kubectl', '--namespace', 'labs', 'delete', 'pod', pod]);
  assert.equal(del.code, 0, del.stderr);
  const r = await running.done;
  assert.equal(r.code, 0, r.stderr);
  const doc = json<WorkersDoc>(r);
  assert.equal(doc.done, true);
  assert.deepEqual(doc.workers.map((w) => [w.shard, w.state, w.restarts]), [['0/3', 'succeeded', 0], ['1/3', 'succeeded', 1], ['2/3', 'succeeded', 0]], 'slice 1 alone ran again');
  const all = await attempts(runId!);
  const current = all.filter((x) => !x.supersededBy);
  assert.equal(current.length, 12, 'every key has one current attempt');
  assert.ok(current.every((x) => x.status === 'succeeded'));
  assert.ok(all.filter((x) => x.supersededBy).every((x) => x.status !== 'succeeded'), 'only what the deleted pod cut off was redone');
  assert.equal(await runStatus(runId!), 'done');
});
