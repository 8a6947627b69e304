import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PortForward, PreparedJob } from '../launcher';
import { run, shellQuote, stream } from './exec';

/**
 * A cloud GPU through SkyPilot: a task YAML (resources, the bundle as the
 * workdir, setup installing python-trainer, run), `sky launch --detach-run`,
 * `sky logs`, rsync of the outputs over the ssh alias SkyPilot sets up for the
 * cluster, and `sky down`. Secrets are passed with `--env NAME`, which SkyPilot
 * reads from its own environment: never in the YAML or the arguments.
 */

type SkyTarget = Extract<TargetConfig, { kind: 'skypilot' }>;
type SkyHandle = Extract<JobHandle, { target: 'skypilot' }>;

const WORKDIR = '~/sky_workdir';

function target(job: Pick<PreparedJob, 'target'>): SkyTarget {
  if (job.target.kind !== 'skypilot') throw new RuntimeFailure('not a skypilot target');
  return job.target;
}

export function clusterName(job: Pick<PreparedJob, 'spec' | 'target'>): string {
  return target(job).cluster ?? `rl-${job.spec.id}`.slice(0, 40).replace(/-+$/, '');
}

/** The SkyPilot task (https://docs.skypilot.co task YAML fields). */
export function skyTask(job: PreparedJob): Record<string, unknown> {
  const t = target(job);
  const resources: Record<string, unknown> = {};
  if (t.gpus > 0) resources.accelerators = t.gpuType ? `${t.gpuType}:${t.gpus}` : undefined;
  if (t.gpus > 0 && !t.gpuType) throw new RuntimeFailure('a skypilot target with gpus needs gpuType (e.g. "H100") — SkyPilot picks the cloud and region, not the GPU');
  if (t.cloud) resources.cloud = t.cloud;
  if (t.region) resources.region = t.region;
  if (t.useSpot) resources.use_spot = true;
  if (t.image) resources.image_id = t.image;
  if (t.cpus) resources.cpus = `${t.cpus}+`;
  if (t.memoryGb) resources.memory = `${t.memoryGb}+`;
  if (job.spec.serve) resources.ports = [job.spec.serve.port];
  const argv = job.spec.command.map(shellQuote).join(' ');
  return {
    name: job.spec.id,
    resources,
    workdir: job.bundleDir,
    setup: [t.setup, 'python3 -m pip install --quiet -e "./python-trainer[hf]"'].filter(Boolean).join('\n'),
    run: `cd ${WORKDIR} && PYTHONPATH=python-trainer PYTHONUNBUFFERED=1 ${argv}`,
  };
}

function taskFile(job: Pick<PreparedJob, 'jobDir'>): string {
  return path.join(job.jobDir, 'sky-task.yaml');
}

function launchArgv(job: PreparedJob): string[] {
  const t = target(job);
  return [
    'sky', 'launch', '-c', clusterName(job), taskFile(job), '--yes', '--detach-run',
    ...(t.idleMinutesToAutostop ? ['--idle-minutes-to-autostop', String(t.idleMinutesToAutostop)] : []),
    ...Object.keys(job.secrets).sort().flatMap((n) => ['--env', n]),
  ];
}

export const skypilotLauncher: Launcher = {
  kind: 'skypilot',

  plan(job: PreparedJob): LaunchPlan {
    return {
      target: 'skypilot',
      files: [{ path: taskFile(job), content: stringify(skyTask(job)) }],
      steps: [{ title: 'launch the cluster and start the job detached', argv: launchArgv(job), env: Object.keys(job.secrets).sort() }],
    };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    mkdirSync(job.jobDir, { recursive: true });
    writeFileSync(taskFile(job), stringify(skyTask(job)));
    log?.(`sky launch -c ${clusterName(job)} (provisioning can take minutes)`);
    const r = await run(launchArgv(job), { env: { ...process.env, ...job.secrets } });
    const m = /Job ID:\s*(\d+)/i.exec(`${r.stdout}\n${r.stderr}`);
    return { target: 'skypilot', cluster: clusterName(job), jobId: m ? Number(m[1]) : null };
  },

  async follow(handle: JobHandle, hooks: FollowHooks): Promise<JobExit> {
    const h = handle as SkyHandle;
    const code = await stream(['sky', 'logs', h.cluster, ...(h.jobId !== null ? [String(h.jobId)] : [])], hooks.onLine, { signal: hooks.signal });
    if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
    // sky logs exits 0 when the job succeeded and non-zero when it failed or was cancelled.
    return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code };
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handle as SkyHandle;
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(destDir, { recursive: true });
    await run(['rsync', '-Pavz', `${h.cluster}:${WORKDIR}/${job.spec.output.dir}/`, `${destDir}/`]);
    if (target(job).down && job.spec.phase.kind !== 'serve') await run(['sky', 'down', '-y', h.cluster]);
  },

  async cancel(handle: JobHandle, job): Promise<void> {
    const h = handle as SkyHandle;
    await run(['sky', 'cancel', '-y', h.cluster, ...(h.jobId !== null ? [String(h.jobId)] : ['--all'])], { allowFail: true });
    if (target(job).down) await run(['sky', 'down', '-y', h.cluster], { allowFail: true });
  },

  async forwardPort(handle: JobHandle, _job, remotePort: number): Promise<PortForward> {
    const h = handle as SkyHandle;
    const r = await run(['sky', 'status', '--endpoint', String(remotePort), h.cluster]);
    const endpoint = r.stdout.trim().split('\n').pop()!.trim().replace(/^https?:\/\//, '');
    if (!/^[\w.-]+:\d+$/.test(endpoint)) throw new RuntimeFailure(`sky status --endpoint ${remotePort} gave no host:port (${endpoint})`);
    return { url: `http://${endpoint}/v1`, close: () => undefined };
  },
};
