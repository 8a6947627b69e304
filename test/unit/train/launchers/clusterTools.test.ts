import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { TargetSchema } from '../../../../src/core/config/trainingSchema';
import type { PreparedJob } from '../../../../src/core/train/jobs/launcher';
import { launcherFor } from '../../../../src/core/train/jobs/launchers';
import { makeJob, SECRET, SECRET_NAME, tempDir } from './helpers';

/**
 * The launchers' output checked by the clusters' own tools, from PyPI (test/clusters/requirements.txt, installed
 * in .venv-clusters/ by scripts/setupClusterVenv.sh): the `sky launch` command line and its task YAML read by
 * SkyPilot's CLI and validated by its Task (test/clusters/validate_sky.py), the Kubernetes manifests walked against
 * the API types of the kubernetes client (test/clusters/validate_k8s.py). One target config per option of each
 * target schema; a corrupted copy of each kind proves the checkers reject what is wrong. ROLLOUT_LAB_CLUSTER_PYTHON
 * names another interpreter that has the same packages.
 */

const REPO = path.resolve(__dirname, '../../../..');
const PYTHON = process.env.ROLLOUT_LAB_CLUSTER_PYTHON ?? path.join(REPO, '.venv-clusters', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const CHECKERS = path.join(REPO, 'test', 'clusters');

function missingVenv(): string | null {
  if (!existsSync(PYTHON)) return `the cluster tools' venv is missing (${PYTHON}): run bash scripts/setupClusterVenv.sh`;
  // Found, not imported: importing sky writes ~/.sky.
  const probe = spawnSync(PYTHON, ['-c', 'import importlib.util as u, sys; sys.exit(0 if u.find_spec("sky") and u.find_spec("kubernetes") else "no skypilot or kubernetes")'], { encoding: 'utf8' });
  return probe.status === 0 ? null : `${PYTHON} lacks skypilot or kubernetes: run bash scripts/setupClusterVenv.sh (${probe.stderr.trim().split('\n').pop()})`;
}
const missing = missingVenv();
if (missing && process.env.CI) throw new Error(missing);
if (missing) console.log(`# skipping the cluster tools' checks: ${missing}`);
const skip = missing ?? false;

const root = tempDir('cluster-tools');
after(() => rmSync(root, { recursive: true, force: true }));

interface Case {
  id: string;
  target: Record<string, unknown>;
  serve?: boolean;
  secrets?: Record<string, string>;
}

/** A job for the target, its resources taken from the target as a real draft takes them (jobDraft.ts). */
function jobFor(c: Case): PreparedJob {
  const t = TargetSchema.parse(c.target);
  const resources = 'gpus' in t ? { gpus: t.gpus, gpuType: t.gpuType ?? null, cpus: t.cpus ?? null, memoryGb: t.memoryGb ?? null } : {};
  return makeJob(root, { id: c.id, target: c.target, serve: c.serve, secrets: c.secrets, resources });
}

function runChecker(script: string, args: string[], env: NodeJS.ProcessEnv = process.env): Array<Record<string, unknown>> {
  const r = spawnSync(PYTHON, [path.join(CHECKERS, script), ...args], { encoding: 'utf8', env });
  assert.ok(r.status === 0 || r.status === 1, `${script} failed to run (status ${r.status}): ${r.stderr}`);
  const verdicts = r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.equal(r.status, verdicts.every((v) => v.accepted) ? 0 : 1, 'the exit status says whether all were accepted');
  return verdicts;
}

// ---- SkyPilot ----

interface SkyResources {
  cloud: string | null;
  region: string | null;
  accelerators: Record<string, number> | null;
  use_spot: boolean;
  image_id: Record<string, string> | null;
  cpus: string | null;
  memory: string | null;
  disk_size: number;
  ports: string[] | null;
}
interface SkyTaskSeen {
  name: string;
  workdir: string;
  setup: string;
  run: string;
  envs: Record<string, string>;
  secrets: string[];
  file_mounts: unknown;
  num_nodes: number;
  resources: SkyResources[];
  launch: { cluster_name: string; idle_minutes_to_autostop: number | null; down: boolean; need_confirmation: boolean; dryrun: boolean; detach_run: boolean; entrypoint: string[] };
}

const SKY_CASES: Case[] = [
  {
    // Every field: cloud and region, a docker image, spot, extra setup, a GPU type, CPUs, memory, two secrets.
    id: 'sft-full-1',
    target: { kind: 'skypilot', cloud: 'aws', region: 'us-east-1', image: 'docker:pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime', useSpot: true, setup: 'sudo apt-get update -q\necho extra setup', gpus: 1, gpuType: 'H100', cpus: 8, memoryGb: 64 },
    secrets: { [SECRET_NAME]: SECRET, HF_TOKEN: 'hf_other_value' },
  },
  // A serve job (its port opened) on any of the usual GPUs, on a named cluster that stays up, with autostop.
  { id: 'serve-any-1', serve: true, target: { kind: 'skypilot', cluster: 'shared-box', down: false, idleMinutesToAutostop: 30, gpus: 2 } },
  // A region on any cloud, no GPU, a fractional memory size.
  { id: 'grpo-region-1', target: { kind: 'skypilot', region: 'europe-west4', gpus: 0, memoryGb: 7.5 } },
  // SkyPilot's Kubernetes cloud, four GPUs of a type, down with its own autostop.
  { id: 'sft-k8s-1', target: { kind: 'skypilot', cloud: 'kubernetes', gpuType: 'A100-80GB', gpus: 4, idleMinutesToAutostop: 10 } },
  // A serve job on GCP with a machine image (not docker) and a secret.
  { id: 'serve-gcp-1', serve: true, target: { kind: 'skypilot', cloud: 'gcp', region: 'us-central1', image: 'projects/deeplearning-platform-release/global/images/common-cu124-v20241118-debian-11', gpuType: 'L4', gpus: 1 }, secrets: { [SECRET_NAME]: SECRET } },
];

/** The job's files written where the plan says, its `sky launch` argv, and the secrets' values for its environment. */
function skyLaunch(c: Case): { job: PreparedJob; argv: string[]; taskFile: string; yaml: Record<string, unknown> } {
  const job = jobFor(c);
  const plan = launcherFor('skypilot').plan(job);
  for (const f of plan.files) {
    mkdirSync(path.dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content);
  }
  const launch = plan.steps.find((s) => s.argv[0] === 'sky' && s.argv[1] === 'launch');
  assert.ok(launch, 'the plan launches with sky launch');
  return { job, argv: launch.argv, taskFile: plan.files[0]!.path, yaml: parse(plan.files[0]!.content) as Record<string, unknown> };
}

test('skypilot: SkyPilot\'s own CLI reads every target config\'s `sky launch` and task YAML, and its Task validates them, as the launcher means them', { skip }, () => {
  const launches = SKY_CASES.map((c) => ({ c, ...skyLaunch(c) }));
  const cases = launches.map((l) => ({ argv: l.argv, env: l.c.secrets ?? {} }));
  // A corrupted copy of the first: an unknown resources field, a string for a boolean; and its launch without the secret set.
  const first = launches[0]!;
  const corrupt = (name: string, change: (y: Record<string, any>) => void): string => {
    const y = structuredClone(first.yaml) as Record<string, any>;
    change(y);
    const file = path.join(root, `corrupt-${name}.yaml`);
    writeFileSync(file, stringify(y));
    return file;
  };
  const withFile = (file: string): string[] => first.argv.map((a) => (a === first.taskFile ? file : a));
  // Beyond the schema, SkyPilot's resource rules: a machine image (not docker:) belongs to a cloud, which this target does not name.
  const noCloud = skyLaunch({ id: 'sft-ami-1', target: { kind: 'skypilot', image: 'ami-0123456789abcdef0', gpuType: 'L4' } });
  const negatives = [
    { argv: noCloud.argv, env: {}, error: /Cloud must be specified when image_id is provided/ },
    { argv: withFile(corrupt('unknown-field', (y) => (y.resources.gpu = 'H100'))), env: first.c.secrets!, error: /unsupported field 'gpu'/ },
    { argv: withFile(corrupt('wrong-type', (y) => (y.resources.use_spot = 'always'))), env: first.c.secrets!, error: /'always' is not of type 'boolean'/ },
    { argv: first.argv, env: { HF_TOKEN: 'hf_other_value' }, error: new RegExp(`${SECRET_NAME} is not set in local environment`) },
  ];
  const casesFile = path.join(root, 'sky-cases.json');
  writeFileSync(casesFile, JSON.stringify([...cases, ...negatives.map(({ argv, env }) => ({ argv, env }))]));
  // SkyPilot keeps its state in ~/.sky: a HOME of the test's own. No secret of the test's is in this environment.
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: path.join(root, 'home') };
  for (const name of [SECRET_NAME, 'HF_TOKEN']) delete env[name];
  const verdicts = runChecker('validate_sky.py', ['--cases', casesFile], env);
  assert.equal(verdicts.length, cases.length + negatives.length);

  launches.forEach(({ c, job, taskFile, yaml }, i) => {
    const v = verdicts[i]!;
    assert.equal(v.accepted, true, `${c.id}: SkyPilot rejects it: ${String(v.error)}`);
    const seen = v.task as SkyTaskSeen;
    const t = TargetSchema.parse(c.target);
    if (t.kind !== 'skypilot') throw new Error('a skypilot target');
    assert.equal(seen.name, job.spec.id);
    assert.equal(seen.workdir, job.bundleDir, `${c.id}: the bundle is the workdir`);
    assert.equal(seen.file_mounts, null);
    assert.equal(seen.num_nodes, 1);
    assert.equal(seen.setup, yaml.setup);
    if (t.setup) assert.ok(seen.setup.startsWith(`${t.setup}\n`), `${c.id}: the target's setup runs first`);
    assert.match(seen.setup, /python3 -m pip install --quiet -e "\.\/python-trainer\[hf\]"$/);
    assert.equal(seen.run, yaml.run);
    assert.match(seen.run, /\nexec 'python3' 'job\.py' '0'$/);
    assert.deepEqual(seen.envs, {}, `${c.id}: no environment variables`);
    assert.deepEqual(seen.secrets, Object.keys(c.secrets ?? {}).sort(), `${c.id}: the secrets are SkyPilot secrets, filled from sky's environment`);

    const anyGpu = t.gpus > 0 && !t.gpuType;
    const offered = anyGpu ? Object.keys((yaml.resources as { accelerators: Record<string, number> }).accelerators) : [];
    assert.equal(seen.resources.length, anyGpu ? offered.length : 1, `${c.id}: one resources choice per GPU type offered`);
    if (anyGpu) assert.ok(offered.length > 1);
    seen.resources.forEach((r, k) => {
      const where = `${c.id} resources[${k}]`;
      assert.equal(r.cloud, t.cloud ?? null, `${where}: cloud`);
      assert.equal(r.region, t.region ?? null, `${where}: region`);
      const accelerators = t.gpus === 0 ? null : { [anyGpu ? offered[k]! : t.gpuType!]: t.gpus };
      if (anyGpu) assert.deepEqual(Object.values(r.accelerators ?? {}), [t.gpus], `${where}: ${t.gpus} GPUs`);
      else assert.deepEqual(r.accelerators, accelerators, `${where}: accelerators`);
      assert.equal(r.use_spot, t.useSpot, `${where}: spot`);
      assert.deepEqual(r.image_id, t.image ? { [t.region ?? 'null']: t.image } : null, `${where}: image`);
      assert.equal(r.cpus, t.cpus ? `${t.cpus}+` : null, `${where}: CPUs`);
      assert.equal(r.memory, t.memoryGb ? `${t.memoryGb}+` : null, `${where}: memory`);
      assert.deepEqual(r.ports, c.serve ? [String(job.spec.serve!.port)] : null, `${where}: the served port opened`);
      assert.equal(typeof r.disk_size, 'number', `${where}: SkyPilot's default disk`);
    });
    if (anyGpu) assert.deepEqual(seen.resources.map((r) => Object.keys(r.accelerators!)[0]).sort(), [...offered].sort(), `${c.id}: any of the offered GPUs`);
    assert.deepEqual(seen.launch, {
      cluster_name: t.cluster ?? `rl-${job.spec.id}`,
      idle_minutes_to_autostop: t.idleMinutesToAutostop ?? (t.down ? 60 : null),
      down: t.down,
      need_confirmation: false,
      dryrun: false,
      detach_run: true,
      entrypoint: [taskFile],
    }, `${c.id}: the launch options`);
  });

  negatives.forEach((n, i) => {
    const v = verdicts[cases.length + i]!;
    assert.equal(v.accepted, false, `negative ${i}: SkyPilot accepts what it must not`);
    assert.match(String(v.error), n.error);
  });
});

