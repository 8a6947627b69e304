import { closeSync, mkdirSync, openSync, readSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { SlurmWorkersConfig } from '../../config/workersSchema';
import { ConfigError, RuntimeFailure } from '../../errors';
import { run, type LineSplitter } from '../jobs/launchers/exec';
import { COORDINATED_ENV } from '../../rollout/batchPlan';
import { outputTail, shellWord, workerShellLine, workersDir, type WorkerGroup, type WorkerPlace, type WorkerRequest, type WorkerState, type WorkerStatus } from './workerPlace';

/**
 * `--on slurm`: one job array (`sbatch --array=0-(N-1)`), a task per slice,
 * each running `rollout-lab run --resume RUN --shard $SLURM_ARRAY_TASK_ID/N`
 * in the workspace, which every node must see (a shared filesystem: each
 * worker writes its own journals into the workspace's store, and the store
 * keeps one current attempt per rollout key whichever workers ran it). The
 * array is submitted with --requeue: a task Slurm preempts or requeues
 * (`scontrol requeue`, a node failure) runs again and redoes only the
 * rollouts of its slice that did not end. Each task appends to its own log,
 * worker-K.log in the run's folder under .rollout-lab/workers. The
 * coordinator follows the tasks with `scontrol show job` (it needs no
 * accounting database) and cancels with scancel.
 */

/** sbatch options the workers set themselves. */
const OWN_OPTIONS: Record<string, string> = {
  '--array': 'one task per slice',
  '--output': 'each task writes worker-K.log in the run\'s folder',
  '--error': 'each task writes worker-K.log in the run\'s folder',
  '--open-mode': 'a requeued task appends to its log',
  '--requeue': 'a task Slurm ends early is requeued and redoes only its unfinished rollouts',
  '--no-requeue': 'a task Slurm ends early is requeued and redoes only its unfinished rollouts',
  '--job-name': 'the run names the array',
  '--chdir': 'the workers run in the workspace',
  '--parsable': 'Rollout Lab asks for it',
  '--wrap': 'the job script is Rollout Lab\'s',
  '--partition': 'use workers.slurm.partition',
  '--account': 'use workers.slurm.account',
  '--qos': 'use workers.slurm.qos',
  '--time': 'use workers.slurm.timeLimit',
  '--cpus-per-task': 'use workers.slurm.cpus',
  '--mem': 'use workers.slurm.memoryGb',
};

export function slurmWorkerScript(req: WorkerRequest, cfg: SlurmWorkersConfig, dir: string): string {
  for (const opt of cfg.sbatchOptions) {
    const name = opt.split('=')[0]!;
    const why = OWN_OPTIONS[name];
    if (why) throw new ConfigError(`workers.slurm.sbatchOptions: ${name} is set by Rollout Lab (${why}); remove it`);
  }
  const directives = [
    `--job-name=rollout-lab-${req.runId}`,
    `--array=0-${req.count - 1}`,
    `--output=${path.join(dir, 'worker-%a.log')}`,
    '--open-mode=append',
    '--requeue',
    `--chdir=${req.workspace}`,
    `--cpus-per-task=${cfg.cpus}`,
    ...(cfg.partition ? [`--partition=${cfg.partition}`] : []),
    ...(cfg.account ? [`--account=${cfg.account}`] : []),
    ...(cfg.qos ? [`--qos=${cfg.qos}`] : []),
    ...(cfg.timeLimit ? [`--time=${cfg.timeLimit}`] : []),
    ...(cfg.memoryGb ? [`--mem=${Math.ceil(cfg.memoryGb * 1024)}M`] : []),
    ...cfg.sbatchOptions,
  ];
  for (const k of Object.keys(req.env ?? {})) if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new ConfigError(`"${k}" is not an environment variable name`);
  for (const d of directives) if (/\s/.test(d)) throw new ConfigError(`a Slurm directive may not contain spaces: "${d}" (move the workspace to a path without spaces)`);
  const line = workerShellLine(req, `"$SLURM_ARRAY_TASK_ID/${req.count}"`, { cli: cfg.cli });
  return [
    '#!/bin/bash',
    ...directives.map((d) => `#SBATCH ${d}`),
    `# Rollout Lab: the workers of run ${req.runId}, one array task per slice of ${req.count}.`,
    ...Object.entries(req.env ?? {}).map(([k, v]) => `export ${k}=${shellWord(v)}`),
    'set -e',
    ...cfg.setup,
    'set +e',
    'echo "rollout-lab worker: slice $SLURM_ARRAY_TASK_ID/' + req.count + ' on $(hostname), start ${SLURM_RESTART_COUNT:-0}" >&2',
    // exec: scancel's SIGTERM reaches the worker itself, which ends its rollouts in flight as cancelled.
    `exec ${line}`,
    '',
  ].join('\n');
}

const PENDING = new Set(['PENDING', 'CONFIGURING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED', 'RESV_DEL_HOLD', 'SUSPENDED', 'STOPPED']);
const RUNNING = new Set(['RUNNING', 'COMPLETING', 'SIGNALING', 'STAGE_OUT', 'RESIZING']);

/** An array task as `scontrol show job -o` gives it (one line per task; tasks not yet started share a line). */
export interface ArrayTaskRecord {
  tasks: number[];
  state: string;
  reason: string | null;
  exitCode: string | null;
  restarts: number;
}

const field = (line: string, key: string): string | null => new RegExp(`(?:^|\\s)${key}=(\\S*)`).exec(line)?.[1] ?? null;

/** "0-3", "1,3,5-7", "0-9%2" (a throttle): the task ids. */
export function arrayTaskIds(text: string): number[] {
  const ids: number[] = [];
  for (const part of text.split('%')[0]!.split(',')) {
    const m = /^(\d+)(?:-(\d+))?(?::(\d+))?$/.exec(part.trim());
    if (!m) continue;
    const from = Number(m[1]);
    const to = m[2] !== undefined ? Number(m[2]) : from;
    const step = m[3] !== undefined ? Number(m[3]) : 1;
    for (let i = from; i <= to; i += step) ids.push(i);
  }
  return ids;
}

export function parseScontrolJobs(text: string): ArrayTaskRecord[] {
  const out: ArrayTaskRecord[] = [];
  for (const line of text.split('\n')) {
    const ids = field(line, 'ArrayTaskId');
    const state = field(line, 'JobState');
    if (ids === null || state === null) continue;
    out.push({ tasks: arrayTaskIds(ids), state, reason: field(line, 'Reason'), exitCode: field(line, 'ExitCode'), restarts: Number(field(line, 'Restarts') ?? 0) || 0 });
  }
  return out;
}

/** A task's state as the coordinator sees it, from Slurm's. */
export function workerStateOf(r: ArrayTaskRecord): { state: WorkerState; detail: string } {
  const exit = r.exitCode && r.exitCode !== '0:0' ? ` (exit ${r.exitCode.replace(/:0$/, '').replace(/^0:/, 'signal ')})` : '';
  const reason = r.reason && r.reason !== 'None' ? `: ${r.reason}` : '';
  if (PENDING.has(r.state)) return { state: 'pending', detail: `${r.state}${reason}` };
  if (RUNNING.has(r.state)) return { state: 'running', detail: r.state };
  if (r.state === 'COMPLETED') return { state: 'succeeded', detail: 'COMPLETED' };
  if (r.state === 'CANCELLED') return { state: 'cancelled', detail: `CANCELLED${exit}` };
  // FAILED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED (without a requeue), BOOT_FAIL, DEADLINE.
  return { state: 'failed', detail: `${r.state}${exit}${reason}` };
}

/** The new bytes of a growing log, from an offset. */
function readFrom(file: string, offset: number): { text: Buffer; size: number } {
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return { text: Buffer.alloc(0), size: offset };
  }
  if (size <= offset) return { text: Buffer.alloc(0), size };
  const fd = openSync(file, 'r');
  try {
    const buf = Buffer.alloc(size - offset);
    readSync(fd, buf, 0, buf.length, offset);
    return { text: buf, size };
  } finally {
    closeSync(fd);
  }
}

