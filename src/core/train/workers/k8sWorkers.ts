import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { K8sWorkersConfig } from '../../config/workersSchema';
import { ConfigError, RuntimeFailure } from '../../errors';
import { lastLines, run } from '../jobs/launchers/exec';
import { kubectl } from '../jobs/launchers/k8s';
import { COORDINATED_ENV } from '../../rollout/batchPlan';
import { dnsLabel, shellWord, TAIL_LINES, workerArgv, workersDir, type WorkerGroup, type WorkerPlace, type WorkerRequest, type WorkerState, type WorkerStatus } from './workerPlace';

/**
 * `--on k8s`: one Indexed Job (completions = parallelism = N), a pod per
 * slice, each running `CLI run --resume RUN --shard $(JOB_COMPLETION_INDEX)/N`
 * in the workspace, a ReadWriteMany PersistentVolumeClaim every pod mounts.
 * A slice's pod that fails is replaced on its own (backoffLimitPerIndex), and
 * the new pod redoes only the slice's unfinished rollouts; an eviction or a
 * preemption is not counted against it, a usage or config error (exit 2) fails
 * the slice at once. The coordinator follows the Job and its pods with one
 * `kubectl get jobs,pods -l rollout-lab/workers=NAME -o json` a poll, and
 * cancels with `kubectl delete job --cascade=foreground` (each pod gets a
 * SIGTERM, and the grace period to end its rollouts in flight). API keys reach
 * the pods from Secrets (envFrom), never through the manifest.
 */

export const WORKER_CONTAINER = 'worker';
export const WORKERS_LABEL = 'rollout-lab/workers';
export const RUN_LABEL = 'rollout-lab/run';
const INDEX_KEY = 'batch.kubernetes.io/job-completion-index';
const FAILURES_KEY = 'batch.kubernetes.io/job-index-failure-count';
/** A usage or config error: the same on every try, so its slice is not retried. */
const USAGE_EXIT = 2;
/** Seconds a deleted pod's worker has to end its rollouts in flight before it is killed. */
const GRACE_S = 60;
/** An ended Job stays a day for `kubectl logs`, then Kubernetes deletes it. */
const TTL_S = 86_400;

type Where = { context: string | null; namespace: string };
const whereOf = (cfg: K8sWorkersConfig): Where => ({ context: cfg.context ?? null, namespace: cfg.namespace });

/** The Job's name: the run id (lowercase) and a suffix, so a resumed run's new Job does not meet the old one. */
export function workersJobName(runId: string, suffix: string): string {
  return `rlw-${dnsLabel(runId)}`.slice(0, 56).replace(/-+$/, '') + `-${suffix}`;
}

export function checkK8sWorkers(cfg: K8sWorkersConfig): { image: string; claim: string } {
  if (!cfg.image) throw new ConfigError('workers.k8s.image is not set: name a container image with Node 20 and Rollout Lab\'s CLI (and set workers.k8s.cli to how it starts there, default ["rollout-lab"])');
  if (!cfg.workspace.claim) throw new ConfigError('workers.k8s.workspace.claim is not set: name the ReadWriteMany PersistentVolumeClaim that holds this workspace, which every worker pod mounts at workers.k8s.workspace.mountPath');
  return { image: cfg.image, claim: cfg.workspace.claim };
}

/**
 * The Job of a run's workers. `shard` set: a Job of one pod for that slice
 * alone (to rerun it by hand); left out: the Indexed Job of every slice.
 */
