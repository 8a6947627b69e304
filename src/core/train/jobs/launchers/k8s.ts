import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { background, type Background, lastLines, pipe, run, sleep, stream } from './exec';
import { INIT_CONTAINER, K8S_EXIT_MARK, TRAINER_CONTAINER, WORKSPACE, manifestsYaml, secretName, secretYaml } from './k8sManifests';
import { handleOf, targetOf } from './narrow';

/**
 * A Kubernetes Job driven with kubectl (the target's --context and
 * --namespace on every call). Launch: the Secret from stdin, the Job (and
 * Service) from k8s.yaml, then the bundle streamed into the pod's
 * wait-for-bundle container (see k8sManifests.ts). Follow: `kubectl logs -f
 * job/ID` until the trainer's sentinel line, or the Job's conditions when the
 * stream ends without one. Every pod command goes through `job/ID` (kubectl
 * picks the Job's pod), so the plan is exact and a handle is all a reattach needs.
 */

type K8sTarget = Extract<TargetConfig, { kind: 'k8s' }>;
type Where = { context: string | null; namespace: string };

const MARK_LINE = new RegExp(`${K8S_EXIT_MARK}(\\d+)$`);
const POLL_MS = 2000;
/** How long launch waits for the pod to run (scheduling, a GPU node scaling up, the image pull). */
const START_TIMEOUT_MS = 30 * 60_000;



function whereOf(t: K8sTarget): Where {
  return { context: t.context ?? null, namespace: t.namespace };
}

/** `kubectl [--context C] --namespace N ARGS...` */
export function kubectl(w: Where, args: string[]): string[] {
  return ['kubectl', ...(w.context ? ['--context', w.context] : []), '--namespace', w.namespace, ...args];
}

function manifestFile(job: Pick<PreparedJob, 'jobDir'>): string {
  return path.join(job.jobDir, 'k8s.yaml');
}

interface LaunchSteps {
  secret: PlannedStep | null;
  apply: PlannedStep;
  waitForPod: PlannedStep;
  pack: PlannedStep;
  unpack: PlannedStep;
  release: PlannedStep;
}

function launchSteps(job: PreparedJob, mask: boolean): LaunchSteps {
  const w = whereOf(targetOf(job, 'k8s'));
  const ref = `job/${job.spec.id}`;
  return {
    secret: Object.keys(job.secrets).length
      ? { title: `the secrets as Secret ${secretName(job.spec.id)}, from stdin (never in a file)`, argv: kubectl(w, ['apply', '-f', '-']), stdin: secretYaml(job, mask) }
      : null,
    apply: { title: 'the Job (and the Service of a serve job)', argv: kubectl(w, ['apply', '-f', manifestFile(job)]) },
    waitForPod: { title: `wait until the pod's ${INIT_CONTAINER} container runs (repeated until it answers)`, argv: kubectl(w, ['exec', ref, '-c', INIT_CONTAINER, '--', 'true']) },
    pack: { title: 'pack the bundle (its output is the next step\'s input)', argv: ['tar', '-C', job.bundleDir, '-cf', '-', '.'] },
    unpack: { title: `unpack it into ${WORKSPACE} in the pod`, argv: kubectl(w, ['exec', '-i', ref, '-c', INIT_CONTAINER, '--', 'tar', '-xf', '-', '-C', WORKSPACE]), stdin: '(the tar stream of the step above)' },
    release: { title: 'release the trainer container', argv: kubectl(w, ['exec', ref, '-c', INIT_CONTAINER, '--', 'touch', `${WORKSPACE}/.bundle-ready`]) },
  };
}

/** The Job's finished condition: "Complete", "Failed", or null while it runs; throws when the Job is gone. */
async function jobCondition(w: Where, id: string): Promise<'Complete' | 'Failed' | null> {
  const r = await run(kubectl(w, ['get', 'job', id, '-o', 'jsonpath={.status.conditions[?(@.status=="True")].type}']), { allowFail: true });
  if (r.code !== 0) throw new RuntimeFailure(/not ?found/i.test(r.stderr) ? `the Job ${id} is gone (deleted or cancelled)` : `kubectl get job ${id}: ${lastLines(r.stderr, 2)}`);
  const types = r.stdout.trim().split(/\s+/);
  if (types.includes('Failed')) return 'Failed';
  if (types.includes('Complete')) return 'Complete';
  return null;
}

