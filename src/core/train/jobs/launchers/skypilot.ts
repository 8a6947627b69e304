import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { exitFailure, lastLines, remoteCommandLine, run, stream } from './exec';
import { handleOf, targetOf } from './narrow';

/**
 * A cloud GPU through SkyPilot's CLI: a task YAML (resources, the bundle as
 * its workdir, setup installing python-trainer, run), `sky launch
 * --detach-run`, `sky logs --follow`, rsync of the outputs over the ssh alias
 * SkyPilot writes for the cluster, `sky cancel`, `sky down`. Secrets are
 * declared in the task's `secrets` without a value and passed as `--secret
 * NAME`, which SkyPilot fills from its own environment (and redacts in its
 * logs and YAML output): the values are only in the environment of the `sky`
 * process, never in the YAML or an argument. Where the cloud is set, it goes
 * in `infra` (SkyPilot's `cloud` and `region` fields are deprecated for it).
 */


/** Where SkyPilot syncs the workdir on the cluster (and where setup and run start). */
export const SKY_WORKDIR = '~/sky_workdir';

/** When the target says down, a cluster nobody fetched from still goes away after this idle time. */
const SAFETY_AUTODOWN_MINUTES = 60;

/** GPUs SkyPilot may choose from when the target names none ("any of", cheapest first). */
const ANY_GPU = ['L4', 'A10G', 'A10', 'L40S', 'A100', 'A100-80GB', 'H100'];

/** `sky logs` exit codes (sky.exceptions.JobExitCode). */
const SKY_EXIT = { succeeded: 0, failed: 100, notFinished: 101, notFound: 102, cancelled: 103 } as const;

const JOB_STATUSES = ['INIT', 'PENDING', 'SETTING_UP', 'RUNNING', 'SUCCEEDED', 'FAILED', 'FAILED_SETUP', 'FAILED_DRIVER', 'CANCELLED'] as const;

/** The documented task YAML fields Rollout Lab writes (docs.skypilot.co, reference/yaml-spec). */
export interface SkyTask {
  name: string;
  resources: {
    accelerators?: string | Record<string, number>;
    /** "cloud" or "cloud/region"; a region alone goes with the cloud "*" (any). */
    infra?: string;
    use_spot?: boolean;
    image_id?: string;
    cpus?: string;
    memory?: string;
    ports?: number[];
  };
  workdir: string;
  secrets?: Record<string, null>;
  setup: string;
  run: string;
}



/** The target's cluster, or one per job. */
export function clusterName(job: Pick<PreparedJob, 'spec' | 'target'>): string {
  return targetOf(job, 'skypilot').cluster ?? `rl-${job.spec.id}`;
}

export function skyTask(job: PreparedJob): SkyTask {
  const t = targetOf(job, 'skypilot');
  const r = job.spec.resources;
  const resources: SkyTask['resources'] = {};
  if (r.gpus > 0) resources.accelerators = r.gpuType ? `${r.gpuType}:${r.gpus}` : Object.fromEntries(ANY_GPU.map((g) => [g, r.gpus]));
  if (t.cloud || t.region) resources.infra = [t.cloud ?? '*', ...(t.region ? [t.region] : [])].join('/');
  if (t.useSpot) resources.use_spot = true;
  if (t.image) resources.image_id = t.image;
  if (r.cpus) resources.cpus = `${r.cpus}+`;
  if (r.memoryGb) resources.memory = `${r.memoryGb}+`;
  if (job.spec.serve) resources.ports = [job.spec.serve.port];
  const names = Object.keys(job.secrets).sort();
  return {
    name: job.spec.id,
    resources,
    workdir: job.bundleDir,
    ...(names.length ? { secrets: Object.fromEntries(names.map((n) => [n, null])) } : {}),
    setup: [t.setup?.trim(), 'python3 -m pip install --quiet -e "./python-trainer[hf]"'].filter(Boolean).join('\n'),
    // The command's arguments are quoted one by one: the run section is shell text.
    run: ['export PYTHONPATH="$PWD/python-trainer${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1', `exec ${remoteCommandLine(job.spec.command)}`].join('\n'),
  };
}

export function skyTaskYaml(job: PreparedJob): string {
  return `# Rollout Lab job ${job.spec.id}: sky launch -c ${clusterName(job)} sky-task.yaml\n${stringify(skyTask(job), { lineWidth: 0 })}`;
}

function taskFile(job: Pick<PreparedJob, 'jobDir'>): string {
  return path.join(job.jobDir, 'sky-task.yaml');
}

function launchStep(job: PreparedJob): PlannedStep {
  const t = targetOf(job, 'skypilot');
  const names = Object.keys(job.secrets).sort();
  const idle = t.idleMinutesToAutostop ?? (t.down ? SAFETY_AUTODOWN_MINUTES : undefined);
  return {
    title: 'provision the cluster (or reuse it), sync the bundle, run setup, start the job detached; secrets come from sky\'s environment',
    argv: [
      'sky', 'launch', '-c', clusterName(job), taskFile(job), '--yes', '--detach-run',
      ...(idle !== undefined ? ['--idle-minutes-to-autostop', String(idle)] : []),
      ...(t.down ? ['--down'] : []),
      ...names.flatMap((n) => ['--secret', n]),
    ],
    ...(names.length ? { env: names } : {}),
  };
}

