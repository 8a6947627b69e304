import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PlannedStep, PortForward, PreparedJob } from '../launcher';
import { background, envLines, jobArgv, lastLines, pipe, remoteCommandLine, run, sleep, stream } from './exec';
import { accepts, freePort } from './net';
import { handleOf, targetOf } from './narrow';

function sshTarget(job: Pick<PreparedJob, 'target'>): SshTarget {
  const t = targetOf(job, 'ssh');
  // A host that starts with "-" would be read as an ssh option (-oProxyCommand=...).
  if (t.host.startsWith('-')) throw new RuntimeFailure(`ssh host "${t.host}" may not start with "-"`);
  return t;
}

/**
 * A GPU box over SSH with the system's ssh and tar. The bundle travels as a
 * tar stream into `ssh HOST -- tar -x`; a constant remote script reads the
 * secrets from its standard input (NAME=VALUE lines), exports them and starts
 * the job detached (nohup + setsid, its own process group), recording its pid,
 * its output (job.log) and its exit status (exit-code) in the job folder.
 * Following is a remote loop that prints the log from its start until the
 * exit status exists, then a sentinel line with it: a reattach needs nothing
 * but the handle. Every remote command is an argument array, each argument
 * single-quoted for the remote shell; the scripts are constants and all data
 * travel as their positional parameters.
 */

type SshTarget = Extract<TargetConfig, { kind: 'ssh' }>;

export const EXIT_MARK = '@@rollout-lab-exit ';
const MARK_LINE = new RegExp(`${EXIT_MARK}(\\d+|lost)$`);

// $1 the job folder. Replaces whatever an earlier launch of the same id left.
const UNPACK = 'rm -rf "$1" && mkdir -p "$1" && tar -xzf - -C "$1"';

// $1 the job folder, then the job's argv; secrets arrive as NAME=VALUE lines on stdin.
const START = [
  'cd "$1" || exit 97',
  'shift',
  'while IFS= read -r kv; do export "$kv"; done',
  'export PYTHONPATH="$PWD/python-trainer${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1',
  'rm -f exit-code exit-code.tmp job.pid',
  's=; command -v setsid >/dev/null 2>&1 && s=setsid',
  // The inner shell leads the job's process group (setsid) and records its status; its trap keeps it alive through a TERM to the group.
  `nohup $s sh -c 'echo $$ > job.pid; trap : TERM INT HUP; "$@"; c=$?; echo "$c" > exit-code.tmp && mv exit-code.tmp exit-code' rollout-lab-job "$@" > job.log 2>&1 < /dev/null &`,
  'i=0; while [ ! -s job.pid ] && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i+1)); done',
  'cat job.pid',
].join('\n');

// $1 the job folder: job.log from its first byte, as it grows, then the sentinel with the exit status
// ("lost" when the process group is gone without one). Byte offsets, so nothing is printed twice or lost.
const FOLLOW = [
  'cd "$1" || exit 97',
  'n=0; g=0',
  'drain() { [ -f job.log ] || return 0; s=$(( $(wc -c < job.log) + 0 )); if [ "$s" -gt "$n" ]; then tail -c +$((n+1)) job.log | head -c $((s-n)); n=$s; fi; }',
  'while :; do',
  `  if [ -f exit-code ]; then drain; echo "${EXIT_MARK}$(cat exit-code)"; exit 0; fi`,
  '  drain',
  '  if [ -s job.pid ] && ! kill -0 "-$(cat job.pid)" 2>/dev/null; then g=$((g+1)); else g=0; fi',
  `  if [ "$g" -ge 3 ]; then drain; echo "${EXIT_MARK}lost"; exit 0; fi`,
  '  sleep 1',
  'done',
].join('\n');

