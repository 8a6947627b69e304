import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { run, shellQuote, sleep, stream } from './exec';
import { accepts, freePort } from './ssh';

/**
 * A Kubernetes Job: its pod's init container waits until the bundle has been
 * copied in with `kubectl cp`; the trainer container runs it, then waits (up
 * to an hour) for the outputs to be copied out before it exits. A serve job
 * gets a Service, reached with `kubectl port-forward`. Secrets become a Secret
 * applied from standard input, never a file or an argument.
 */

type K8sTarget = Extract<TargetConfig, { kind: 'k8s' }>;
type K8sHandle = Extract<JobHandle, { target: 'k8s' }>;

const WORK = '/workspace';
const LABEL = 'rollout-lab/job';

function target(job: Pick<PreparedJob, 'target'>): K8sTarget {
  if (job.target.kind !== 'k8s') throw new RuntimeFailure('not a k8s target');
  return job.target;
}

function kubectl(t: Pick<K8sTarget, 'context' | 'namespace'>, args: string[]): string[] {
  return ['kubectl', ...(t.context ? ['--context', t.context] : []), '--namespace', t.namespace, ...args];
}

function secretName(id: string): string {
  return `${id}-env`;
}

/** The Job (and Service) the target gets. */
export function manifests(job: PreparedJob): Array<Record<string, unknown>> {
  const t = target(job);
  const id = job.spec.id;
  const labels = { 'app.kubernetes.io/name': 'rollout-lab-trainer', [LABEL]: id };
  const run = `cd ${WORK} && (python3 -m pip install --quiet -e "./python-trainer[hf]" || true) && PYTHONPATH=python-trainer PYTHONUNBUFFERED=1 ${job.spec.command.map(shellQuote).join(' ')}`;
  const wait = `c=$?; i=0; while [ ! -f ${WORK}/.fetched ] && [ $i -lt 3600 ]; do sleep 1; i=$((i+1)); done; exit $c`;
  const limits = t.gpus > 0 ? { [t.gpuResource]: String(t.gpus) } : {};
  const requests: Record<string, string> = {};
  if (t.cpus) requests.cpu = String(t.cpus);
  if (t.memoryGb) requests.memory = `${t.memoryGb}Gi`;
  const container: Record<string, unknown> = {
    name: 'trainer',
    image: t.image,
    workingDir: WORK,
    command: ['sh', '-c', `${run}; ${wait}`],
    volumeMounts: [{ name: 'workspace', mountPath: WORK }],
    resources: { limits, requests },
    ...(Object.keys(job.secrets).length ? { envFrom: [{ secretRef: { name: secretName(id) } }] } : {}),
    ...(job.spec.serve ? { ports: [{ containerPort: job.spec.serve.port, name: 'serve' }] } : {}),
  };
  const out: Array<Record<string, unknown>> = [
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: id, labels },
      spec: {
        backoffLimit: 0,
        template: {
          metadata: { labels },
          spec: {
            restartPolicy: 'Never',
            ...(t.serviceAccount ? { serviceAccountName: t.serviceAccount } : {}),
            ...(Object.keys(t.nodeSelector).length ? { nodeSelector: t.nodeSelector } : {}),
            volumes: [{ name: 'workspace', emptyDir: {} }],
            initContainers: [
              { name: 'wait-for-bundle', image: 'busybox:1.36', command: ['sh', '-c', `until [ -f ${WORK}/.bundle-ready ]; do sleep 1; done`], volumeMounts: [{ name: 'workspace', mountPath: WORK }] },
            ],
            containers: [container],
          },
        },
      },
    },
  ];
  if (job.spec.serve) {
    out.push({ apiVersion: 'v1', kind: 'Service', metadata: { name: id, labels }, spec: { selector: { [LABEL]: id }, ports: [{ name: 'serve', port: job.spec.serve.port, targetPort: job.spec.serve.port }] } });
  }
  return out;
}

function manifestFile(job: Pick<PreparedJob, 'jobDir'>): string {
  return path.join(job.jobDir, 'k8s.yaml');
}

function secretManifest(job: PreparedJob, mask: boolean): string {
  const data = Object.fromEntries(Object.entries(job.secrets).map(([k, v]) => [k, mask ? '***' : v]));
  return stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secretName(job.spec.id) }, type: 'Opaque', stringData: data });
}

function steps(job: PreparedJob, mask: boolean): PlannedStep[] {
  const t = target(job);
  const out: PlannedStep[] = [];
  if (Object.keys(job.secrets).length) out.push({ title: 'the secrets as a Secret, from stdin', argv: kubectl(t, ['apply', '-f', '-']), stdin: secretManifest(job, mask) });
  out.push({ title: 'the Job (and Service)', argv: kubectl(t, ['apply', '-f', manifestFile(job)]) });
  out.push({ title: 'find the pod', argv: kubectl(t, ['get', 'pods', '-l', `${LABEL}=${job.spec.id}`, '-o', 'jsonpath={.items[0].metadata.name}']) });
  out.push({ title: 'copy the bundle into it', argv: kubectl(t, ['cp', `${job.bundleDir}/.`, `POD:${WORK}`, '-c', 'wait-for-bundle']) });
  out.push({ title: 'release the trainer', argv: kubectl(t, ['exec', 'POD', '-c', 'wait-for-bundle', '--', 'touch', `${WORK}/.bundle-ready`]) });
  return out;
}

