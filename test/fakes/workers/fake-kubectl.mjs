// A fake `kubectl` whose cluster is this machine, for the Kubernetes workers: `apply -f -` / `create -f FILE` of an
// Indexed Job starts its controller (fakeJobController.mjs), which runs each pod as a local process; `get
// jobs,pods -l KEY=VALUE -o json` and `get pvc NAME -o json` answer from the state like the API server; `logs POD`,
// `delete job NAME [--cascade=foreground]` (waits until its pods are gone, as kubectl's --wait does), `delete -f
// FILE`, `delete pod NAME`. Records every call to $FAKE_RECORD. The cluster's state is $FAKE_STATE/k8s/NAMESPACE/.
// $FAKE_K8S_PVCS: {"claim": {"path": local folder, "accessModes": [...]}}; $FAKE_K8S_SECRETS: {"secret": {KEY: VALUE}}.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { isAlive, readJson, readStdin, record, sleep, writeJson } from './fakeCluster.mjs';

process.stdout.on('error', () => undefined);
const args = process.argv.slice(2);
let namespace = 'default';
const rest = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--namespace' || args[i] === '-n') namespace = args[++i];
  else if (args[i] === '--context') i++;
  else rest.push(args[i]);
}
const stdin = rest.includes('-') ? (await readStdin()).toString('utf8') : '';
record('kubectl', args, stdin ? { stdin } : {});
const nsDir = path.join(process.env.FAKE_STATE, 'k8s', namespace);
const jobDir = (name) => path.join(nsDir, 'jobs', name);
const flag = (name) => rest.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const fail = (message, code = 1) => {
  console.error(message);
  process.exit(code);
};

function jobsOf(text) {
  return parseAllDocuments(text).map((d) => d.toJSON()).filter((d) => d?.kind === 'Job');
}

function createJob(job, verb) {
  if (job.spec?.completionMode !== 'Indexed') fail('fake kubectl: only Indexed Jobs run here', 2);
  const dir = jobDir(job.metadata.name);
  if (existsSync(dir)) {
    if (verb === 'create') fail(`Error from server (AlreadyExists): error when creating "STDIN": jobs.batch "${job.metadata.name}" already exists`);
    console.log(`job.batch/${job.metadata.name} unchanged`);
    return;
  }
  mkdirSync(dir, { recursive: true });
  writeJson(path.join(dir, 'job.json'), job);
  writeJson(path.join(dir, 'status.json'), { completed: [], failed: [], conditions: [], deletionTimestamp: null, pods: [] });
  const controller = spawn(process.execPath, [fileURLToPath(new URL('./fakeJobController.mjs', import.meta.url)), dir], { detached: true, stdio: 'ignore' });
  writeFileSync(path.join(dir, 'controller.pid'), String(controller.pid));
  controller.unref();
  console.log(`job.batch/${job.metadata.name} created`);
}

async function deleteJob(name, ignoreNotFound) {
  const dir = jobDir(name);
  if (!existsSync(dir)) {
    if (ignoreNotFound) return;
    fail(`Error from server (NotFound): jobs.batch "${name}" not found`);
  }
  const pid = Number(readFileSync(path.join(dir, 'controller.pid'), 'utf8'));
  const ended = readJson(path.join(dir, 'status.json'))?.conditions?.length > 0;
  if (!ended && isAlive(pid)) process.kill(pid, 'SIGTERM');
  else rmSync(dir, { recursive: true, force: true });
  console.log(`job.batch "${name}" deleted`);
  // kubectl waits for the deletion (--wait defaults to true); with foreground cascading that is until the pods are gone.
  if (flag('wait') !== 'false') while (existsSync(dir)) await sleep(50);
}

const ranges = (ks) => {
  const s = [...new Set(ks)].sort((a, b) => a - b);
  const out = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : `${s[i]}`);
    i = j;
  }
  return out.join(',') || undefined;
};

