import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { z } from 'zod';
import { TargetSchema } from '../../../../src/core/config/trainingSchema';
import type { JobHandle } from '../../../../src/core/train/jobs/launcher';
import { LineSplitter } from '../../../../src/core/train/jobs/launchers/exec';
import { jobManifest } from '../../../../src/core/train/jobs/launchers/k8sManifests';
import { launcherFor } from '../../../../src/core/train/jobs/launchers';
import { fakeTool, readRecord, recordingShim } from '../../../fakes/commandLineTools';
import { assertNotInFiles, Lines, makeJob, SECRET, SECRET_NAME, tempDir, which } from './helpers';

const DNS1123 = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const labels = z.record(z.string(), z.string());
const meta = z.object({ name: z.string().max(63).regex(DNS1123), labels: labels.optional() });
const mount = z.object({ name: z.string(), mountPath: z.string().startsWith('/') });
const quantity = z.string().regex(/^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti)?$/);
const container = z.strictObject({
  name: z.string().regex(DNS1123),
  image: z.string().min(1),
  command: z.array(z.string()).min(1),
  workingDir: z.string().optional(),
  volumeMounts: z.array(mount),
  resources: z.strictObject({ limits: z.record(z.string(), quantity).optional(), requests: z.record(z.string(), quantity).optional() }).optional(),
  envFrom: z.array(z.strictObject({ secretRef: z.strictObject({ name: z.string().regex(DNS1123) }) })).optional(),
  ports: z.array(z.strictObject({ name: z.string(), containerPort: z.number().int().min(1).max(65535) })).optional(),
});
const JobSchema = z.strictObject({
  apiVersion: z.literal('batch/v1'),
  kind: z.literal('Job'),
  metadata: meta,
  spec: z.strictObject({
    backoffLimit: z.number().int().min(0),
    ttlSecondsAfterFinished: z.number().int().positive().optional(),
    template: z.strictObject({
      metadata: z.object({ labels }),
      spec: z.strictObject({
        restartPolicy: z.enum(['Never', 'OnFailure']),
        serviceAccountName: z.string().optional(),
        nodeSelector: labels.optional(),
        volumes: z.array(z.object({ name: z.string(), emptyDir: z.object({}) })),
        initContainers: z.array(container).optional(),
        containers: z.array(container).min(1),
      }),
    }),
  }),
});
const ServiceSchema = z.strictObject({
  apiVersion: z.literal('v1'),
  kind: z.literal('Service'),
  metadata: meta,
  spec: z.strictObject({ selector: labels, ports: z.array(z.strictObject({ name: z.string(), port: z.number().int(), targetPort: z.number().int() })).min(1) }),
});
const SecretSchema = z.strictObject({ apiVersion: z.literal('v1'), kind: z.literal('Secret'), metadata: meta, type: z.literal('Opaque'), stringData: z.record(z.string(), z.string()) });

const launcher = launcherFor('k8s');
const root = tempDir('k8s-launcher');
let record = '';
let pod = '';

before(() => {
  const bin = path.join(root, 'bin');
  fakeTool(bin, 'kubectl', 'fake-kubectl.mjs');
  process.env.FAKE_REAL_TAR = which('tar')!;
  recordingShim(bin, 'tar', process.env.FAKE_REAL_TAR);
  process.env.PATH = `${bin}${path.delimiter}${process.env.PATH}`;
});
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
beforeEach(() => {
  n++;
  record = path.join(root, `record-${n}.jsonl`);
  pod = path.join(root, `pod-${n}`);
  process.env.FAKE_RECORD = record;
  process.env.FAKE_STATE = pod;
  process.env.FAKE_LOG_LINES = JSON.stringify(['step 1', '@rollout-trainer {"event":"done","result":{}}']);
  for (const k of ['FAKE_NO_MARK', 'FAKE_EXIT', 'FAKE_JOB_CONDITIONS']) delete process.env[k];
});

const target = { kind: 'k8s', context: 'gpu-cluster', namespace: 'ml', gpus: 1, nodeSelector: { 'cloud.google.com/gke-accelerator': 'nvidia-l4' }, serviceAccount: 'trainer' };
const ns = ['--context', 'gpu-cluster', '--namespace', 'ml'];