async function podOf(t: Pick<K8sTarget, 'context' | 'namespace'>, id: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const r = await run(kubectl(t, ['get', 'pods', '-l', `${LABEL}=${id}`, '-o', 'jsonpath={.items[0].metadata.name}']), { allowFail: true });
    if (r.code === 0 && r.stdout.trim()) return r.stdout.trim();
    await sleep(1000);
  }
  throw new RuntimeFailure(`no pod of job ${id} appeared in 10 minutes — kubectl describe job ${id}`);
}

function handleTarget(h: K8sHandle): Pick<K8sTarget, 'context' | 'namespace'> {
  return { context: h.context ?? undefined, namespace: h.namespace };
}

export const k8sLauncher: Launcher = {
  kind: 'k8s',

  plan(job: PreparedJob): LaunchPlan {
    return { target: 'k8s', files: [{ path: manifestFile(job), content: manifests(job).map((m) => stringify(m)).join('---\n') }], steps: steps(job, true) };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    const t = target(job);
    mkdirSync(job.jobDir, { recursive: true });
    writeFileSync(manifestFile(job), manifests(job).map((m) => stringify(m)).join('---\n'));
    let pod = '';
    for (const s of steps(job, false)) {
      if (s.title === 'find the pod') {
        pod = await podOf(t, job.spec.id);
        log?.(`pod ${pod}`);
        continue;
      }
      const argv = s.argv.map((a) => a.replace(/^POD(?=:|$)/, pod));
      if (s.title === 'copy the bundle into it') await waitRunning(t, pod, 'wait-for-bundle');
      await run(argv, s.stdin !== undefined ? { stdin: s.stdin } : {});
    }
    return { target: 'k8s', namespace: t.namespace, context: t.context ?? null, job: job.spec.id, service: job.spec.serve ? job.spec.id : null };
  },

  async follow(handle: JobHandle, hooks: FollowHooks): Promise<JobExit> {
    const h = handle as K8sHandle;
    const t = handleTarget(h);
    // logs -f fails while the trainer container is still waiting: try again until it streams.
    for (let i = 0; i < 600 && !hooks.signal?.aborted; i++) {
      const code = await stream(kubectl(t, ['logs', '-f', `job/${h.job}`, '-c', 'trainer']), hooks.onLine, { signal: hooks.signal });
      if (code === 0) break;
      await sleep(1000);
    }
    if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
    // The container waits for the outputs to be fetched before it exits: its result file says how it went.
    const pod = await podOf(t, h.job);
    const r = await run(kubectl(t, ['exec', pod, '-c', 'trainer', '--', 'cat', `${WORK}/out/result.json`]), { allowFail: true });
    let ok = false;
    try {
      ok = (JSON.parse(r.stdout) as { status?: string }).status === 'succeeded';
    } catch {
      ok = false;
    }
    return { state: ok ? 'succeeded' : 'failed', exitCode: ok ? 0 : null, ...(ok ? {} : { detail: 'the trainer wrote no successful result.json — kubectl logs job/' + h.job }) };
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handle as K8sHandle;
    const t = handleTarget(h);
    const pod = await podOf(t, h.job);
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(path.dirname(destDir), { recursive: true });
    await run(kubectl(t, ['cp', `${pod}:${WORK}/${job.spec.output.dir}`, destDir, '-c', 'trainer']));
    await run(kubectl(t, ['exec', pod, '-c', 'trainer', '--', 'touch', `${WORK}/.fetched`]), { allowFail: true });
  },

  async cancel(handle: JobHandle): Promise<void> {
    const h = handle as K8sHandle;
    const t = handleTarget(h);
    await run(kubectl(t, ['delete', 'job', h.job, '--ignore-not-found']), { allowFail: true });
    if (h.service) await run(kubectl(t, ['delete', 'service', h.service, '--ignore-not-found']), { allowFail: true });
    await run(kubectl(t, ['delete', 'secret', secretName(h.job), '--ignore-not-found']), { allowFail: true });
  },

  async forwardPort(handle: JobHandle, _job, remotePort: number, localPort?: number): Promise<PortForward> {
    const h = handle as K8sHandle;
    const port = localPort ?? (await freePort());
    const [cmd, ...args] = kubectl(handleTarget(h), ['port-forward', `svc/${h.service ?? h.job}`, `${port}:${remotePort}`]);
    const child = spawn(cmd!, args, { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new RuntimeFailure(`kubectl port-forward exited with ${child.exitCode}`);
      if (await accepts(port)) return { url: `http://127.0.0.1:${port}/v1`, close: () => void child.kill('SIGTERM') };
      await sleep(100);
    }
    child.kill('SIGTERM');
    throw new RuntimeFailure(`kubectl port-forward to ${h.service ?? h.job}:${remotePort} did not open`);
  },
};

async function waitRunning(t: Pick<K8sTarget, 'context' | 'namespace'>, pod: string, container: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await run(kubectl(t, ['get', 'pod', pod, '-o', `jsonpath={.status.initContainerStatuses[?(@.name=="${container}")].state.running}`]), { allowFail: true });
    if (r.code === 0 && r.stdout.trim()) return;
    await sleep(1000);
  }
  throw new RuntimeFailure(`the pod ${pod} did not start in 10 minutes — kubectl describe pod ${pod}`);
}
