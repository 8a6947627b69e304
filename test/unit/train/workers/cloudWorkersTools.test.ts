import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { K8sWorkersSchema, SkypilotWorkersSchema } from '../../../../src/core/config/workersSchema';
import { workersJobManifest, workersJobName } from '../../../../src/core/train/workers/k8sWorkers';
import { skyWorkersLaunch, skyWorkersTask, skyWorkersTaskYaml, workersClusterName } from '../../../../src/core/train/workers/skypilotWorkers';
import type { WorkerRequest } from '../../../../src/core/train/workers/workerPlace';

/**
 * The workers' Indexed Job and SkyPilot task checked by the clusters' own tools (the kubernetes client's models,
 * SkyPilot's CLI and Task; test/clusters/, in .venv-clusters made by scripts/setupClusterVenv.sh), one case per
 * option of workers.k8s / workers.skypilot, the one-slice reruns too, and a corrupted copy each to show the
 * checkers refuse what is wrong.
 */

const REPO = path.resolve(__dirname, '../../../..');
const PYTHON = process.env.ROLLOUT_LAB_CLUSTER_PYTHON ?? path.join(REPO, '.venv-clusters', 'bin/python');
const missing = existsSync(PYTHON) ? null : `the cluster tools' venv is missing (${PYTHON}): run bash scripts/setupClusterVenv.sh`;
if (missing && process.env.CI) throw new Error(missing);
if (missing) console.log(`# skipping the cluster tools' checks of the workers: ${missing}`);
const skip = missing ?? false;

const root = mkdtempSync(path.join(tmpdir(), 'rl-cloud-tools-'));
after(() => rmSync(root, { recursive: true, force: true }));

const req: WorkerRequest = {
  command: 'run',
  runId: 'run-20261202T174724-a1b2c3',
  count: 4,
  cli: ['/usr/bin/node', '/opt/rl/dist/cli.js'],
  args: ['--concurrency', '8', '--model', 'gpt-4o-mini $(not-a-var)'],
  workspace: '/home/me/lab',
};

function check(script: string, args: string[]): Array<Record<string, any>> {
  const r = spawnSync(PYTHON, [path.join(REPO, 'test/clusters', script), ...args], { encoding: 'utf8', env: { ...process.env, HOME: path.join(root, 'home') } });
  assert.ok(r.status === 0 || r.status === 1, `${script} failed to run (${r.status}): ${r.stderr}`);
  return r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
}

const K8S_CASES: Array<{ id: string; cfg: Record<string, unknown>; shard?: number }> = [
  { id: 'minimal', cfg: { image: 'ghcr.io/example/rollout-lab:0.1', workspace: { claim: 'lab' } } },
  {
    id: 'every-field',
    cfg: {
      context: 'prod', namespace: 'evals', image: 'registry.example.com/rl:2', cli: ['node', '/app/dist/cli.js'],
      workspace: { claim: 'lab-share', mountPath: '/mnt/lab', subPath: 'teams/a' }, cpu: '500m', memory: '2Gi',
      nodeSelector: { 'kubernetes.io/arch': 'amd64' }, serviceAccount: 'rollouts', envFromSecrets: ['openai-key', 'judge-key'],
      env: { ROLLOUT_LAB_LOG: 'debug' }, retriesPerIndex: 0,
    },
  },
  { id: 'rerun-slice', cfg: { image: 'ghcr.io/example/rollout-lab:0.1', workspace: { claim: 'lab' } }, shard: 2 },
];