export function workersJobManifest(req: WorkerRequest, cfg: K8sWorkersConfig, name: string, shard?: number): Record<string, unknown> {
  const { image, claim } = checkK8sWorkers(cfg);
  const labels = { 'app.kubernetes.io/name': 'rollout-lab-workers', [RUN_LABEL]: dnsLabel(req.runId).slice(0, 63), [WORKERS_LABEL]: name };
  const mountPath = cfg.workspace.mountPath;
  // Kubernetes expands $(NAME) in args: a literal one elsewhere is escaped as $$(.
  const escape = (a: string): string => a.replace(/\$\(/g, '$$$$(');
  const slice = shard === undefined ? `$(JOB_COMPLETION_INDEX)/${req.count}` : `${shard}/${req.count}`;
  const args = workerArgv({ ...req, args: req.args.map(escape) }, slice, { cli: [], workspace: escape(mountPath) });
  const count = shard === undefined ? req.count : 1;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: cfg.namespace, labels },
    spec: {
      completionMode: 'Indexed',
      completions: count,
      parallelism: count,
      backoffLimitPerIndex: cfg.retriesPerIndex,
      // A replacement pod starts once the one it replaces has ended: never two workers of one slice at once.
      podReplacementPolicy: 'Failed',
      podFailurePolicy: {
        rules: [
          { action: 'FailIndex', onExitCodes: { containerName: WORKER_CONTAINER, operator: 'In', values: [USAGE_EXIT] } },
          { action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] },
        ],
      },
      ttlSecondsAfterFinished: TTL_S,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: GRACE_S,
          ...(cfg.serviceAccount ? { serviceAccountName: cfg.serviceAccount } : {}),
          ...(Object.keys(cfg.nodeSelector).length ? { nodeSelector: cfg.nodeSelector } : {}),
          volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: claim } }],
          containers: [
            {
              name: WORKER_CONTAINER,
              image,
              command: cfg.cli,
              args,
              workingDir: mountPath,
              // The Indexed Job's workers are followed by their coordinator; a one-pod rerun is not.
              env: Object.entries({ ...cfg.env, ...(shard === undefined ? { [COORDINATED_ENV]: '1' } : {}) }).map(([k, value]) => ({ name: k, value })),
              ...(cfg.envFromSecrets.length ? { envFrom: cfg.envFromSecrets.map((s) => ({ secretRef: { name: s } })) } : {}),
              volumeMounts: [{ name: 'workspace', mountPath, ...(cfg.workspace.subPath ? { subPath: cfg.workspace.subPath } : {}) }],
              resources: { requests: { cpu: cfg.cpu, memory: cfg.memory }, limits: { memory: cfg.memory } },
            },
          ],
        },
      },
    },
  };
}

/** "0,2-4" (a Job's completedIndexes or failedIndexes): the indexes. */
export function indexSet(text: string | undefined): Set<number> {
  const out = new Set<number>();
  for (const part of (text ?? '').split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) continue;
    for (let i = Number(m[1]); i <= Number(m[2] ?? m[1]); i++) out.add(i);
  }
  return out;
}

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: Record<string, unknown>;
  terminated?: { exitCode: number; reason?: string; signal?: number; message?: string };
}
export interface PodJson {
  kind: 'Pod';
  metadata: { name: string; creationTimestamp?: string; deletionTimestamp?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    containerStatuses?: Array<{ name: string; restartCount?: number; state?: ContainerState; lastState?: ContainerState }>;
  };
}
export interface JobJson {
  kind: 'Job';
  metadata: { name: string; deletionTimestamp?: string };
  status?: { completedIndexes?: string; failedIndexes?: string; conditions?: Array<{ type: string; status: string; reason?: string; message?: string }> };
}

export function podIndex(p: PodJson): number | null {
  const v = p.metadata.labels?.[INDEX_KEY] ?? p.metadata.annotations?.[INDEX_KEY];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
}

/** What a pod's worker container says of it: "exit 1 (Error)", "OOMKilled", "waiting: ImagePullBackOff". */
export function podDetail(p: PodJson): string {
  const c = p.status?.containerStatuses?.find((s) => s.name === WORKER_CONTAINER);
  const t = c?.state?.terminated;
  if (t) return `exit ${t.exitCode}${t.reason && t.reason !== 'Completed' && t.reason !== 'Error' ? ` (${t.reason})` : ''}`;
  const w = c?.state?.waiting;
  if (w?.reason) return `${w.reason}${w.message ? `: ${w.message}` : ''}`;
  const unscheduled = p.status?.conditions?.find((k) => k.type === 'PodScheduled' && k.status === 'False');
  if (unscheduled) return `${unscheduled.reason ?? 'Unschedulable'}${unscheduled.message ? `: ${unscheduled.message}` : ''}`;
  if (p.status?.reason) return `${p.status.reason}${p.status.message ? `: ${p.status.message}` : ''}`;
  return p.status?.phase ?? 'Pending';
}