// $1 the job's process group: TERM, up to 10 s to end, then KILL.
const CANCEL = [
  'kill -TERM "-$1" 2>/dev/null || exit 0',
  'i=0; while kill -0 "-$1" 2>/dev/null && [ "$i" -lt 10 ]; do sleep 1; i=$((i+1)); done',
  'kill -KILL "-$1" 2>/dev/null',
  'exit 0',
].join('\n');

const RECONNECT_WAIT_MS = [1000, 3000, 10_000];



/** ssh's options for the target: batch mode (never a password prompt), port, key, the target's -o options, keep-alives. */
export function sshOptions(t: SshTarget): string[] {
  return [
    '-o', 'BatchMode=yes',
    '-o', 'ServerAliveInterval=15',
    '-o', 'ServerAliveCountMax=4',
    ...(t.port ? ['-p', String(t.port)] : []),
    ...(t.identityFile ? ['-i', t.identityFile] : []),
    ...t.options.flatMap((o) => ['-o', o]),
  ];
}

/** `ssh [options] HOST -- 'arg' 'arg' ...`: the remote shell sees every argument quoted. */
export function sshArgv(t: SshTarget, remoteArgv: string[]): string[] {
  return ['ssh', ...sshOptions(t), t.host, '--', remoteCommandLine(remoteArgv)];
}

/** The job's folder on the host. Relative paths are relative to the login folder (where ssh starts), so a leading ~/ is dropped rather than quoted. */
export function remoteJobDir(t: SshTarget, id: string): string {
  const base = t.remoteDir.replace(/^~(\/|$)/, '').replace(/\/+$/, '');
  return base ? `${base}/${id}` : id;
}

function launchSteps(job: PreparedJob, mask: boolean): PlannedStep[] {
  const t = sshTarget(job);
  const dir = remoteJobDir(t, job.spec.id);
  const secrets = envLines(job.secrets, mask);
  return [
    { title: 'pack the bundle (its output is the next step\'s input)', argv: ['tar', '-C', job.bundleDir, '-czf', '-', '.'] },
    { title: `unpack it into ${dir} on ${t.host}`, argv: sshArgv(t, ['sh', '-c', UNPACK, 'rollout-lab-unpack', dir]), stdin: '(the tar stream of the step above)' },
    {
      title: 'start the job detached (nohup, setsid); the secrets go on stdin and are exported by the remote script',
      argv: sshArgv(t, ['sh', '-c', START, 'rollout-lab-start', dir, ...jobArgv(job.spec.command, t.python)]),
      ...(secrets ? { stdin: secrets } : {}),
    },
  ];
}