test('k8s workers: every config\'s Indexed Job is a valid batch/v1 Job of the Kubernetes API types', { skip }, () => {
  const files = K8S_CASES.map((c) => {
    const cfg = K8sWorkersSchema.parse(c.cfg);
    const doc = workersJobManifest(req, cfg, workersJobName(req.runId, 'x1'), c.shard) as Record<string, any>;
    const file = path.join(root, `${c.id}.yaml`);
    writeFileSync(file, stringify(doc, { lineWidth: 0 }));
    return { c, cfg, doc, file };
  });
  const bad = structuredClone(files[1]!.doc);
  bad.spec.backoffLimitPerIndex = '2';
  bad.spec.template.spec.containers[0].envFrom[0].secretRef.key = 'OPENAI_API_KEY';
  const badFile = path.join(root, 'corrupt.yaml');
  writeFileSync(badFile, stringify(bad));
  const verdicts = check('validate_k8s.py', [...files.map((f) => f.file), badFile]);
  files.forEach(({ c, cfg, doc }, i) => {
    assert.equal(verdicts[i]!.accepted, true, `${c.id}: ${JSON.stringify(verdicts[i]!.errors)}`);
    assert.deepEqual(verdicts[i]!.objects.map((o: { model: string }) => o.model), ['V1Job']);
    const spec = doc.spec;
    const n = c.shard === undefined ? req.count : 1;
    assert.deepEqual([spec.completionMode, spec.completions, spec.parallelism, spec.backoffLimitPerIndex], ['Indexed', n, n, cfg.retriesPerIndex]);
    const box = spec.template.spec.containers[0];
    assert.deepEqual(box.command, cfg.cli);
    assert.equal(box.args[4], c.shard === undefined ? '$(JOB_COMPLETION_INDEX)/4' : '2/4', `${c.id}: the slice`);
    assert.deepEqual(box.args.slice(5, 7), ['--workspace', cfg.workspace.mountPath], `${c.id}: the pod opens the workspace where the claim is mounted`);
    assert.ok(box.args.includes('gpt-4o-mini $$(not-a-var)'), `${c.id}: a literal $( is escaped from Kubernetes' expansion`);
    assert.equal(box.workingDir, cfg.workspace.mountPath);
    assert.deepEqual(spec.template.spec.volumes, [{ name: 'workspace', persistentVolumeClaim: { claimName: cfg.workspace.claim } }]);
    assert.deepEqual(box.envFrom ?? [], cfg.envFromSecrets.map((name) => ({ secretRef: { name } })));
    const coordinated = c.shard === undefined ? { ROLLOUT_LAB_COORDINATED: '1' } : {};
    assert.deepEqual(Object.fromEntries(box.env.map((e: { name: string; value: string }) => [e.name, e.value])), { ...cfg.env, ...coordinated }, `${c.id}: the Indexed Job's pods are followed by a coordinator, a rerun's pod is not`);
  });
  const v = verdicts.at(-1)!;
  assert.equal(v.accepted, false);
  assert.ok(v.errors.some((e: string) => /backoffLimitPerIndex: int is wanted, not "2"/.test(e)), JSON.stringify(v.errors));
  assert.ok(v.errors.some((e: string) => /secretRef\.key: V1SecretEnvSource has no field "key"/.test(e)), JSON.stringify(v.errors));
});

const SKY_CASES: Array<{ id: string; cfg: Record<string, unknown>; rerun?: number }> = [
  { id: 'bucket', cfg: { workspace: { bucket: 's3://rl-lab/ws' } } },
  {
    id: 'every-field',
    cfg: {
      cluster: 'rollouts', cloud: 'gcp', region: 'us-central1', image: 'docker:node:20-bookworm', cpus: 4, useSpot: true,
      setup: ['npm install -g rollout-lab@0.1.0', 'echo ready'], cli: ['rollout-lab'], workspace: { path: '/mnt/lab', bucket: 'gs://rl-lab/ws' },
      envs: { ROLLOUT_LAB_LOG: 'debug' }, secrets: ['OPENAI_API_KEY'], down: false,
    },
  },
  { id: 'shared-fs', cfg: { workspace: { path: '/nfs/lab', sharedFilesystem: true }, cloud: 'kubernetes' } },
  { id: 'rerun-slice', cfg: { workspace: { bucket: 's3://rl-lab/ws' }, secrets: ['OPENAI_API_KEY'] }, rerun: 3 },
];