export const k8sLauncher: Launcher = {
  kind: 'k8s',

  plan(job: PreparedJob): LaunchPlan {
    const s = launchSteps(job, true);
    return {
      target: 'k8s',
      files: [{ path: manifestFile(job), content: manifestsYaml(job, targetOf(job, 'k8s')) }],
      steps: [...(s.secret ? [s.secret] : []), s.apply, s.waitForPod, s.pack, s.unpack, s.release],
    };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    const t = targetOf(job, 'k8s');
    mkdirSync(job.jobDir, { recursive: true });
    writeFileSync(manifestFile(job), manifestsYaml(job, t));
    const s = launchSteps(job, false);
    if (s.secret) await run(s.secret.argv, { stdin: s.secret.stdin });
    await run(s.apply.argv);
    log?.(`waiting for the pod of job/${job.spec.id} to start (scheduling, image pull)`);
    for (let waited = 0; ; waited += POLL_MS) {
      const r = await run(s.waitForPod.argv, { allowFail: true });
      if (r.code === 0) break;
      if (waited >= START_TIMEOUT_MS) throw new RuntimeFailure(`the pod of job ${job.spec.id} did not start in ${START_TIMEOUT_MS / 60_000} minutes (${lastLines(r.stderr, 1)}) — kubectl describe pods -l rollout-lab/job=${job.spec.id}`);
      if ((await jobCondition(whereOf(t), job.spec.id)) === 'Failed') throw new RuntimeFailure(`job ${job.spec.id} failed before it started — kubectl describe pods -l rollout-lab/job=${job.spec.id}`);
      await sleep(POLL_MS);
    }
    log?.('copying the bundle into the pod');
    await pipe(s.pack.argv, s.unpack.argv);
    await run(s.release.argv);
    return { target: 'k8s', namespace: t.namespace, context: t.context ?? null, job: job.spec.id, service: job.spec.serve ? job.spec.id : null };
  },

  async follow(handle: JobHandle, hooks: FollowHooks): Promise<JobExit> {
    const h = handleOf(handle, 'k8s');
    // kubectl logs replays from the start: after a broken stream, lines already handed out are skipped.
    let emitted = 0;
    for (;;) {
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      let index = 0;
      let code: number | null = null;
      // The trainer container outlives the job (it waits for the fetch), so the stream is stopped at the sentinel.
      const stop = new AbortController();
      const onAbort = (): void => stop.abort();
      hooks.signal?.addEventListener('abort', onAbort, { once: true });
      const r = await stream(
        kubectl(h, ['logs', '-f', `job/${h.job}`, '-c', TRAINER_CONTAINER]),
        (line) => {
          if (code !== null) return;
          const m = MARK_LINE.exec(line);
          const text = m ? line.slice(0, m.index) : line;
          if (m) {
            code = Number(m[1]);
            stop.abort();
            if (!text) return;
          }
          if (index++ < emitted) return;
          emitted++;
          hooks.onLine(text);
        },
        { signal: stop.signal, stderr: 'capture' },
      );
      hooks.signal?.removeEventListener('abort', onAbort);
      if (code !== null) return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code };
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      // No sentinel: the container is not running yet, or it was killed (OOM, the Job deleted), or the stream broke.
      let condition: 'Complete' | 'Failed' | null;
      try {
        condition = await jobCondition(h, h.job);
      } catch (err) {
        return { state: 'failed', exitCode: null, detail: (err as Error).message };
      }
      if (condition === 'Complete') return { state: 'succeeded', exitCode: 0 };
      if (condition === 'Failed') return { state: 'failed', exitCode: null, detail: `the Job ${h.job} failed${r.stderr ? ` (${lastLines(r.stderr, 1)})` : ''} — kubectl describe pods -l rollout-lab/job=${h.job}` };
      await sleep(POLL_MS, hooks.signal);
    }
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handleOf(handle, 'k8s');
    const ref = `job/${h.job}`;
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(destDir, { recursive: true });
    await pipe(kubectl(h, ['exec', ref, '-c', TRAINER_CONTAINER, '--', 'tar', '-cf', '-', '-C', `${WORKSPACE}/${job.spec.output.dir}`, '.']), ['tar', '-xf', '-', '-C', path.resolve(destDir)]);
    // The container may end now (with the job's status); its Secret is no longer needed.
    await run(kubectl(h, ['exec', ref, '-c', TRAINER_CONTAINER, '--', 'touch', `${WORKSPACE}/.fetched`]), { allowFail: true });
    await run(kubectl(h, ['delete', 'secret', secretName(h.job), '--ignore-not-found']), { allowFail: true });
  },

  async cancel(handle: JobHandle): Promise<void> {
    const h = handleOf(handle, 'k8s');
    await run(kubectl(h, ['delete', 'job', h.job, '--ignore-not-found']));
    if (h.service) await run(kubectl(h, ['delete', 'service', h.service, '--ignore-not-found']));
    await run(kubectl(h, ['delete', 'secret', secretName(h.job), '--ignore-not-found']));
  },

  async forwardPort(handle: JobHandle, _job, remotePort: number, localPort?: number): Promise<PortForward> {
    const h = handleOf(handle, 'k8s');
    const target = h.service ? `svc/${h.service}` : `job/${h.job}`;
    let forward: Background | null = null;
    // Without a local port kubectl picks a free one and says which: "Forwarding from 127.0.0.1:PORT -> REMOTE".
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => fail(new RuntimeFailure(`kubectl port-forward ${target} did not say where it listens within a minute`)), 60_000);
      const fail = (err: Error): void => {
        clearTimeout(timer);
        fwd.stop();
        reject(err);
      };
      const fwd = background(kubectl(h, ['port-forward', '--address', '127.0.0.1', target, `${localPort ?? ''}:${remotePort}`]), (line) => {
        const m = /^Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(line);
        if (!m) return;
        clearTimeout(timer);
        forward = fwd;
        resolve(Number(m[1]));
      });
      fwd.exited.then(
        (r) => fail(new RuntimeFailure(`kubectl port-forward ${target} exited with status ${r.code}: ${lastLines(r.stderr, 2)}`)),
        (err: Error) => fail(err),
      );
    });
    return { url: `http://127.0.0.1:${port}/v1`, close: () => forward?.stop() };
  },
};
