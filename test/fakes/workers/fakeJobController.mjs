// The fake cluster's Job controller and kubelet for one Indexed Job (started detached by fake-kubectl.mjs `apply`):
// a pod per index, each a local process of the container's command and args ($(VAR) expanded from the container's
// env, JOB_COMPLETION_INDEX set, the claim's mount path mapped to the claim's local folder, envFrom Secrets from
// $FAKE_K8S_SECRETS), replaced as the Job's backoffLimitPerIndex, podFailurePolicy and podReplacementPolicy
// say. Its state is DIR/status.json, which `kubectl get` reads. SIGTERM = the Job deleted: every pod gets a SIGTERM
// and its terminationGracePeriodSeconds, then a SIGKILL; the Job's folder goes once its pods have ended. A file
// DIR/delete-pod-NAME (`kubectl delete pod`) ends that pod the same way.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { baseEnv, localPath, readJson, sleep, writeJson } from './fakeCluster.mjs';

const dir = process.argv[2];
const job = readJson(path.join(dir, 'job.json'));
const spec = job.spec;
const count = spec.completions;
const podSpec = spec.template.spec;
const container = podSpec.containers[0];
const pvcs = JSON.parse(process.env.FAKE_K8S_PVCS ?? '{}');
const secrets = JSON.parse(process.env.FAKE_K8S_SECRETS ?? '{}');
const mounts = (container.volumeMounts ?? []).map((m) => {
  const vol = podSpec.volumes.find((v) => v.name === m.name);
  const claim = pvcs[vol?.persistentVolumeClaim?.claimName];
  return claim ? { at: m.mountPath, dir: m.subPath ? path.join(claim.path, m.subPath) : claim.path } : null;
}).filter(Boolean);
mkdirSync(path.join(dir, 'logs'), { recursive: true });

const status = { completed: [], failed: [], conditions: [], deletionTimestamp: null, pods: [] };
const failures = new Map();
const children = new Map();
const save = () => writeJson(path.join(dir, 'status.json'), status);
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const rand = () => Math.random().toString(36).slice(2, 7);
let deleting = false;

function expand(s, env) {
  return s.replace(/\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name) => (m === '$$(' ? '$(' : env[name] ?? m));
}

function startPod(index) {
  const name = `${job.metadata.name}-${index}-${rand()}`;
  const pod = { name, index, createdAt: now(), phase: 'Pending', deletionTimestamp: null, state: { waiting: { reason: 'ContainerCreating' } }, failureCount: failures.get(index) ?? 0 };
  status.pods.push(pod);
  const env = { JOB_COMPLETION_INDEX: String(index), HOSTNAME: `${job.metadata.name}-${index}` };
  for (const ref of container.envFrom ?? []) {
    const s = secrets[ref.secretRef.name];
    if (!s) {
      pod.state = { waiting: { reason: 'CreateContainerConfigError', message: `secret "${ref.secretRef.name}" not found` } };
      save();
      return;
    }
    Object.assign(env, s);
  }
  for (const e of container.env ?? []) env[e.name] = expand(e.value, env);
  const argv = [...container.command, ...(container.args ?? [])].map((a) => localPath(expand(a, env), mounts));
  const log = openSync(path.join(dir, 'logs', `${name}.log`), 'a');
  const child = spawn(argv[0], argv.slice(1), { cwd: localPath(container.workingDir ?? '/', mounts), env: baseEnv(env), stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  children.set(name, child);
  pod.phase = 'Running';
  pod.state = { running: { startedAt: now() } };
  child.on('error', (e) => ended(pod, 128, 'StartError', e.message));
  child.on('exit', (code, signal) => ended(pod, code ?? 128 + ({ SIGKILL: 9, SIGTERM: 15, SIGINT: 2 }[signal] ?? 0), code === 0 ? 'Completed' : 'Error'));
  save();
}

function ended(pod, exitCode, reason, message) {
  if (pod.phase === 'Succeeded' || pod.phase === 'Failed') return;
  children.delete(pod.name);
  pod.phase = exitCode === 0 ? 'Succeeded' : 'Failed';
  pod.state = { terminated: { exitCode, reason, ...(message ? { message } : {}) } };
  if (!deleting) afterPod(pod, exitCode);
  save();
}

function afterPod(pod, exitCode) {
  const k = pod.index;
  if (exitCode === 0) {
    status.completed.push(k);
  } else {
    const rules = spec.podFailurePolicy?.rules ?? [];
    const failIndex = rules.some((r) => r.action === 'FailIndex' && r.onExitCodes?.operator === 'In' && r.onExitCodes.values.includes(exitCode));
    failures.set(k, (failures.get(k) ?? 0) + 1);
    if (failIndex || failures.get(k) > (spec.backoffLimitPerIndex ?? 0)) status.failed.push(k);
    // podReplacementPolicy Failed: the replacement starts once this pod has ended, which it now has.
    else startPod(k);
  }
  if (status.completed.length + status.failed.length === count) {
    status.conditions.push(status.failed.length ? { type: 'Failed', status: 'True', reason: 'FailedIndexes', message: 'Job has failed indexes' } : { type: 'Complete', status: 'True' });
    save();
    process.exit(0);
  }
}

async function stopPods(names) {
  const grace = (podSpec.terminationGracePeriodSeconds ?? 30) * 1000;
  for (const n of names) {
    const pod = status.pods.find((p) => p.name === n);
    if (pod) pod.deletionTimestamp = now();
    children.get(n)?.kill('SIGTERM');
  }
  save();
  const until = Date.now() + grace;
  while (names.some((n) => children.has(n)) && Date.now() < until) await sleep(50);
  for (const n of names) children.get(n) && process.kill(-children.get(n).pid, 'SIGKILL');
  while (names.some((n) => children.has(n))) await sleep(20);
}

process.on('SIGTERM', async () => {
  if (deleting) return;
  deleting = true;
  status.deletionTimestamp = now();
  save();
  await stopPods([...children.keys()]);
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
});

for (let k = 0; k < Math.min(count, spec.parallelism ?? count); k++) startPod(k);
// `kubectl delete pod NAME`: the pod is stopped like a deleted pod, then counted as the Job controller counts it.
for (;;) {
  await sleep(50);
  if (deleting || !existsSync(dir)) continue;
  for (const f of readdirSync(dir).filter((x) => x.startsWith('delete-pod-'))) {
    const name = f.slice('delete-pod-'.length);
    if (children.has(name)) await stopPods([name]);
    status.pods = status.pods.filter((p) => p.name !== name);
    save();
    unlinkSync(path.join(dir, f));
  }
}