export function slurmWorkers(cfg: SlurmWorkersConfig): WorkerPlace {
  return {
    name: 'slurm',
    async start(req: WorkerRequest): Promise<WorkerGroup> {
      const dir = workersDir(req.workspace, req.runId);
      mkdirSync(dir, { recursive: true });
      const script = path.join(dir, 'workers.sbatch');
      writeFileSync(script, slurmWorkerScript(req, cfg, dir), { mode: 0o755 });
      const submitted = await run(['sbatch', '--parsable', `--export=ALL,${COORDINATED_ENV}=1`, script]).catch((e: Error) => {
        if (/not installed or not on PATH/.test(e.message)) {
          throw new RuntimeFailure(
            'sbatch is not on PATH: --on slurm submits the job array from this machine, so run the coordinator on a login node of the cluster (where sbatch, scontrol and scancel work), in a workspace on the filesystem the nodes share',
          );
        }
        throw e;
      });
      const jobId = submitted.stdout.trim().split(';')[0]!;
      if (!/^\d+$/.test(jobId)) throw new Error(`sbatch answered "${submitted.stdout.trim()}", not a job id`);
      const logs = Array.from({ length: req.count }, (_, k) => ({ file: path.join(dir, `worker-${k}.log`), offset: 0, tail: [] as string[], lines: null as LineSplitter | null }));
      const last: WorkerStatus[] = Array.from({ length: req.count }, (_, shard) => ({ shard, state: 'pending', detail: 'submitted', restarts: 0 }));
      const group: WorkerGroup = {
        label: `Slurm job array ${jobId} (${req.count} task${req.count > 1 ? 's' : ''}; logs in ${dir})`,
        pollMs: cfg.pollSeconds * 1000,
        async poll() {
          for (const [k, log] of logs.entries()) {
            log.lines ??= outputTail(log.tail, (line) => group.onLine?.(k, line));
            const { text, size } = readFrom(log.file, log.offset);
            // A log that shrank was started anew (a requeued task without append): read it from its start.
            log.offset = size < log.offset ? 0 : size;
            if (text.length) log.lines.push(text);
          }
          const answer = await run(['scontrol', 'show', 'job', jobId, '-o'], { allowFail: true });
          if (answer.code !== 0) {
            // Purged after MinJobAge: a task seen ending keeps its end; one still running when it went is lost.
            if (/invalid job id/i.test(answer.stderr)) {
              for (const w of last) if (w.state === 'pending' || w.state === 'running') Object.assign(w, { state: 'lost', detail: `Slurm no longer knows array task ${jobId}_${w.shard}` });
              return last.map((w) => ({ ...w }));
            }
            throw new Error(`scontrol show job ${jobId} failed: ${answer.stderr.trim() || `exit ${answer.code}`}`);
          }
          for (const r of parseScontrolJobs(answer.stdout)) {
            const { state, detail } = workerStateOf(r);
            for (const k of r.tasks) if (k < req.count) last[k] = { shard: k, state, detail, restarts: r.restarts };
          }
          return last.map((w) => ({ ...w }));
        },
        async tail(shard) {
          return [...(logs[shard]?.tail ?? [])];
        },
        async cancel() {
          await run(['scancel', jobId]);
        },
        rerun: (shard) => `sbatch --array=${shard} ${shellWord(script)}`,
      };
      return group;
    },
  };
}