export const sshLauncher: Launcher = {
  kind: 'ssh',

  plan(job: PreparedJob): LaunchPlan {
    return { target: 'ssh', files: [], steps: launchSteps(job, true) };
  },

  async launch(job: PreparedJob, log?: (line: string) => void): Promise<JobHandle> {
    const t = sshTarget(job);
    const [pack, unpack, start] = launchSteps(job, false);
    const dir = remoteJobDir(t, job.spec.id);
    log?.(`copying the bundle to ${t.host}:${dir}`);
    await pipe(pack!.argv, unpack!.argv);
    const r = await run(start!.argv, { stdin: start!.stdin });
    const pid = Number.parseInt(r.stdout.trim().split('\n').pop() ?? '', 10);
    if (!Number.isInteger(pid) || pid <= 0) throw new RuntimeFailure(`the job did not start on ${t.host}: ${lastLines(r.stdout, 3) || lastLines(r.stderr, 3) || 'no pid came back'}`);
    log?.(`started on ${t.host} as process group ${pid}`);
    return { target: 'ssh', host: t.host, remoteDir: dir, pid };
  },

  async follow(handle: JobHandle, hooks: FollowHooks, job): Promise<JobExit> {
    const h = handleOf(handle, 'ssh');
    const t = { ...sshTarget(job), host: h.host };
    // A dropped connection reconnects; the remote loop starts over, so lines already handed out are skipped.
    let emitted = 0;
    let failures = 0;
    let lastError = '';
    for (;;) {
      let index = 0;
      let progressed = false;
      let mark: string | null = null;
      const r = await stream(
        sshArgv(t, ['sh', '-c', FOLLOW, 'rollout-lab-follow', h.remoteDir]),
        (line) => {
          const m = MARK_LINE.exec(line);
          const text = m ? line.slice(0, m.index) : line;
          if (m) mark = m[1]!;
          if (m && !text) return;
          if (index++ < emitted) return;
          emitted++;
          progressed = true;
          hooks.onLine(text);
        },
        { signal: hooks.signal, stderr: 'capture' },
      );
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      if (mark === 'lost') return { state: 'failed', exitCode: null, detail: `the job's processes on ${h.host} ended without an exit status (killed, or the host restarted) — see job.log` };
      if (mark !== null) {
        const code = Number(mark);
        return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code };
      }
      if (r.code === 97) return { state: 'failed', exitCode: null, detail: `the job folder ${h.remoteDir} is not on ${h.host}` };
      lastError = lastLines(r.stderr, 2) || `ssh exited with status ${r.code}`;
      failures = progressed ? 1 : failures + 1;
      if (failures > RECONNECT_WAIT_MS.length) {
        return { state: 'failed', exitCode: null, detail: `lost the connection to ${h.host} while following (${lastError}) — the job may still run: follow it again to reattach` };
      }
      await sleep(RECONNECT_WAIT_MS[failures - 1]!, hooks.signal);
    }
  },

  async fetchOutputs(handle: JobHandle, job, destDir: string): Promise<void> {
    const h = handleOf(handle, 'ssh');
    const t = { ...sshTarget(job), host: h.host };
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(destDir, { recursive: true });
    await pipe(sshArgv(t, ['tar', '-czf', '-', '-C', `${h.remoteDir}/${job.spec.output.dir}`, '.']), ['tar', '-xzf', '-', '-C', path.resolve(destDir)]);
  },

  async cancel(handle: JobHandle, job): Promise<void> {
    const h = handleOf(handle, 'ssh');
    await run(sshArgv({ ...sshTarget(job), host: h.host }, ['sh', '-c', CANCEL, 'rollout-lab-cancel', String(h.pid)]));
  },

  async forwardPort(handle: JobHandle, job, remotePort: number, localPort?: number): Promise<PortForward> {
    const h = handleOf(handle, 'ssh');
    return sshForward({ ...sshTarget(job), host: h.host }, '127.0.0.1', remotePort, localPort);
  },
};

/**
 * `ssh -L` from 127.0.0.1 (localPort, or a free port) to remoteHost:remotePort as the target's host sees it
 * (127.0.0.1 for the host itself, a compute node's name through a login node); resolves once the local port accepts.
 */
export async function sshForward(t: SshTarget, remoteHost: string, remotePort: number, localPort?: number): Promise<PortForward> {
  const port = localPort ?? (await freePort());
  const fwd = background(['ssh', ...sshOptions(t), '-o', 'ExitOnForwardFailure=yes', '-N', '-L', `127.0.0.1:${port}:${remoteHost}:${remotePort}`, t.host]);
  let exited = false;
  void fwd.exited.then(
    () => (exited = true),
    () => (exited = true),
  );
  for (let i = 0; i < 150; i++) {
    if (exited) {
      const r = await fwd.exited;
      throw new RuntimeFailure(`ssh -L ${port}:${remoteHost}:${remotePort} ${t.host} exited with status ${r.code}: ${lastLines(r.stderr, 2)}`);
    }
    if (await accepts(port)) return { url: `http://127.0.0.1:${port}/v1`, close: () => fwd.stop() };
    await sleep(100);
  }
  fwd.stop();
  throw new RuntimeFailure(`the port forward to ${remoteHost}:${remotePort} through ${t.host} did not open on 127.0.0.1:${port}`);
}