function jobObjects(name) {
  const dir = jobDir(name);
  const job = readJson(path.join(dir, 'job.json'));
  const st = readJson(path.join(dir, 'status.json'));
  if (!job || !st) return [];
  const labels = job.spec.template.metadata.labels;
  const del = st.deletionTimestamp ? { deletionTimestamp: st.deletionTimestamp } : {};
  const items = [{ apiVersion: 'batch/v1', kind: 'Job', metadata: { ...job.metadata, ...del }, spec: job.spec, status: { completedIndexes: ranges(st.completed), failedIndexes: ranges(st.failed), conditions: st.conditions } }];
  for (const p of st.pods) {
    const index = { 'batch.kubernetes.io/job-completion-index': String(p.index) };
    items.push({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: p.name,
        namespace,
        creationTimestamp: p.createdAt,
        ...(p.deletionTimestamp ? { deletionTimestamp: p.deletionTimestamp } : {}),
        labels: { ...labels, ...index, 'job-name': name, 'batch.kubernetes.io/job-name': name },
        annotations: { ...index, 'batch.kubernetes.io/job-index-failure-count': String(p.failureCount) },
      },
      status: { phase: p.phase, containerStatuses: [{ name: job.spec.template.spec.containers[0].name, restartCount: 0, state: p.state }] },
    });
  }
  return items;
}

const [verb, what, name] = rest;
switch (verb) {
  case 'apply':
  case 'create': {
    const text = rest.includes('-') ? stdin : readFileSync(rest[rest.indexOf('-f') + 1], 'utf8');
    for (const job of jobsOf(text)) createJob(job, verb);
    break;
  }
  case 'get': {
    if (what === 'pvc') {
      const pvc = JSON.parse(process.env.FAKE_K8S_PVCS ?? '{}')[name];
      if (!pvc) fail(`Error from server (NotFound): persistentvolumeclaims "${name}" not found`);
      console.log(JSON.stringify({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace }, spec: { accessModes: pvc.accessModes }, status: { phase: 'Bound' } }));
      break;
    }
    if (what !== 'jobs,pods') fail(`fake kubectl: cannot get ${what}`, 2);
    const [key, value] = rest[rest.indexOf('-l') + 1].split('=');
    const jobs = existsSync(path.join(nsDir, 'jobs')) ? readdirSync(path.join(nsDir, 'jobs')) : [];
    const items = jobs.flatMap(jobObjects).filter((o) => (o.kind === 'Job' ? o.metadata.labels?.[key] : o.metadata.labels?.[key]) === value);
    console.log(JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    break;
  }
  case 'logs': {
    const pod = what;
    const jobs = existsSync(path.join(nsDir, 'jobs')) ? readdirSync(path.join(nsDir, 'jobs')) : [];
    const file = jobs.map((j) => path.join(jobDir(j), 'logs', `${pod}.log`)).find(existsSync);
    if (!file) fail(`Error from server (NotFound): pods "${pod}" not found`);
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);
    const tail = flag('tail');
    process.stdout.write(lines.slice(tail ? -Number(tail) : 0).map((l) => `${l}\n`).join(''));
    break;
  }
  case 'delete': {
    const ignore = rest.includes('--ignore-not-found');
    if (what === '-f') {
      for (const job of jobsOf(readFileSync(name, 'utf8'))) await deleteJob(job.metadata.name, ignore);
    } else if (what === 'job') {
      await deleteJob(name, ignore);
    } else if (what === 'pod') {
      const owner = name.replace(/-\d+-[a-z0-9]+$/, '');
      if (!existsSync(jobDir(owner))) fail(`Error from server (NotFound): pods "${name}" not found`);
      writeFileSync(path.join(jobDir(owner), `delete-pod-${name}`), '');
      while (existsSync(path.join(jobDir(owner), `delete-pod-${name}`))) await sleep(50);
      console.log(`pod "${name}" deleted`);
    } else fail(`fake kubectl: cannot delete ${what}`, 2);
    break;
  }
  default:
    fail(`fake kubectl: unknown verb ${verb}`, 2);
}
