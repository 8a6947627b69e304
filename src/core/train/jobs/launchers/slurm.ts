import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer, type Socket } from 'node:net';
import { homedir } from 'node:os';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { ConfigError, RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { envLines, jobArgv, lastLines, pipe, run, shellQuote, sleep, stream } from './exec';
import { freePort } from './net';
import { handleOf, targetOf } from './narrow';
import { sshArgv, sshForward } from './ssh';

/**
 * A Slurm cluster. The job script (rollout-lab.sbatch, generated from the
 * job's resources and the target: partition, account, time limit,
 * --gres=gpu:N, cpus, memory, setup lines) goes into the bundle, the bundle
 * into a job folder on the cluster's shared filesystem, and `sbatch` submits
 * it, on this machine or on the target's login node over ssh (the ssh
 * launcher's options; the bundle travels as a tar stream). Following is one
 * constant script that prints the job's output file (job.log) from its first
 * byte as it grows and asks squeue about the job every pollSeconds; once Slurm
 * no longer runs it, it reports what sacct and scontrol say and the exit
 * status the job script left. Every end Slurm gives a job (time limit,
 * preemption, node failure, out of memory, a scancel from outside) ends the
 * job with that reason, and a job Slurm has forgotten without an exit status
 * is lost, never running. Cancel is scancel. Every command is an argument
 * array; the scripts are constants and their data travel as positional parameters.
 *
 * Secrets: the submit step reads NAME=VALUE lines from its standard input
 * (over the ssh connection, or a pipe here) into .rollout-lab-secrets in the
 * job folder, created 0600 (umask 077); the job script exports them and
 * deletes the file as it starts, and a cancel or the follower's end deletes it
 * if the job never started. They are never in the job script (Slurm keeps a
 * copy of it: `scontrol write batch_script`), an argument, or sbatch's
 * environment: sbatch copies its environment into the job (--export=ALL, its
 * default), which Slurm stores with the job and, where the site records job
 * environments, in its accounting database. So a local sbatch runs with this
 * process's environment minus the secrets' names. The file lives on the shared
 * filesystem, readable by the user only, while the job waits in the queue.
 */

type SlurmTarget = Extract<TargetConfig, { kind: 'slurm' }>;
type SshTarget = Extract<TargetConfig, { kind: 'ssh' }>;
type SlurmHandle = Extract<JobHandle, { target: 'slurm' }>;

export const SCRIPT_FILE = 'rollout-lab.sbatch';
const SECRETS_FILE = '.rollout-lab-secrets';
const CANCEL_MARK_FILE = '.rollout-lab-cancelled';
export const SLURM_MARK = '@@rollout-lab-slurm ';

/** sbatch options the target or the job decide: the target's sbatchOptions may not set them. */
const OWN_OPTIONS: Record<string, string> = {
  '--job-name': 'the job id names the job',
  '--output': 'the job writes job.log in its folder, which the follower reads',
  '--error': 'the job writes job.log in its folder, which the follower reads',
  '--chdir': 'the job runs in its folder (see "remoteDir")',
  '--parsable': 'Rollout Lab asks for it',
  '--wrap': 'the job script is Rollout Lab\'s',
  '--array': 'a training job is one task',
  '--export': 'the secrets reach the job out of band (see the README)',
  '--requeue': 'a job Slurm ends is reported with its reason, not run again unseen',
  '--no-requeue': 'Rollout Lab sets it',
  '--open-mode': 'job.log is written once',
  '--partition': 'use the target\'s "partition"',
  '--account': 'use the target\'s "account"',
  '--qos': 'use the target\'s "qos"',
  '--time': 'use the target\'s "timeLimit"',
  '--gres': 'use the target\'s "gpus" and "gpuType"',
  '--gpus': 'use the target\'s "gpus" and "gpuType"',
  '--cpus-per-task': 'use the target\'s "cpus"',
  '--mem': 'use the target\'s "memoryGb"',
};

// $1 the job folder. Replaces whatever an earlier launch of the same id left.
const UNPACK = 'rm -rf "$1" && mkdir -p "$1" && tar -xzf - -C "$1"';

// $1 the job folder; the secrets arrive as NAME=VALUE lines on stdin. Prints the job id (sbatch --parsable: ID[;CLUSTER]).
const SUBMIT = [
  'cd "$1" || exit 97',
  'command -v sbatch >/dev/null 2>&1 || { echo "sbatch is not on PATH" >&2; exit 96; }',
  `rm -f exit-code exit-code.tmp job.log ${CANCEL_MARK_FILE} ${SECRETS_FILE}`,
  `(umask 077 && cat > ${SECRETS_FILE}) || exit 95`,
  `[ -s ${SECRETS_FILE} ] || rm -f ${SECRETS_FILE}`,
  `sbatch --parsable ${SCRIPT_FILE} || { c=$?; rm -f ${SECRETS_FILE}; exit "$c"; }`,
].join('\n');

// $1 the job folder, $2 the job id, $3 seconds between squeue calls. job.log from its first byte as it grows (byte
// offsets: nothing printed twice or lost), a "queue" report per squeue call; once the job is in none of the states
// of a job Slurm still runs (or squeue no longer knows it), what sacct and scontrol say, the exit status the job
// script left and whether Rollout Lab cancelled it. A report may follow a log line without its newline: the reader
// joins that line's parts.
const FOLLOW = [
  'cd "$1" || exit 97',
  `id=$2; every=$3; M='${SLURM_MARK}'`,
  'n=0; t=0; fails=0; q=; settle=0',
  'drain() { [ -f job.log ] || return 0; s=$(( $(wc -c < job.log) + 0 )); if [ "$s" -gt "$n" ]; then tail -c +$((n+1)) job.log | head -c $((s-n)); n=$s; fi; }',
  'while :; do',
  '  drain',
  '  if [ "$t" -le 0 ]; then',
  '    t=$every',
  `    if q=$(squeue -h -t all -j "$id" -o '%T|%r|%N' 2>&1); then fails=0`,
  '    else',
  '      case "$q" in',
  '        *"Invalid job id"*) q= ;;',
  '        *) fails=$((fails+1)); echo "${M}squeue-failed $fails $(printf %s "$q" | tr "\\n" " ")"',
  '           if [ "$fails" -ge 30 ]; then echo "${M}unreachable"; exit 0; fi',
  '           sleep 1; t=$((t-1)); continue ;;',
  '      esac',
  '    fi',
  '    q=$(printf %s "$q" | head -n 1)',
  '    echo "${M}queue $q"',
  '    case "${q%%|*}" in',
  '      PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|STOPPED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESIZING|SIGNALING|STAGE_OUT|RESV_DEL_HOLD) ;;',
  // Ended with an exit status: wait a little for the one the job script writes last (a shared filesystem may be behind).
  '      COMPLETED|FAILED) if [ -f exit-code ] || [ "$settle" -ge 10 ]; then break; fi; settle=$((settle+1)); t=1 ;;',
  '      *) break ;;',
  '    esac',
  '  fi',
  '  sleep 1; t=$((t-1))',
  'done',
  'drain',
  `rm -f ${SECRETS_FILE}`,
  'echo "${M}sacct $(sacct -j "$id" -X -n -P -o State,ExitCode,Reason 2>&1 | head -n 1)"',
  'echo "${M}scontrol $(scontrol -o show job "$id" 2>&1 | head -n 1)"',
  '[ -f exit-code ] && echo "${M}exit $(cat exit-code)"',
  `[ -f ${CANCEL_MARK_FILE} ] && echo "\${M}cancelled-here"`,
  'echo "${M}end"',
].join('\n');

// $1 the job folder, $2 the job id. The mark tells the follower the end was Rollout Lab's; a job that never started takes its secrets with it.
const CANCEL = [`cd "$1" 2>/dev/null && touch ${CANCEL_MARK_FILE} && rm -f ${SECRETS_FILE}`, 'scancel "$2"'].join('\n');

const RECONNECT_WAIT_MS = [1000, 3000, 10_000];

// ---------------------------------------------------------------- the job script

function checkOptions(t: SlurmTarget): void {
  for (const o of t.sbatchOptions) {
    const name = o.split('=')[0]!;
    const why = OWN_OPTIONS[name];
    if (why) throw new ConfigError(`the slurm target's sbatchOptions may not set ${name}: ${why}`);
  }
}

/** The job's folder on the cluster: remoteDir/ID (relative to the login folder over ssh), or the bundle itself. */
export function slurmJobDir(job: Pick<PreparedJob, 'spec' | 'target' | 'bundleDir'>): string {
  const t = targetOf(job, 'slurm');
  const base = t.remoteDir ?? (t.host ? 'rollout-lab-jobs' : null);
  if (base === null) return job.bundleDir;
  if (t.host) {
    const rel = base.replace(/^~(\/|$)/, '').replace(/\/+$/, '');
    return rel ? `${rel}/${job.spec.id}` : job.spec.id;
  }
  const local = base.replace(/^~(?=\/|$)/, homedir());
  if (!path.isAbsolute(local)) throw new ConfigError(`the slurm target's remoteDir "${base}" must be an absolute folder when sbatch runs on this machine (no "host")`);
  return path.join(local, job.spec.id);
}

/** Megabytes for --mem (whole numbers: Slurm takes no fractions). */
function memoryMb(gb: number): number {
  return Math.ceil(gb * 1024);
}

/** The #SBATCH options of a job on the target, in the order they appear in the script. */
export function sbatchDirectives(job: Pick<PreparedJob, 'spec' | 'target'>): string[] {
  const t = targetOf(job, 'slurm');
  checkOptions(t);
  const r = job.spec.resources;
  return [
    `--job-name=${job.spec.id}`,
    '--output=job.log',
    '--no-requeue',
    '--nodes=1',
    '--ntasks=1',
    ...(t.partition ? [`--partition=${t.partition}`] : []),
    ...(t.account ? [`--account=${t.account}`] : []),
    ...(t.qos ? [`--qos=${t.qos}`] : []),
    ...(t.timeLimit ? [`--time=${t.timeLimit}`] : []),
    ...(r.gpus > 0 ? [`--gres=gpu:${r.gpuType ? `${r.gpuType}:` : ''}${r.gpus}`] : []),
    ...(r.cpus ? [`--cpus-per-task=${r.cpus}`] : []),
    ...(r.memoryGb ? [`--mem=${memoryMb(r.memoryGb)}M`] : []),
    ...t.sbatchOptions,
  ];
}

/** The job script sbatch runs in the job folder: the directives, the secrets, the setup lines, the trainer, its exit status. */
export function sbatchScript(job: Pick<PreparedJob, 'spec' | 'target'>): string {
  const t = targetOf(job, 'slurm');
  return [
    '#!/bin/bash',
    `# Rollout Lab job ${job.spec.id}, submitted with: sbatch --parsable ${SCRIPT_FILE} (in the job folder)`,
    ...sbatchDirectives(job).map((d) => `#SBATCH ${d}`),
    '',
    '# The secrets: NAME=VALUE lines the submit step wrote (0600), into the environment; the file goes at once.',
    `if [ -f ${SECRETS_FILE} ]; then`,
    `  while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done < ${SECRETS_FILE}`,
    `  rm -f ${SECRETS_FILE}`,
    'fi',
    ...(t.setup.length ? ['', '# The target\'s setup lines: the first that fails ends the job with its status.', 'set -e', ...t.setup, 'set +e'] : []),
    '',
    'export PYTHONPATH="$PWD/python-trainer${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1',
    jobArgv(job.spec.command, t.python).map(shellQuote).join(' '),
    'c=$?',
    'echo "$c" > exit-code.tmp && mv exit-code.tmp exit-code',
    'exit "$c"',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------- where the commands run

function sshTargetOf(t: SlurmTarget, host: string): SshTarget {
  return { kind: 'ssh', host, port: t.port, identityFile: t.identityFile, options: t.options, remoteDir: '', python: t.python, gpus: t.gpus };
}

/** The command on the cluster's side: as it is here, or through ssh to the login node. */
function onCluster(t: SlurmTarget, host: string | null, argv: string[]): string[] {
  return host ? sshArgv(sshTargetOf(t, host), argv) : argv;
}

/** Where the cluster commands run, in words. */
function where(host: string | null): string {
  return host ?? 'this machine';
}

/** This process's environment without the secrets' names: what a local sbatch copies into the job. */
function envWithout(names: string[]): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const n of names) delete env[n];
  return env;
}

interface Steps {
  pack: PlannedStep | null;
  unpack: PlannedStep | null;
  submit: PlannedStep;
}

function launchSteps(job: PreparedJob, mask: boolean): Steps {
  const t = targetOf(job, 'slurm');
  const host = t.host ?? null;
  const dir = slurmJobDir(job);
  const copy = dir !== job.bundleDir;
  const secrets = envLines(job.secrets, mask);
  return {
    pack: copy ? { title: 'pack the bundle (its output is the next step\'s input)', argv: ['tar', '-C', job.bundleDir, '-czf', '-', '.'] } : null,
    unpack: copy ? { title: `unpack it into ${dir} on ${where(host)}`, argv: onCluster(t, host, ['sh', '-c', UNPACK, 'rollout-lab-unpack', dir]), stdin: '(the tar stream of the step above)' } : null,
    submit: {
      title: `submit ${SCRIPT_FILE} with sbatch in ${dir} on ${where(host)}; the secrets go on stdin into a 0600 file the job script reads and deletes`,
      argv: onCluster(t, host, ['sh', '-c', SUBMIT, 'rollout-lab-submit', dir]),
      ...(secrets ? { stdin: secrets } : {}),
    },
  };
}

// ---------------------------------------------------------------- the end of a job

/** What the follow script reported once Slurm no longer ran the job. */
export interface SlurmReport {
  /** The last squeue answer, STATE|REASON|NODES ("" when squeue no longer knows the job). */
  queue: string;
  /** sacct's STATE|EXITCODE|REASON, or its complaint (accounting disabled). */
  sacct: string;
  /** scontrol -o show job, or its complaint. */
  scontrol: string;
  /** The exit status the job script wrote, when it got that far. */
  exit: number | null;
  /** Rollout Lab's cancel marked the job folder. */
  cancelledHere: boolean;
}

/** A field of `scontrol -o show job` (KEY=VALUE ...). */
function scontrolField(line: string, key: string): string | null {
  const m = new RegExp(`(?:^|\\s)${key}=(\\S*)`).exec(line);
  return m ? m[1]! : null;
}

/** "0:15" → the script's status, or 128 + the signal that ended it. */
function exitOf(code: string | null | undefined): number | null {
  const m = /^(\d+):(\d+)$/.exec(code ?? '');
  if (!m) return null;
  const [status, signal] = [Number(m[1]), Number(m[2])];
  return signal ? 128 + signal : status;
}

/** Slurm's final word on a job: the state (sacct's, else scontrol's, else squeue's last), who cancelled it, its exit code and reason. */
export function slurmFinalState(r: SlurmReport): { state: string | null; by: string | null; exitCode: number | null; reason: string | null; timeLimit: string | null; nodes: string | null } {
  const sacct = r.sacct.split('|');
  const sacctState = sacct.length >= 2 && /^[A-Z_]+( by \d+)?$/.test(sacct[0]!.trim()) ? sacct[0]!.trim() : null;
  const scontrolState = scontrolField(r.scontrol, 'JobState');
  const queueState = r.queue.split('|')[0] || null;
  const full = sacctState ?? scontrolState ?? queueState;
  const m = full ? /^([A-Z_]+)(?: by (\d+))?$/.exec(full) : null;
  const reason = (sacctState ? sacct[2]?.trim() : null) ?? scontrolField(r.scontrol, 'Reason') ?? (r.queue.split('|')[1] || null);
  return {
    state: m ? m[1]! : null,
    by: m?.[2] ?? null,
    exitCode: exitOf(sacctState ? sacct[1]?.trim() : scontrolField(r.scontrol, 'ExitCode')),
    reason: reason && reason !== 'None' ? reason : null,
    timeLimit: scontrolField(r.scontrol, 'TimeLimit'),
    nodes: scontrolField(r.scontrol, 'NodeList') ?? (r.queue.split('|')[2] || null),
  };
}

/** How a job ended, from the follow script's report: Slurm's state first, the job script's exit status when Slurm has forgotten the job. */
export function slurmExit(r: SlurmReport, h: Pick<SlurmHandle, 'jobId' | 'dir' | 'host'>, t: Pick<SlurmTarget, 'timeLimit' | 'memoryGb'>): JobExit {
  const f = slurmFinalState(r);
  const ended = (what: string): JobExit => ({ state: 'failed', exitCode: f.exitCode, detail: `Slurm ended the job: ${what} (job ${h.jobId}${f.reason ? `, reason ${f.reason}` : ''})` });
  switch (f.state) {
    case 'COMPLETED':
      return { state: 'succeeded', exitCode: r.exit ?? f.exitCode ?? 0 };
    case 'FAILED': {
      const code = r.exit ?? f.exitCode;
      return { state: 'failed', exitCode: code, ...(r.exit === null ? { detail: `the job failed on Slurm (job ${h.jobId}, exit code ${code ?? 'unknown'}${f.reason ? `, reason ${f.reason}` : ''}) before the trainer's exit status was written: a setup line failed, or the trainer could not start — see job.log` } : {}) };
    }
    case 'TIMEOUT':
      return ended(`time limit (${f.timeLimit ?? t.timeLimit ?? 'the partition\'s'}) reached — raise the target's "timeLimit"`);
    case 'CANCELLED':
      if (r.cancelledHere) return { state: 'cancelled', exitCode: f.exitCode, detail: `cancelled by Rollout Lab (scancel ${h.jobId})` };
      return ended(`cancelled outside Rollout Lab (scancel${f.by !== null ? ` by user id ${f.by}` : ''})`);
    case 'PREEMPTED':
      return ended('preempted by another job (not requeued: launch it again)');
    case 'NODE_FAIL':
      return ended(`its node failed${f.nodes && f.nodes !== '(null)' ? ` (${f.nodes})` : ''}`);
    case 'OUT_OF_MEMORY':
      return ended(`out of memory${t.memoryGb ? ` (it asked for ${t.memoryGb} GB)` : ''} — raise the target's "memoryGb"`);
    case 'BOOT_FAIL':
      return ended('its node failed to boot');
    case 'DEADLINE':
      return ended('its deadline passed');
    case null:
      break;
    default:
      return ended(f.state);
  }
  if (r.exit !== null) return { state: r.exit === 0 ? 'succeeded' : 'failed', exitCode: r.exit };
  return {
    state: 'failed',
    exitCode: null,
    detail: `the job is lost: Slurm on ${where(h.host)} knows no job ${h.jobId} any more (squeue, sacct, scontrol) and it left no exit status in ${h.dir} — it ended unseen (killed, or forgotten by a cluster without accounting); see job.log`,
  };
}

/** A squeue answer as a line for the log: "[slurm] job 12: PENDING (Priority)", "[slurm] job 12: RUNNING on node1". */
function queueLine(jobId: string, q: string): string | null {
  const [state, reason, nodes] = q.split('|');
  if (!state) return null;
  const on = state === 'RUNNING' && nodes ? ` on ${nodes}` : '';
  const why = reason && reason !== 'None' ? ` (${reason})` : '';
  return `[slurm] job ${jobId}: ${state}${on}${why}`;
}

// ---------------------------------------------------------------- ports

/** 127.0.0.1:localPort (a free port when none is given) relayed to host:port: a served job on a compute node this machine reaches. */
async function relay(host: string, port: number, localPort?: number): Promise<PortForward> {
  const local = localPort ?? (await freePort());
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ host, port });
    sockets.add(client).add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(new RuntimeFailure(`cannot listen on 127.0.0.1:${local} to relay ${host}:${port}: ${e.message}`)));
    server.listen(local, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://127.0.0.1:${local}/v1`,
    close: () => {
      server.close();
      sockets.forEach((s) => s.destroy());
    },
  };
}