test('k8s: plan = what launch runs; manifests valid and secret-free; the Secret goes on stdin; the bundle lands in the pod; follow, fetch, cancel', async () => {
  const id = 'sft-a-20261124-1';
  const job = makeJob(root, { id, target, secrets: { [SECRET_NAME]: SECRET }, resources: { gpus: 1, cpus: 4, memoryGb: 32 } });
  const manifestFile = path.join(job.jobDir, 'k8s.yaml');
  const plan = launcher.plan(job);
  assert.deepEqual(plan.steps.map((s) => s.argv), [
    ['kubectl', ...ns, 'apply', '-f', '-'],
    ['kubectl', ...ns, 'apply', '-f', manifestFile],
    ['kubectl', ...ns, 'exec', `job/${id}`, '-c', 'wait-for-bundle', '--', 'true'],
    ['tar', '-C', job.bundleDir, '-cf', '-', '.'],
    ['kubectl', ...ns, 'exec', '-i', `job/${id}`, '-c', 'wait-for-bundle', '--', 'tar', '-xf', '-', '-C', '/workspace'],
    ['kubectl', ...ns, 'exec', `job/${id}`, '-c', 'wait-for-bundle', '--', 'touch', '/workspace/.bundle-ready'],
  ]);
  const planned = SecretSchema.parse(parse(plan.steps[0]!.stdin!));
  assert.deepEqual(planned.stringData, { [SECRET_NAME]: '***' }, 'the plan masks the Secret');
  assert.ok(!JSON.stringify(plan).includes(SECRET));

  const handle = await launcher.launch(job);
  assert.deepEqual(handle, { target: 'k8s', namespace: 'ml', context: 'gpu-cluster', job: id, service: null });
  const launched = readRecord(record);
  for (const tool of ['kubectl', 'tar']) {
    assert.deepEqual(launched.filter((r) => r.tool === tool).map((r) => r.argv), plan.steps.filter((s) => s.argv[0] === tool).map((s) => s.argv), `${tool}: the dry run is exact`);
  }
  const secret = SecretSchema.parse(parse(launched[0]!.stdin!));
  assert.deepEqual(secret.stringData, { [SECRET_NAME]: SECRET }, 'the secret reached kubectl on stdin');
  assert.equal(secret.metadata.name, `${id}-env`);
  assert.ok(existsSync(path.join(pod, 'workspace', 'job.yaml')) && existsSync(path.join(pod, 'workspace', 'python-trainer')), 'the bundle is in the pod');
  assert.ok(existsSync(path.join(pod, 'workspace', '.bundle-ready')));

  const written = readFileSync(manifestFile, 'utf8');
  assert.equal(written, plan.files[0]!.content);
  const docs = parseAllDocuments(written).map((d) => d.toJSON() as unknown);
  assert.equal(docs.length, 1, 'a training job has no Service');
  const manifest = JobSchema.parse(docs[0]);
  assert.equal(manifest.metadata.name, id);
  assert.equal(manifest.spec.backoffLimit, 0);
  const podSpec = manifest.spec.template.spec;
  assert.equal(podSpec.restartPolicy, 'Never');
  assert.equal(podSpec.serviceAccountName, 'trainer');
  assert.deepEqual(podSpec.nodeSelector, target.nodeSelector);
  assert.deepEqual(manifest.spec.template.metadata.labels, { 'app.kubernetes.io/name': 'rollout-lab-trainer', 'rollout-lab/job': id });
  const [init] = podSpec.initContainers!;
  const [trainer] = podSpec.containers;
  assert.equal(init!.name, 'wait-for-bundle');
  assert.equal(trainer!.image, 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime');
  assert.deepEqual(trainer!.command.slice(0, 2), ['sh', '-c']);
  assert.deepEqual(trainer!.command.slice(3), ['rollout-lab-job', 'python3', 'job.py', '0'], 'the job\'s argv as the constant script\'s arguments');
  assert.deepEqual(trainer!.resources, { limits: { 'nvidia.com/gpu': '1' }, requests: { cpu: '4', memory: '32Gi' } });
  assert.deepEqual(trainer!.envFrom, [{ secretRef: { name: `${id}-env` } }]);

  // The container prints its status, then waits for the fetch: follow stops the stream at the sentinel.
  mkdirSync(path.join(pod, 'workspace', 'out'), { recursive: true });
  writeFileSync(path.join(pod, 'workspace', 'out', 'result.json'), '{"status":"succeeded"}');
  const lines: string[] = [];
  assert.deepEqual(await launcher.follow(handle, { onLine: (l) => lines.push(l) }, job), { state: 'succeeded', exitCode: 0 });
  assert.deepEqual(lines, ['step 1', '@rollout-trainer {"event":"done","result":{}}']);
  const dest = path.join(job.jobDir, 'out');
  await launcher.fetchOutputs(handle, job, dest);
  assert.deepEqual(JSON.parse(readFileSync(path.join(dest, 'result.json'), 'utf8')), { status: 'succeeded' });
  assert.ok(existsSync(path.join(pod, 'workspace', '.fetched')), 'the container may end');
  await launcher.cancel(handle, job);

  const rest = readRecord(record).slice(launched.length);
  assert.deepEqual(rest.filter((r) => r.tool === 'kubectl').map((r) => r.argv), [
    ['kubectl', ...ns, 'logs', '-f', `job/${id}`, '-c', 'trainer'],
    ['kubectl', ...ns, 'exec', `job/${id}`, '-c', 'trainer', '--', 'tar', '-cf', '-', '-C', '/workspace/out', '.'],
    ['kubectl', ...ns, 'exec', `job/${id}`, '-c', 'trainer', '--', 'touch', '/workspace/.fetched'],
    ['kubectl', ...ns, 'delete', 'secret', `${id}-env`, '--ignore-not-found'],
    ['kubectl', ...ns, 'delete', 'job', id, '--ignore-not-found'],
    ['kubectl', ...ns, 'delete', 'secret', `${id}-env`, '--ignore-not-found'],
  ]);
  assert.deepEqual(rest.filter((r) => r.tool === 'tar').map((r) => r.argv), [['tar', '-xf', '-', '-C', dest]]);
  assert.ok(readRecord(record).every((r) => !r.argv.join(' ').includes(SECRET)), 'the secret is in no argv');
  assertNotInFiles(SECRET, job.jobDir, job.bundleDir);
});

test('k8s: a serve job gets a Service; port-forward says where it listens; cancel removes Job, Service and Secret', async () => {
  const id = 'serve-b-1';
  const job = makeJob(root, { id, serve: true, target: { kind: 'k8s', gpus: 0 }, resources: { gpus: 0 } });
  const plan = launcher.plan(job);
  assert.equal(plan.steps[0]!.argv.join(' '), `kubectl --namespace default apply -f ${path.join(job.jobDir, 'k8s.yaml')}`, 'no Secret step without secrets; no --context without one');
  const docs = parseAllDocuments(plan.files[0]!.content).map((d) => d.toJSON() as unknown);
  const manifest = JobSchema.parse(docs[0]);
  const service = ServiceSchema.parse(docs[1]);
  assert.deepEqual(service.spec, { selector: { 'rollout-lab/job': id }, ports: [{ name: 'serve', port: 8000, targetPort: 8000 }] });
  const trainer = manifest.spec.template.spec.containers[0]!;
  assert.deepEqual(trainer.ports, [{ name: 'serve', containerPort: 8000 }]);
  assert.equal(trainer.envFrom, undefined);
  assert.equal(trainer.resources, undefined, 'no GPU, CPU or memory asked for');

  const handle = await launcher.launch(job);
  assert.deepEqual(handle, { target: 'k8s', namespace: 'default', context: null, job: id, service: id });
  const fwd = await launcher.forwardPort(handle, job, 8000);
  const port = Number(new URL(fwd.url).port);
  assert.equal(fwd.url, `http://127.0.0.1:${port}/v1`);
  assert.deepEqual(await (await fetch(`http://127.0.0.1:${port}/`)).json(), { forwardedTo: 8000 });
  fwd.close();
  const again = await launcher.forwardPort(handle, job, 8000, port);
  assert.equal(again.url, fwd.url, 'a reattach gets the local port it asks for');
  again.close();
  await launcher.cancel(handle, job);
  const argvs = readRecord(record).map((r) => r.argv.join(' '));
  assert.ok(argvs.includes(`kubectl --namespace default port-forward --address 127.0.0.1 svc/${id} :8000`));
  assert.ok(argvs.includes(`kubectl --namespace default port-forward --address 127.0.0.1 svc/${id} ${port}:8000`));
  assert.deepEqual(argvs.slice(-3), [
    `kubectl --namespace default delete job ${id} --ignore-not-found`,
    `kubectl --namespace default delete service ${id} --ignore-not-found`,
    `kubectl --namespace default delete secret ${id}-env --ignore-not-found`,
  ]);
});

test('k8s: the sentinel\'s status, or the Job\'s conditions when the stream ends without one; an aborted follow leaves the job', async () => {
  const job = makeJob(root, { id: 'sft-c-1', target: { kind: 'k8s' } });
  const handle: JobHandle = { target: 'k8s', namespace: 'default', context: null, job: 'sft-c-1', service: null };
  process.env.FAKE_EXIT = '2';
  assert.deepEqual(await launcher.follow(handle, { onLine: () => undefined }, job), { state: 'failed', exitCode: 2 });
  delete process.env.FAKE_EXIT;
  process.env.FAKE_NO_MARK = '1';
  process.env.FAKE_JOB_CONDITIONS = 'FailureTarget Failed';
  const failed = await launcher.follow(handle, { onLine: () => undefined }, job);
  assert.equal(failed.state, 'failed');
  assert.match(failed.detail ?? '', /the Job sft-c-1 failed/);
  process.env.FAKE_JOB_CONDITIONS = 'SuccessCriteriaMet Complete';
  assert.deepEqual(await launcher.follow(handle, { onLine: () => undefined }, job), { state: 'succeeded', exitCode: 0 });
  const conditionArgv = readRecord(record).find((r) => r.argv.includes('get'))!.argv;
  assert.deepEqual(conditionArgv, ['kubectl', '--namespace', 'default', 'get', 'job', 'sft-c-1', '-o', 'jsonpath={.status.conditions[?(@.status=="True")].type}']);
  delete process.env.FAKE_NO_MARK;
  const ac = new AbortController();
  const lines: string[] = [];
  process.env.FAKE_LOG_LINES = JSON.stringify(['only line']);
  process.env.FAKE_EXIT = '0';
  ac.abort();
  assert.deepEqual(await launcher.follow(handle, { onLine: (l) => lines.push(l), signal: ac.signal }, job), { state: 'cancelled', exitCode: null });
  assert.ok(!readRecord(record).some((r) => r.argv.includes('delete')), 'nothing was stopped');
});

test('k8s: the containers\' constant scripts — init waits for the bundle; the trainer runs the job, prints the sentinel, waits for the fetch, ends with the job\'s status; a TERM reaches the job', async () => {
  const job = makeJob(root, { id: 'script-d-1', target: { kind: 'k8s' }, command: ['sh', '-c', 'echo "job line"; exit 3'] });
  const t = TargetSchema.parse({ kind: 'k8s' });
  if (t.kind !== 'k8s') throw new Error('k8s target');
  const ws = path.join(root, 'ws');
  mkdirSync(ws);
  // The scripts as the pod runs them, with /workspace here; a python3 without pip, so nothing is installed.
  const here = (argv: string[]): string[] => argv.map((a) => a.replaceAll('/workspace', ws));
  const bin = path.join(root, 'no-pip');
  mkdirSync(bin);
  writeFileSync(path.join(bin, 'python3'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` };
  const pod = jobManifest(job, t).spec.template.spec;
  const runIt = (argv: string[]): { child: ChildProcess; lines: Lines; exit: Promise<number | null> } => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ws, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines = new Lines();
    const split = new LineSplitter(lines.push);
    child.stdout!.on('data', (d: Buffer) => split.push(d));
    return { child, lines, exit: new Promise((r) => child.on('exit', (code, signal) => r(code ?? (signal ? -1 : null)))) };
  };

  const init = runIt(here(pod.initContainers![0]!.command));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(init.child.exitCode, null, 'init waits for the bundle');
  writeFileSync(path.join(ws, '.bundle-ready'), '');
  assert.equal(await init.exit, 0);

  const trainer = runIt(here(pod.containers[0]!.command));
  await trainer.lines.waitFor((l) => l.startsWith('@@rollout-lab-exit '));
  assert.deepEqual(trainer.lines.all, [
    'rollout-lab: installing python-trainer failed (see /tmp/pip-install.log in the pod); running it from source',
    'job line',
    '@@rollout-lab-exit 3',
  ]);
  assert.equal(trainer.child.exitCode, null, 'the container waits for the outputs to be fetched');
  writeFileSync(path.join(ws, '.fetched'), '');
  assert.equal(await trainer.exit, 3, 'then ends with the job\'s status');

  rmSync(path.join(ws, '.fetched'));
  const long = makeJob(root, { id: 'script-e-1', target: { kind: 'k8s' }, command: ['sh', '-c', 'echo started; exec sleep 60'] });
  const stopped = runIt(here(jobManifest(long, t).spec.template.spec.containers[0]!.command));
  await stopped.lines.waitFor((l) => l === 'started');
  stopped.child.kill('SIGTERM');
  assert.equal(await stopped.exit, 143, 'the job got the TERM; the container does not wait for a fetch then');
  assert.equal(stopped.lines.all.at(-1), '@@rollout-lab-exit 143');
});