// ---- Kubernetes ----

const K8S_CASES: Case[] = [
  // Every field: a context and namespace, a GPU, CPUs, memory, a node selector, a service account, a secret.
  {
    id: 'sft-gpu-20261202-1',
    target: { kind: 'k8s', context: 'gpu-cluster', namespace: 'ml', gpus: 1, cpus: 4, memoryGb: 32, nodeSelector: { 'cloud.google.com/gke-accelerator': 'nvidia-l4' }, serviceAccount: 'trainer' },
    secrets: { [SECRET_NAME]: SECRET },
  },
  // A serve job with nothing asked for: the Service, no resources, the defaults.
  { id: 'serve-cpu-1', serve: true, target: { kind: 'k8s', gpus: 0 } },
  // Another image and GPU resource name, eight GPUs, a fractional memory size.
  { id: 'grpo-amd-1', target: { kind: 'k8s', image: 'rocm/pytorch:rocm6.2_ubuntu22.04_py3.10_pytorch_release_2.3.0', gpuResource: 'amd.com/gpu', gpus: 8, memoryGb: 1.5 } },
  // A serve job on GPUs, with two secrets.
  { id: 'serve-gpu-1', serve: true, target: { kind: 'k8s', gpus: 2, cpus: 16 }, secrets: { [SECRET_NAME]: SECRET, HF_TOKEN: 'hf_other_value' } },
];

