// A fake `sky` whose cloud is this machine, for the SkyPilot workers: `launch -c CLUSTER TASK.yaml [--num-nodes K]
// [--env K=V]... [--secret NAME]... -y -d` reads the task as SkyPilot would (num_nodes, envs, secrets from this
// process's environment, setup, run, file_mounts) and starts its driver (fakeSkyRunner.mjs), which runs each node as
// a local process; `queue CLUSTER`, `logs --no-follow CLUSTER JOB`, `cancel -y CLUSTER JOB` (waits until the job is
// CANCELLED), `down -y CLUSTER`. Records every call to $FAKE_RECORD. Clusters live in $FAKE_STATE/sky/. A bucket
// mount is the local folder $FAKE_SKY_BUCKETS maps its source to ({"s3://b/x": "/tmp/..."}); a path with no
// file mount is a shared filesystem when $FAKE_SKY_SHARED maps it ({"/shared/ws": "/tmp/..."}).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { isAlive, readJson, readStdin, record, sleep, writeJson } from './fakeCluster.mjs';

process.stdout.on('error', () => undefined);
const args = process.argv.slice(2);
await readStdin();
record('sky', args);
const root = path.join(process.env.FAKE_STATE, 'sky');
const fail = (message, code = 1) => {
  console.error(message);
  process.exit(code);
};
const opt = (name) => args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));
const positional = (() => {
  const out = [];
  const withValue = new Set(['-c', '--cluster', '--num-nodes', '--env', '--secret', '--idle-minutes-to-autostop', '-i', '--tail']);
  for (let i = 1; i < args.length; i++) {
    if (withValue.has(args[i])) i++;
    else if (!args[i].startsWith('-')) out.push(args[i]);
  }
  return out;
})();
const clusterDir = (c) => path.join(root, c);
const jobsOf = (c) => (existsSync(clusterDir(c)) ? readdirSync(clusterDir(c)).filter((f) => /^job-\d+\.json$/.test(f)).map((f) => readJson(path.join(clusterDir(c), f))) : []);
const ENDED = ['SUCCEEDED', 'FAILED', 'FAILED_SETUP', 'FAILED_DRIVER', 'CANCELLED'];
const noCluster = (c) => fail(`sky.exceptions.ClusterDoesNotExist: Cluster '${c}' does not exist.`);

