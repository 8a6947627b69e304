import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import type { JobHandle } from '../../../../src/core/train/jobs/launcher';
import { launcherFor } from '../../../../src/core/train/jobs/launchers';
import { cleanSkyLine, parseSkyJobId, parseSkyQueueStatus } from '../../../../src/core/train/jobs/launchers/skypilot';
import { fakeTool, readRecord } from '../../../fakes/commandLineTools';
import { assertNotInFiles, makeJob, SECRET, SECRET_NAME, SECRET_SHA256, tempDir } from './helpers';

/** The documented SkyPilot task fields (docs.skypilot.co/en/latest/reference/yaml-spec.html) that Rollout Lab writes; nothing else. */
const SkyTaskSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9-]+$/),
  resources: z.strictObject({
    accelerators: z.union([z.string().regex(/^[A-Za-z0-9-]+:\d+$/), z.record(z.string(), z.number().int().positive())]).optional(),
    infra: z.string().optional(),
    use_spot: z.boolean().optional(),
    image_id: z.string().optional(),
    cpus: z.string().regex(/^\d+\+?$/).optional(),
    memory: z.string().regex(/^\d+(\.\d+)?\+?$/).optional(),
    ports: z.array(z.number().int()).optional(),
  }),
  workdir: z.string().refine((p) => path.isAbsolute(p)),
  secrets: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.null()).optional(),
  setup: z.string().min(1),
  run: z.string().min(1),
});

const launcher = launcherFor('skypilot');
const root = tempDir('sky-launcher');
let record = '';
let endpoint: Server;
let endpointPort = 0;

before(async () => {
  const bin = path.join(root, 'bin');
  fakeTool(bin, 'sky', 'fake-sky.mjs');
  fakeTool(bin, 'rsync', 'fake-rsync.mjs');
  process.env.PATH = `${bin}${path.delimiter}${process.env.PATH}`;
  endpoint = createServer((_req, res) => res.end('{"object":"list","data":[]}'));
  await new Promise<void>((r) => endpoint.listen(0, '127.0.0.1', r));
  endpointPort = (endpoint.address() as { port: number }).port;
});
after(() => {
  endpoint.close();
  rmSync(root, { recursive: true, force: true });
});

let n = 0;
beforeEach(() => {
  n++;
  record = path.join(root, `record-${n}.jsonl`);
  process.env.FAKE_RECORD = record;
  process.env.FAKE_STATE = path.join(root, `cluster-${n}`);
  delete process.env.FAKE_SKY_LOGS_EXIT;
  delete process.env.FAKE_SKY_QUEUE_STATUS;
});

const target = { kind: 'skypilot', cloud: 'aws', region: 'us-east-1', image: 'docker:pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime', useSpot: true, setup: 'echo extra setup', gpus: 1, gpuType: 'H100' };

test('skypilot: plan = what launch runs; the task YAML is valid and secret-free; the secret reaches sky through its environment only; follow, fetch, cancel, endpoint', async () => {
  const job = makeJob(root, { id: 'sft-a-1', target, secrets: { [SECRET_NAME]: SECRET }, resources: { gpus: 1, gpuType: 'H100', cpus: 8, memoryGb: 64 } });
  const plan = launcher.plan(job);
  const taskFile = path.join(job.jobDir, 'sky-task.yaml');
  assert.deepEqual(plan.steps.map((s) => s.argv), [
    ['sky', 'launch', '-c', 'rl-sft-a-1', taskFile, '--yes', '--detach-run', '--idle-minutes-to-autostop', '60', '--down', '--secret', SECRET_NAME],
  ]);
  assert.deepEqual(plan.steps[0]!.env, [SECRET_NAME]);
  assert.equal(plan.files[0]!.path, taskFile);

  const logs: string[] = [];
  const handle = await launcher.launch(job, (l) => logs.push(l));
  assert.deepEqual(handle, { target: 'skypilot', cluster: 'rl-sft-a-1', jobId: 7 });
  assert.ok(logs.includes('⚙︎ Job submitted, ID: 7'), 'sky launch\'s output is logged, colours removed');
  const launched = readRecord(record);
  assert.deepEqual(launched.map((r) => r.argv), plan.steps.map((s) => s.argv), 'the dry run is exact');
  assert.deepEqual(launched[0]!.envHashes, { [SECRET_NAME]: SECRET_SHA256 }, 'sky got the secret in its environment');

  const written = readFileSync(taskFile, 'utf8');
  assert.equal(written, plan.files[0]!.content);
  const task = SkyTaskSchema.parse(parse(written));
  assert.deepEqual(task.resources, { accelerators: 'H100:1', infra: 'aws/us-east-1', use_spot: true, image_id: 'docker:pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime', cpus: '8+', memory: '64+' });
  assert.equal(task.workdir, job.bundleDir);
  assert.deepEqual(task.secrets, { [SECRET_NAME]: null });
  assert.equal(task.setup, 'echo extra setup\npython3 -m pip install --quiet -e "./python-trainer[hf]"');
  assert.match(task.run, /^export PYTHONPATH=.*\nexec 'python3' 'job\.py' '0'$/);

  const lines: string[] = [];
  assert.deepEqual(await launcher.follow(handle, { onLine: (l) => lines.push(l) }, job), { state: 'succeeded', exitCode: 0 });
  assert.ok(lines.includes('step 1') && lines.includes('@rollout-trainer {"event":"done","result":{}}'), 'job lines without SkyPilot\'s "(task, pid=N)" prefix');
  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')), { status: 'succeeded' });
  await launcher.cancel(handle, job);
  process.env.FAKE_ENDPOINT = `127.0.0.1:${endpointPort}`;
  const fwd = await launcher.forwardPort(handle, job, 8000);
  assert.equal(fwd.url, `http://127.0.0.1:${endpointPort}/v1`);
  assert.equal((await fetch(`http://127.0.0.1:${endpointPort}/v1/models`)).status, 200);
  fwd.close();

  const all = readRecord(record);
  assert.deepEqual(all.slice(1).map((r) => r.argv), [
    ['sky', 'logs', '--follow', 'rl-sft-a-1', '7'],
    ['rsync', '-Pavz', 'rl-sft-a-1:~/sky_workdir/out/', `${dest}/`],
    ['sky', 'down', '-y', 'rl-sft-a-1'],
    ['sky', 'cancel', '-y', 'rl-sft-a-1', '7'],
    ['sky', 'down', '-y', 'rl-sft-a-1'],
    ['sky', 'status', '--endpoint', '8000', 'rl-sft-a-1'],
  ]);
  assert.ok(all.every((r) => !r.argv.join(' ').includes(SECRET)), 'the secret is in no argv');
  assertNotInFiles(SECRET, job.jobDir, job.bundleDir);
});