test('k8s: every target config\'s Job, Service and Secret are valid objects of the Kubernetes API types (the kubernetes client\'s models)', { skip }, () => {
  const files: Array<{ file: string; kinds: string[]; id: string }> = [];
  const jobs: Record<string, Record<string, any>> = {};
  for (const c of K8S_CASES) {
    const job = jobFor(c);
    const plan = launcherFor('k8s').plan(job);
    const manifests = plan.files.find((f) => f.path.endsWith('k8s.yaml'));
    assert.ok(manifests, 'the plan writes k8s.yaml');
    const file = path.join(root, `${c.id}.k8s.yaml`);
    writeFileSync(file, manifests.content);
    files.push({ file, id: c.id, kinds: c.serve ? ['Job', 'Service'] : ['Job'] });
    jobs[c.id] = parseAllDocuments(manifests.content)[0]!.toJSON() as Record<string, any>;
    const secret = plan.steps.find((s) => s.stdin?.includes('kind: Secret'));
    assert.equal(Boolean(secret), Boolean(c.secrets), `${c.id}: a Secret exactly when there are secrets`);
    if (secret) {
      const secretFile = path.join(root, `${c.id}.secret.yaml`);
      writeFileSync(secretFile, secret.stdin!);
      files.push({ file: secretFile, id: `${c.id}-env`, kinds: ['Secret'] });
    }
  }

  // Corrupted copies: a misspelled field, a string for an int, a required field left out, a key of the wrong object.
  const corrupt = (name: string, id: string, change: (job: Record<string, any>) => void): string => {
    const doc = structuredClone(jobs[id]!);
    change(doc);
    const file = path.join(root, `corrupt-${name}.yaml`);
    writeFileSync(file, stringify(doc));
    return file;
  };
  const negatives = [
    {
      file: corrupt('misspelled', 'sft-gpu-20261202-1', (j) => {
        j.spec.template.spec.restartPolcy = j.spec.template.spec.restartPolicy;
        delete j.spec.template.spec.restartPolicy;
      }),
      error: /#0\.spec\.template\.spec\.restartPolcy: V1PodSpec has no field "restartPolcy"/,
    },
    { file: corrupt('string-for-int', 'serve-cpu-1', (j) => (j.spec.template.spec.containers[0].ports[0].containerPort = '8000')), error: /#0\.spec\.template\.spec\.containers\[0\]\.ports\[0\]\.containerPort: int is wanted, not "8000"/ },
    { file: corrupt('required-missing', 'grpo-amd-1', (j) => delete j.spec.template.spec.containers), error: /#0\.spec\.template\.spec\.containers: V1PodSpec requires it/ },
    {
      file: corrupt('wrong-object', 'serve-gpu-1', (j) => (j.spec.template.spec.containers[0].volumeMounts[0].readonly = true)),
      error: /volumeMounts\[0\]\.readonly: V1VolumeMount has no field "readonly"/,
    },
    { file: corrupt('snake-case', 'serve-gpu-1', (j) => (j.spec.backoff_limit = 0)), error: /#0\.spec\.backoff_limit: V1JobSpec has no field "backoff_limit"/ },
  ];

  const verdicts = runChecker('validate_k8s.py', [...files.map((f) => f.file), ...negatives.map((n) => n.file)]);
  assert.equal(verdicts.length, files.length + negatives.length);
  files.forEach((f, i) => {
    const v = verdicts[i]!;
    assert.equal(v.file, f.file);
    assert.equal(v.accepted, true, `${f.file}: ${JSON.stringify(v.errors)}`);
    const objects = v.objects as Array<{ kind: string; name: string; model: string; apiVersion: string }>;
    assert.deepEqual(objects.map((o) => o.kind), f.kinds);
    assert.deepEqual(objects.map((o) => o.model), f.kinds.map((k) => `V1${k}`), 'each checked against its model');
    for (const o of objects) assert.equal(o.name, f.id);
  });
  negatives.forEach((n, i) => {
    const v = verdicts[files.length + i]!;
    assert.equal(v.accepted, false, `${n.file}: the checker accepts what the API would not`);
    assert.ok((v.errors as string[]).some((e) => n.error.test(e)), `${n.file}: ${JSON.stringify(v.errors)} names the fault`);
  });
});
