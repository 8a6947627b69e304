import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { envLines, jobArgv, run, shellQuote, sleep, stream } from './exec';

/**
 * A GPU box over SSH: the bundle goes over with scp, a constant remote script
 * reads the secrets from standard input, exports them and starts the job
 * detached (setsid + nohup), recording its exit status; following is `tail -F`
 * of the remote log until that status appears. Every command is an argument
 * array here; on the far side each argument is single-quoted.
 */

type SshTarget = Extract<TargetConfig, { kind: 'ssh' }>;
type SshHandle = Extract<JobHandle, { target: 'ssh' }>;

const EXIT_MARK = '@@rollout-lab-exit ';

// $1 job dir; then the job's argv. Secrets arrive as NAME=VALUE lines on stdin.
const START = [
  'cd "$1" || exit 97; shift',
  'while IFS= read -r kv; do export "$kv"; done',
  'export PYTHONPATH="$PWD/python-trainer${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1',
  'rm -f exit-code',
  'nohup setsid sh -c \'"$@"; c=$?; echo "$c" > exit-code.tmp && mv exit-code.tmp exit-code\' rollout-lab-job "$@" > job.log 2>&1 < /dev/null &',
  'echo "$!"',
].join('\n');

// $1 job dir: the log from its start until the exit status exists, then the status.
const FOLLOW = [
  'cd "$1" || exit 97',
  'touch job.log; tail -n +1 -F job.log 2>/dev/null & t=$!',
  'while [ ! -f exit-code ]; do sleep 1; done',
  'sleep 1; kill "$t" 2>/dev/null',
  `echo "${EXIT_MARK}$(cat exit-code)"`,
].join('\n');

function target(job: Pick<PreparedJob, 'target'>): SshTarget {
  if (job.target.kind !== 'ssh') throw new RuntimeFailure('not an ssh target');
  return job.target;
}

function sshOptions(t: SshTarget, forScp = false): string[] {
  return [
    '-o', 'BatchMode=yes',
    ...(t.port ? [forScp ? '-P' : '-p', String(t.port)] : []),
    ...(t.identityFile ? ['-i', t.identityFile] : []),
    ...t.options.flatMap((o) => ['-o', o]),
  ];
}

/** The remote side of `ssh HOST -- COMMAND`: a shell command line, every argument quoted. */
function remote(t: SshTarget, argv: string[]): string[] {
  return ['ssh', ...sshOptions(t), t.host, '--', argv.map(shellQuote).join(' ')];
}

function remoteDir(t: SshTarget, id: string): string {
  return `${t.remoteDir.replace(/\/+$/, '')}/${id}`;
}

function steps(job: PreparedJob, mask: boolean): PlannedStep[] {
  const t = target(job);
  const dir = remoteDir(t, job.spec.id);
  return [
    { title: 'make the job folder on the host', argv: remote(t, ['mkdir', '-p', t.remoteDir]) },
    { title: 'copy the bundle', argv: ['scp', ...sshOptions(t, true), '-r', '-q', job.bundleDir, `${t.host}:${dir}`] },
    {
      title: 'start the trainer detached (secrets on stdin)',
      argv: remote(t, ['sh', '-c', START, 'rollout-lab-start', dir, ...jobArgv(job.spec.command, t.python)]),
      stdin: envLines(job.secrets, mask),
    },
  ];
}

export const sshLauncher: Launcher = {
  kind: 'ssh',

  plan(job: PreparedJob): LaunchPlan {
    return { target: 'ssh', files: [], steps: steps(job, true) };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    const t = target(job);
    const [mkdir, copy, start] = steps(job, false);
    await run(mkdir!.argv);
    // scp -r into an existing folder would nest the bundle inside it.
    await run(remote(t, ['rm', '-rf', remoteDir(t, job.spec.id)]));
    log?.(`copying the bundle to ${t.host}:${remoteDir(t, job.spec.id)}`);
    await run(copy!.argv);
    const r = await run(start!.argv, { stdin: start!.stdin });
    const pid = Number.parseInt(r.stdout.trim().split('\n').pop() ?? '', 10);
    if (!Number.isInteger(pid)) throw new RuntimeFailure(`the job did not start on ${t.host}: ${r.stdout.trim() || r.stderr.trim()}`);
    return { target: 'ssh', host: t.host, remoteDir: remoteDir(t, job.spec.id), pid };
  },

  async follow(handle: JobHandle, hooks: FollowHooks, job): Promise<JobExit> {
    const h = handle as SshHandle;
    const t = target(job);
    let code: number | null = null;
    const status = await stream(
      remote(t, ['sh', '-c', FOLLOW, 'rollout-lab-follow', h.remoteDir]),
      (line) => {
        if (line.startsWith(EXIT_MARK)) code = Number.parseInt(line.slice(EXIT_MARK.length), 10);
        else hooks.onLine(line);
      },
      { signal: hooks.signal },
    );
    if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
    if (code === null) return { state: 'failed', exitCode: null, detail: `lost the connection to ${h.host} while following (ssh exited with ${status}) — the job may still run: rollout-lab jobs attach` };
    return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code };
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handle as SshHandle;
    const t = target(job);
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(path.dirname(destDir), { recursive: true });
    await run(['scp', ...sshOptions(t, true), '-r', '-q', `${h.host}:${h.remoteDir}/${job.spec.output.dir}`, destDir]);
  },

  async cancel(handle: JobHandle, job): Promise<void> {
    const h = handle as SshHandle;
    await run(remote(target(job), ['kill', '-TERM', '--', `-${h.pid}`]), { allowFail: true });
  },

  async forwardPort(_handle: JobHandle, job, remotePort: number, localPort?: number): Promise<PortForward> {
    const t = target(job);
    const port = localPort ?? (await freePort());
    const child = spawn('ssh', [...sshOptions(t), '-o', 'ExitOnForwardFailure=yes', '-N', '-L', `127.0.0.1:${port}:127.0.0.1:${remotePort}`, t.host], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new RuntimeFailure(`ssh -L ${port}:127.0.0.1:${remotePort} ${t.host} exited with ${child.exitCode}`);
      if (await accepts(port)) return { url: `http://127.0.0.1:${port}/v1`, close: () => void child.kill('SIGTERM') };
      await sleep(100);
    }
    child.kill('SIGTERM');
    throw new RuntimeFailure(`the port forward to ${t.host}:${remotePort} did not open`);
  },
};

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const c = createConnection({ port, host: '127.0.0.1' });
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}