// ---------------------------------------------------------------- the launcher

export const slurmLauncher: Launcher = {
  kind: 'slurm',

  plan(job: PreparedJob): LaunchPlan {
    const s = launchSteps(job, true);
    return {
      target: 'slurm',
      files: [{ path: path.join(job.bundleDir, SCRIPT_FILE), content: sbatchScript(job) }],
      steps: [s.pack, s.unpack, s.submit].filter((x): x is PlannedStep => x !== null),
    };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    const t = targetOf(job, 'slurm');
    const host = t.host ?? null;
    const dir = slurmJobDir(job);
    writeFileSync(path.join(job.bundleDir, SCRIPT_FILE), sbatchScript(job));
    const s = launchSteps(job, false);
    const env = envWithout(Object.keys(job.secrets));
    if (s.pack && s.unpack) {
      log?.(`copying the bundle to ${where(host)}:${dir}`);
      await pipe(s.pack.argv, s.unpack.argv, { env });
    }
    const r = await run(s.submit.argv, { stdin: s.submit.stdin, env, allowFail: true });
    if (r.code === 96) throw new RuntimeFailure(`sbatch is not on PATH on ${where(host)} — ${host ? 'is the host a login node of the cluster?' : 'install Slurm\'s client commands (apt-get install slurm-client, or load the cluster\'s module) or set the target\'s "host" to a login node'}`);
    if (r.code === 97) throw new RuntimeFailure(`the job folder ${dir} is not on ${where(host)}`);
    if (r.code !== 0) throw new RuntimeFailure(`sbatch on ${where(host)} refused the job (status ${r.code}): ${lastLines(r.stderr, 3) || lastLines(r.stdout, 3) || 'no reason given'}`);
    const jobId = /^(\d+)(;\S+)?$/.exec(r.stdout.trim().split('\n').pop()?.trim() ?? '')?.[1];
    if (!jobId) throw new RuntimeFailure(`sbatch on ${where(host)} gave no job id: ${lastLines(r.stdout, 3) || lastLines(r.stderr, 3) || 'nothing'}`);
    log?.(`submitted to Slurm on ${where(host)} as job ${jobId} (folder ${dir})`);
    return { target: 'slurm', host, dir, jobId };
  },

  async follow(handle: JobHandle, hooks: FollowHooks, job): Promise<JobExit> {
    const h = handleOf(handle, 'slurm');
    const t = targetOf(job, 'slurm');
    const argv = onCluster(t, h.host, ['sh', '-c', FOLLOW, 'rollout-lab-follow', h.dir, h.jobId, String(t.pollSeconds)]);
    // A dropped connection reconnects; the script starts over, so log lines already handed out are skipped.
    let emitted = 0;
    let failures = 0;
    let lastQueue = '';
    for (;;) {
      let index = 0;
      let partial = '';
      let progressed = false;
      const report: SlurmReport = { queue: '', sacct: '', scontrol: '', exit: null, cancelledHere: false };
      let ended = false;
      let unreachable = false;
      const logLine = (text: string): void => {
        if (index++ < emitted) return;
        emitted++;
        progressed = true;
        hooks.onLine(text);
      };
      const r = await stream(
        argv,
        (line) => {
          const at = line.indexOf(SLURM_MARK);
          if (at < 0) {
            logLine(partial + line);
            partial = '';
            return;
          }
          partial += line.slice(0, at);
          const body = line.slice(at + SLURM_MARK.length);
          const [word = '', ...rest] = body.split(' ');
          const value = rest.join(' ');
          progressed = true;
          if (word === 'queue') {
            report.queue = value;
            const shown = queueLine(h.jobId, value);
            if (shown && value !== lastQueue) hooks.onLine(shown);
            lastQueue = value;
          } else if (word === 'squeue-failed') hooks.onLine(`[slurm] squeue failed (${value})`);
          else if (word === 'unreachable') unreachable = true;
          else if (word === 'sacct') report.sacct = value;
          else if (word === 'scontrol') report.scontrol = value;
          else if (word === 'exit') report.exit = /^\d+$/.test(value.trim()) ? Number(value.trim()) : null;
          else if (word === 'cancelled-here') report.cancelledHere = true;
          else if (word === 'end') ended = true;
        },
        { signal: hooks.signal, stderr: 'capture' },
      );
      if (partial) logLine(partial);
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      if (ended) return slurmExit(report, h, t);
      if (unreachable) return { state: 'failed', exitCode: null, detail: `squeue on ${where(h.host)} kept failing (${lastQueue || 'see job.log'}) — the job may still run: follow it again to reattach` };
      if (r.code === 97) return { state: 'failed', exitCode: null, detail: `the job folder ${h.dir} is not on ${where(h.host)}` };
      const why = lastLines(r.stderr, 2) || `the follower exited with status ${r.code}`;
      failures = progressed ? 1 : failures + 1;
      if (failures > RECONNECT_WAIT_MS.length) {
        return { state: 'failed', exitCode: null, detail: `lost touch with Slurm job ${h.jobId} on ${where(h.host)} while following (${why}) — the job may still run: follow it again to reattach` };
      }
      await sleep(RECONNECT_WAIT_MS[failures - 1]!, hooks.signal);
    }
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handleOf(handle, 'slurm');
    const t = targetOf(job, 'slurm');
    const from = `${h.dir}/${job.spec.output.dir}`;
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(destDir, { recursive: true });
    if (h.host) {
      await pipe(onCluster(t, h.host, ['tar', '-czf', '-', '-C', from, '.']), ['tar', '-xzf', '-', '-C', path.resolve(destDir)]);
      return;
    }
    // The shared filesystem: the job folder is on this machine.
    if (!existsSync(from)) throw new RuntimeFailure(`the job wrote no ${job.spec.output.dir}/ in ${h.dir}`);
    cpSync(from, destDir, { recursive: true });
  },

  async cancel(handle: JobHandle, job): Promise<void> {
    const h = handleOf(handle, 'slurm');
    await run(onCluster(targetOf(job, 'slurm'), h.host, ['sh', '-c', CANCEL, 'rollout-lab-cancel', h.dir, h.jobId]));
  },

  async forwardPort(handle: JobHandle, job, remotePort: number, localPort?: number): Promise<PortForward> {
    const h = handleOf(handle, 'slurm');
    const t = targetOf(job, 'slurm');
    const q = await run(onCluster(t, h.host, ['squeue', '-h', '-j', h.jobId, '-o', '%N']));
    const node = q.stdout.trim().split('\n').pop()?.trim() ?? '';
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(node)) throw new RuntimeFailure(`Slurm job ${h.jobId} runs on no node squeue names (${node || 'none'}) — is it still running?`);
    if (!h.host) return relay(node, remotePort, localPort);
    // Through the login node: ssh -L to the compute node's port.
    return sshForward(sshTargetOf(t, h.host), node, remotePort, localPort);
  },
};