test('skypilot workers: SkyPilot\'s CLI and Task read every config\'s `sky launch` and task YAML: N nodes, the shard from the node rank', { skip }, () => {
  const launches = SKY_CASES.map((c) => {
    const cfg = SkypilotWorkersSchema.parse(c.cfg);
    const dir = path.join(root, c.id);
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'sky-workers.yaml');
    const yaml = skyWorkersTaskYaml(req, cfg);
    writeFileSync(file, yaml);
    const extra = c.rerun === undefined ? [] : ['--num-nodes', '1', '--env', `ROLLOUT_LAB_SHARD=${c.rerun}`];
    return { c, cfg, file, task: parse(yaml) as Record<string, any>, argv: skyWorkersLaunch(workersClusterName(req.runId, cfg), file, cfg, extra) };
  });
  const bad = structuredClone(launches[0]!.task);
  bad.file_mounts['/workspace'].mode = 'MOUNTED';
  const badFile = path.join(root, 'corrupt-sky.yaml');
  writeFileSync(badFile, stringify(bad));
  const cases = [...launches.map((l) => ({ argv: l.argv, env: { OPENAI_API_KEY: 'sk-test' } })), { argv: launches[0]!.argv.map((a) => (a === launches[0]!.file ? badFile : a)), env: {} }];
  const casesFile = path.join(root, 'cases.json');
  writeFileSync(casesFile, JSON.stringify(cases));
  const verdicts = check('validate_sky.py', ['--cases', casesFile]);
  launches.forEach(({ c, cfg, file }, i) => {
    const v = verdicts[i]!;
    assert.equal(v.accepted, true, `${c.id}: ${v.error}`);
    const t = v.task;
    assert.equal(t.num_nodes, c.rerun === undefined ? 4 : 1, `${c.id}: a node per slice`);
    assert.match(t.run, /shard="\$\{ROLLOUT_LAB_SHARD:-\$SKYPILOT_NODE_RANK\}"/);
    assert.match(t.run, new RegExp(`exec ${cfg.cli.join(' ')} run --resume ${req.runId} --shard "\\$shard/4" --workspace ${cfg.workspace.path} `));
    assert.equal(t.envs.ROLLOUT_LAB_SHARDS, '4');
    if (c.rerun !== undefined) assert.equal(t.envs.ROLLOUT_LAB_SHARD, String(c.rerun), 'a rerun runs one slice');
    for (const [k, val] of Object.entries(cfg.envs)) assert.equal(t.envs[k], val);
    assert.deepEqual(t.secrets, cfg.secrets);
    assert.deepEqual(t.launch.entrypoint, [file]);
    assert.equal(t.launch.detach_run, true);
    assert.equal(t.launch.down, cfg.down);
    assert.equal(t.launch.cluster_name, cfg.cluster ?? 'rl-w-run-20261202t174724-a1b2c3');
    if (cfg.setup.length) assert.equal(t.setup, ['set -e', ...cfg.setup].join('\n'));
    const r = t.resources[0];
    assert.equal(r.cloud, cfg.cloud ?? null);
    assert.equal(r.use_spot, cfg.useSpot);
    assert.equal(r.cpus, `${cfg.cpus}+`);
  });
  const v = verdicts.at(-1)!;
  assert.equal(v.accepted, false);
  assert.match(String(v.error), /MOUNTED/);
});

test("skypilot workers: the task's nodes run as workers their coordinator follows; a rerun of one slice does not", () => {
  const cfg = SkypilotWorkersSchema.parse({ workspace: { path: tmpdir(), sharedFilesystem: true } });
  // The node's run script as SkyPilot runs it, up to the worker's own command line.
  const script = (skyWorkersTask(req, cfg).run as string).replace(/^exec .*$/m, 'echo "$shard ${ROLLOUT_LAB_COORDINATED:-none}"');
  const node = (env: Record<string, string>): string => spawnSync('bash', ['-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } }).stdout.trim();
  assert.equal(node({ SKYPILOT_NODE_RANK: '2' }), '2 1');
  assert.equal(node({ SKYPILOT_NODE_RANK: '0', ROLLOUT_LAB_SHARD: '3' }), '3 none');
});