/** The pod that stands for its index: the one not ended (one at most, as replacements wait), else the last made. */
export function newestPod(pods: PodJson[]): PodJson | undefined {
  const live = pods.find((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed');
  return live ?? [...pods].sort((a, b) => (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '')).at(-1);
}

/**
 * Each slice's worker from its Job and pods (`kubectl get jobs,pods -o json`).
 * `before` holds what was last seen (an ended slice keeps its end once its
 * pod is gone); `job` null means the Job no longer exists.
 */
export function k8sWorkerStates(count: number, job: JobJson | null, pods: PodJson[], before: WorkerStatus[], cancelled: boolean, name: string): WorkerStatus[] {
  const completed = indexSet(job?.status?.completedIndexes);
  const failed = indexSet(job?.status?.failedIndexes);
  const jobFailed = job?.status?.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
  const byIndex = new Map<number, PodJson[]>();
  for (const p of pods) {
    const k = podIndex(p);
    if (k !== null) byIndex.set(k, [...(byIndex.get(k) ?? []), p]);
  }
  return Array.from({ length: count }, (_, shard): WorkerStatus => {
    const mine = byIndex.get(shard) ?? [];
    const pod = newestPod(mine);
    // A deleted pod is gone from the list; its replacement carries the index's failure count.
    const counted = Number(pod?.metadata.annotations?.[FAILURES_KEY] ?? 0) || 0;
    const restarts = Math.max(before[shard]?.restarts ?? 0, mine.length - 1, counted);
    const at = (state: WorkerState, detail: string): WorkerStatus => ({ shard, state, detail: pod ? `${detail} (pod ${pod.metadata.name})` : detail, restarts });
    const was = before[shard];
    if (completed.has(shard)) return at('succeeded', 'Succeeded');
    if (failed.has(shard)) return at('failed', `${pod ? podDetail(pod) : 'failed'}, after ${restarts + 1} tr${restarts ? 'ies' : 'y'}`);
    if (was && (was.state === 'succeeded' || was.state === 'failed')) return { ...was };
    if (!job) {
      if (cancelled) return { shard, state: 'cancelled', detail: 'the Job was deleted (cancelled)', restarts };
      return { shard, state: 'lost', detail: `the Job ${name} is gone (deleted outside Rollout Lab, or removed after its TTL)`, restarts };
    }
    if (jobFailed) return at('failed', `the Job failed: ${jobFailed.reason ?? ''}${jobFailed.message ? ` ${jobFailed.message}` : ''}`.trim());
    if (!pod) return job.metadata.deletionTimestamp ? { shard, state: 'cancelled', detail: 'the Job is being deleted', restarts } : { shard, state: 'pending', detail: 'no pod yet', restarts };
    if (pod.metadata.deletionTimestamp) return at('running', 'stopping (pod being deleted)');
    switch (pod.status?.phase) {
      case 'Running':
        return at('running', 'Running');
      case 'Succeeded':
        return at('running', 'exit 0, the Job records it');
      case 'Failed':
        // Not among failedIndexes: the Job controller replaces it.
        return at('pending', `${podDetail(pod)}; the Job starts the slice again`);
      default:
        return at('pending', podDetail(pod));
    }
  });
}

/** `kubectl get pvc` said the claim cannot be shared by pods on several nodes. */
export function claimProblem(pvc: { spec?: { accessModes?: string[] } }, claim: string, namespace: string): string | null {
  const modes = pvc.spec?.accessModes ?? [];
  if (modes.includes('ReadWriteMany')) return null;
  return `the PersistentVolumeClaim ${claim} in namespace ${namespace} is ${modes.join(', ') || 'of no access mode'}, not ReadWriteMany: worker pods on different nodes could not all mount it. Use a ReadWriteMany claim (NFS, EFS, Filestore, Azure Files, CephFS) that holds this workspace`;
}

export function k8sWorkers(cfg: K8sWorkersConfig): WorkerPlace {
  const w = whereOf(cfg);
  return {
    name: 'k8s',
    async start(req: WorkerRequest): Promise<WorkerGroup> {
      const { claim } = checkK8sWorkers(cfg);
      const pvc = await run(kubectl(w, ['get', 'pvc', claim, '-o', 'json']), { allowFail: true });
      if (pvc.code !== 0) {
        throw new ConfigError(
          /not ?found/i.test(pvc.stderr)
            ? `the PersistentVolumeClaim ${claim} (workers.k8s.workspace.claim) is not in namespace ${cfg.namespace}: create it (ReadWriteMany, holding this workspace) or fix the name`
            : `kubectl get pvc ${claim}: ${lastLines(pvc.stderr, 2) || `exit ${pvc.code}`}`,
        );
      }
      const problem = claimProblem(JSON.parse(pvc.stdout) as { spec?: { accessModes?: string[] } }, claim, cfg.namespace);
      if (problem) throw new ConfigError(problem);

      const name = workersJobName(req.runId, Date.now().toString(36).slice(-5));
      const dir = workersDir(req.workspace, req.runId);
      mkdirSync(dir, { recursive: true });
      const manifest = stringify(workersJobManifest(req, cfg, name), { lineWidth: 0 });
      writeFileSync(path.join(dir, `${name}.yaml`), manifest);
      await run(kubectl(w, ['apply', '-f', '-']), { stdin: manifest });

      let last: WorkerStatus[] = Array.from({ length: req.count }, (_, shard) => ({ shard, state: 'pending', detail: 'submitted', restarts: 0 }));
      let pods: PodJson[] = [];
      let cancelled = false;
      return {
        label: `Kubernetes Indexed Job ${name} in namespace ${cfg.namespace} (${req.count} pod${req.count > 1 ? 's' : ''}; workspace: claim ${claim} at ${cfg.workspace.mountPath})`,
        pollMs: cfg.pollSeconds * 1000,
        async poll() {
          const r = await run(kubectl(w, ['get', 'jobs,pods', '-l', `${WORKERS_LABEL}=${name}`, '-o', 'json']), { allowFail: true });
          if (r.code !== 0) throw new RuntimeFailure(`kubectl get jobs,pods -l ${WORKERS_LABEL}=${name}: ${lastLines(r.stderr, 2) || `exit ${r.code}`}`);
          const items = (JSON.parse(r.stdout) as { items?: Array<JobJson | PodJson> }).items ?? [];
          const job = (items.find((i) => i.kind === 'Job' && i.metadata.name === name) as JobJson | undefined) ?? null;
          pods = items.filter((i): i is PodJson => i.kind === 'Pod');
          last = k8sWorkerStates(req.count, job, pods, last, cancelled, name);
          return last.map((s) => ({ ...s }));
        },
        async tail(shard) {
          const pod = newestPod(pods.filter((p) => podIndex(p) === shard));
          if (!pod) return [];
          const r = await run(kubectl(w, ['logs', pod.metadata.name, '-c', WORKER_CONTAINER, `--tail=${TAIL_LINES}`]), { allowFail: true });
          return r.code === 0 ? r.stdout.split('\n').filter(Boolean).slice(-TAIL_LINES) : [`(kubectl logs ${pod.metadata.name}: ${lastLines(r.stderr, 1)})`];
        },
        async cancel() {
          cancelled = true;
          await run(kubectl(w, ['delete', 'job', name, '--cascade=foreground', '--ignore-not-found']));
        },
        rerun(shard) {
          // A Job of one pod for the slice; the delete clears an earlier rerun of it.
          const file = path.join(dir, `${name}-slice-${shard}.yaml`);
          writeFileSync(file, stringify(workersJobManifest(req, cfg, `${name}-s${shard}`, shard), { lineWidth: 0 }));
          const k = (args: string[]): string => kubectl(w, args).map(shellWord).join(' ');
          return `${k(['delete', '-f', file, '--ignore-not-found'])} && ${k(['create', '-f', file])}`;
        },
      };
    },
  };
}