switch (args[0]) {
  case 'launch': {
    const cluster = opt('-c')[0];
    const task = parse(readFileSync(positional[0], 'utf8'));
    const nodes = Number(opt('--num-nodes')[0] ?? task.num_nodes ?? 1);
    const envs = { ...(task.envs ?? {}) };
    for (const kv of opt('--env')) envs[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
    for (const name of opt('--secret')) {
      if (process.env[name] === undefined) fail(`ValueError: Secret variable ${name} is not set in local environment.`);
      envs[name] = process.env[name];
    }
    for (const name of Object.keys(task.secrets ?? {})) if (envs[name] === undefined) fail(`ValueError: secret ${name} has no value: pass --secret ${name}`);
    const buckets = JSON.parse(process.env.FAKE_SKY_BUCKETS ?? '{}');
    const shared = JSON.parse(process.env.FAKE_SKY_SHARED ?? '{}');
    const mounts = Object.entries(task.file_mounts ?? {}).map(([at, m]) => {
      if (!buckets[m.source]) fail(`sky.exceptions.StorageBucketGetError: the bucket ${m.source} does not exist or is not reachable`);
      return { at, dir: buckets[m.source], mode: m.mode ?? 'MOUNT' };
    });
    for (const [at, dir] of Object.entries(shared)) if (!mounts.some((m) => m.at === at)) mounts.push({ at, dir, mode: 'shared' });
    const dir = clusterDir(cluster);
    const existing = readJson(path.join(dir, 'cluster.json'));
    if (existing && existing.nodes < nodes) fail(`sky.exceptions.ResourcesMismatchError: the task needs ${nodes} nodes; cluster '${cluster}' has ${existing.nodes}`);
    mkdirSync(dir, { recursive: true });
    if (!existing) writeJson(path.join(dir, 'cluster.json'), { nodes, resources: task.resources ?? {} });
    console.log(existing ? `Running task on cluster ${cluster}...` : `\u001b[1mLaunching a new cluster '${cluster}'.\u001b[0m`);
    const id = Math.max(0, ...jobsOf(cluster).map((j) => j.id)) + 1;
    const workdir = path.join(dir, 'sky_workdir');
    mkdirSync(workdir, { recursive: true });
    writeJson(path.join(dir, `job-${id}.json`), { id, name: task.name ?? '-', status: 'PENDING', nodes, envs, mounts, setup: task.setup ?? null, run: task.run, workdir, submitted: Date.now() });
    const runner = spawn(process.execPath, [fileURLToPath(new URL('./fakeSkyRunner.mjs', import.meta.url)), dir, String(id)], { detached: true, stdio: 'ignore' });
    writeFileSync(path.join(dir, `job-${id}.pid`), String(runner.pid));
    runner.unref();
    console.log('\u001b[32m✓ Cluster launched.\u001b[0m');
    console.log(`⚙︎ Job submitted, ID: ${id}`);
    break;
  }
  case 'queue': {
    const cluster = positional[0];
    if (!existsSync(clusterDir(cluster))) noCluster(cluster);
    console.log(`Job queue of current user on cluster ${cluster}`);
    console.log('ID  NAME  USER  SUBMITTED  STARTED  DURATION  RESOURCES  STATUS  LOG  GIT COMMIT');
    for (const j of jobsOf(cluster).sort((a, b) => b.id - a.id)) console.log(`${j.id}  ${j.name}  me  1 min ago  1 min ago  1s  ${j.nodes}x[CPU:1]  ${j.status}  ~/sky_logs/sky-${j.id}  -`);
    break;
  }
  case 'logs': {
    const [cluster, id] = positional;
    if (!existsSync(clusterDir(cluster))) noCluster(cluster);
    const file = path.join(clusterDir(cluster), `job-${id}.log`);
    const job = readJson(path.join(clusterDir(cluster), `job-${id}.json`));
    if (!job) fail(`Job ${id} not found`, 102);
    if (!args.includes('--no-follow')) while (!ENDED.includes(readJson(path.join(clusterDir(cluster), `job-${id}.json`)).status)) await sleep(100);
    if (existsSync(file)) process.stdout.write(readFileSync(file, 'utf8'));
    break;
  }
  case 'cancel': {
    const [cluster, id] = positional;
    if (!existsSync(clusterDir(cluster))) noCluster(cluster);
    const jobFile = path.join(clusterDir(cluster), `job-${id}.json`);
    if (!existsSync(jobFile)) fail(`Job ${id} not found on cluster ${cluster}`);
    const pid = Number(readFileSync(path.join(clusterDir(cluster), `job-${id}.pid`), 'utf8'));
    if (!ENDED.includes(readJson(jobFile).status) && isAlive(pid)) {
      process.kill(pid, 'SIGTERM');
      while (!ENDED.includes(readJson(jobFile).status)) await sleep(50);
    }
    console.log(`Cancelling jobs (${id}) on cluster ${cluster}... done`);
    break;
  }
  case 'down': {
    const cluster = positional[0];
    if (!existsSync(clusterDir(cluster))) noCluster(cluster);
    for (const f of readdirSync(clusterDir(cluster)).filter((x) => x.endsWith('.pid'))) {
      const pid = Number(readFileSync(path.join(clusterDir(cluster), f), 'utf8'));
      if (isAlive(pid)) process.kill(pid, 'SIGTERM');
    }
    await sleep(200);
    rmSync(clusterDir(cluster), { recursive: true, force: true });
    console.log(`Terminating cluster ${cluster}...done.`);
    break;
  }
  default:
    fail(`fake sky: unknown command ${args[0]}`, 2);
}