/** Job output lines come prefixed "(task, pid=1234) " and colored: the trainer's events must start their line. */
export function cleanSkyLine(line: string): string {
  return line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/^\([^()]*pid=\d+\) /, '');
}

/** The job id in sky launch's output: "Job submitted, ID: 3" (or "Job ID: 3" in older versions). */
export function parseSkyJobId(output: string): number | null {
  const m = /Job (?:submitted, )?ID:\s*(\d+)/i.exec(cleanSkyLine(output));
  return m ? Number(m[1]) : null;
}

/** A job's status from `sky queue CLUSTER`: the row whose first column is its id. */
export function parseSkyQueueStatus(output: string, jobId: number | null): string | null {
  const rows = output
    .split('\n')
    .map((l) => cleanSkyLine(l).trim().split(/\s+/))
    .filter((cols) => /^\d+$/.test(cols[0] ?? ''));
  const row = jobId === null ? rows.sort((a, b) => Number(b[0]) - Number(a[0]))[0] : rows.find((cols) => Number(cols[0]) === jobId);
  return row?.find((c) => (JOB_STATUSES as readonly string[]).includes(c)) ?? null;
}

export const skypilotLauncher: Launcher = {
  kind: 'skypilot',

  plan(job: PreparedJob): LaunchPlan {
    return { target: 'skypilot', files: [{ path: taskFile(job), content: skyTaskYaml(job) }], steps: [launchStep(job)] };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    mkdirSync(job.jobDir, { recursive: true });
    writeFileSync(taskFile(job), skyTaskYaml(job));
    const step = launchStep(job);
    log?.(`sky launch -c ${clusterName(job)} (provisioning can take minutes)`);
    const lines: string[] = [];
    const r = await stream(
      step.argv,
      (line) => {
        const clean = cleanSkyLine(line);
        lines.push(clean);
        log?.(clean);
      },
      { env: { ...process.env, ...job.secrets } },
    );
    if (r.code !== 0) throw exitFailure(step.argv, r.code, lines.slice(-5).join('\n'));
    return { target: 'skypilot', cluster: clusterName(job), jobId: parseSkyJobId(lines.join('\n')) };
  },

  async follow(handle: JobHandle, hooks: FollowHooks): Promise<JobExit> {
    const h = handleOf(handle, 'skypilot');
    const job = h.jobId === null ? [] : [String(h.jobId)];
    const r = await stream(['sky', 'logs', '--follow', h.cluster, ...job], (line) => hooks.onLine(cleanSkyLine(line)), { signal: hooks.signal });
    if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
    if (r.code === SKY_EXIT.succeeded) return { state: 'succeeded', exitCode: 0 };
    if (r.code === SKY_EXIT.failed) return { state: 'failed', exitCode: null, detail: `the job failed on ${h.cluster} (sky logs ${h.cluster} ${job.join('')})` };
    if (r.code === SKY_EXIT.cancelled) return { state: 'failed', exitCode: null, detail: `the job was cancelled on ${h.cluster}` };
    // Anything else (the stream broke, an older sky): ask the job queue.
    const q = await run(['sky', 'queue', h.cluster], { allowFail: true });
    const status = q.code === 0 ? parseSkyQueueStatus(q.stdout, h.jobId) : null;
    if (status === 'SUCCEEDED') return { state: 'succeeded', exitCode: 0 };
    if (status?.startsWith('FAILED') || status === 'CANCELLED') return { state: 'failed', exitCode: null, detail: `the job is ${status} on ${h.cluster}` };
    return {
      state: 'failed',
      exitCode: null,
      detail: `sky logs ended with status ${r.code} while the job is ${status ?? 'unknown'} on ${h.cluster}${q.code === 0 ? '' : ` (sky queue: ${lastLines(q.stderr, 1)})`} — follow it again to reattach`,
    };
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handleOf(handle, 'skypilot');
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(destDir, { recursive: true });
    // SkyPilot adds a Host entry named after the cluster to ~/.ssh/config: rsync goes over it.
    await run(['rsync', '-Pavz', `${h.cluster}:${SKY_WORKDIR}/${job.spec.output.dir}/`, `${path.resolve(destDir)}/`]);
    if (targetOf(job, 'skypilot').down) await run(['sky', 'down', '-y', h.cluster]);
  },

  async cancel(handle: JobHandle, job): Promise<void> {
    const h = handleOf(handle, 'skypilot');
    await run(['sky', 'cancel', '-y', h.cluster, ...(h.jobId !== null ? [String(h.jobId)] : ['--all'])], { allowFail: true });
    if (targetOf(job, 'skypilot').down) await run(['sky', 'down', '-y', h.cluster]);
  },

  async forwardPort(handle: JobHandle, _job, remotePort: number): Promise<PortForward> {
    const h = handleOf(handle, 'skypilot');
    // The task opened the port (resources.ports): the endpoint is reachable as it is, nothing runs here.
    const r = await run(['sky', 'status', '--endpoint', String(remotePort), h.cluster]);
    const endpoint = cleanSkyLine(r.stdout.trim().split('\n').pop() ?? '').trim().replace(/^https?:\/\//, '').replace(/\/+$/, '');
    if (!/^[\w.-]+:\d+$/.test(endpoint)) throw new RuntimeFailure(`sky status --endpoint ${remotePort} ${h.cluster} gave no host:port (${endpoint || 'nothing'})`);
    return { url: `http://${endpoint}/v1`, close: () => undefined };
  },
};