test('skypilot: sky logs\' exit code says how the job ended; otherwise sky queue does', async () => {
  const job = makeJob(root, { id: 'sft-b-1', target: { ...target, cluster: 'shared', down: false } });
  const handle: JobHandle = { target: 'skypilot', cluster: 'shared', jobId: 7 };
  process.env.FAKE_SKY_LOGS_EXIT = '100';
  const failed = await launcher.follow(handle, { onLine: () => undefined }, job);
  assert.equal(failed.state, 'failed');
  assert.match(failed.detail ?? '', /failed on shared/);
  process.env.FAKE_SKY_LOGS_EXIT = '103';
  assert.match((await launcher.follow(handle, { onLine: () => undefined }, job)).detail ?? '', /cancelled/);
  process.env.FAKE_SKY_LOGS_EXIT = '1';
  process.env.FAKE_SKY_QUEUE_STATUS = 'SUCCEEDED';
  assert.deepEqual(await launcher.follow(handle, { onLine: () => undefined }, job), { state: 'succeeded', exitCode: 0 });
  process.env.FAKE_SKY_QUEUE_STATUS = 'RUNNING';
  assert.match((await launcher.follow(handle, { onLine: () => undefined }, job)).detail ?? '', /while the job is RUNNING on shared .* reattach/);
  assert.deepEqual(readRecord(record).map((r) => r.argv.slice(0, 2)), [['sky', 'logs'], ['sky', 'logs'], ['sky', 'logs'], ['sky', 'queue'], ['sky', 'logs'], ['sky', 'queue']]);
  // A target that keeps its cluster: no sky down, on fetch or cancel.
  await launcher.cancel(handle, job);
  assert.deepEqual(readRecord(record).at(-1)!.argv, ['sky', 'cancel', '-y', 'shared', '7']);
  const ac = new AbortController();
  ac.abort();
  assert.deepEqual(await launcher.follow(handle, { onLine: () => undefined, signal: ac.signal }, job), { state: 'cancelled', exitCode: null });
});

test('skypilot: any GPU, a serve port, no secrets, autostop without down', () => {
  const job = makeJob(root, { id: 'serve-c-1', serve: true, target: { kind: 'skypilot', down: false, idleMinutesToAutostop: 30 }, resources: { gpus: 2 } });
  const plan = launcher.plan(job);
  assert.deepEqual(plan.steps[0]!.argv.slice(6), ['--detach-run', '--idle-minutes-to-autostop', '30']);
  assert.equal(plan.steps[0]!.env, undefined);
  const task = SkyTaskSchema.parse(parse(plan.files[0]!.content));
  assert.equal(task.secrets, undefined);
  assert.deepEqual(task.resources.ports, [8000]);
  assert.ok(typeof task.resources.accelerators === 'object' && Object.values(task.resources.accelerators).every((c) => c === 2), 'any of the usual GPUs, two of them');
  const cpu = makeJob(root, { id: 'cpu-d-1', target: { kind: 'skypilot', gpus: 0 }, resources: { gpus: 0 } });
  assert.equal(SkyTaskSchema.parse(parse(launcher.plan(cpu).files[0]!.content)).resources.accelerators, undefined);
});

test('skypilot: output parsing — job id, queue status, log prefixes', () => {
  assert.equal(parseSkyJobId('\u001b[32m✓ Job submitted, ID: 12.\u001b[0m'), 12);
  assert.equal(parseSkyJobId('Job ID: 3\n├── To cancel the job: sky cancel c 3'), 3);
  assert.equal(parseSkyJobId('no id here'), null);
  const queue = 'ID  NAME  SUBMITTED  STARTED  DURATION  RESOURCES  STATUS  LOG\n2   -  1 min ago  1 min ago  5s  1x[CPU:1]  FAILED_SETUP  ~/sky_logs\n3   -  now  now  1s  1x[CPU:1]  RUNNING  ~/sky_logs';
  assert.equal(parseSkyQueueStatus(queue, 2), 'FAILED_SETUP');
  assert.equal(parseSkyQueueStatus(queue, null), 'RUNNING');
  assert.equal(parseSkyQueueStatus(queue, 9), null);
  assert.equal(cleanSkyLine('(task, pid=123) @rollout-trainer {}'), '@rollout-trainer {}');
  assert.equal(cleanSkyLine('(worker1, rank=1, pid=9) x'), 'x');
  assert.equal(cleanSkyLine('plain (pid=1) text'), 'plain (pid=1) text');
});
