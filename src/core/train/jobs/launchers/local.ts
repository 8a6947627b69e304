import { spawn } from 'node:child_process';
import { closeSync, cpSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TargetConfig } from '../../../config/trainingSchema';
import { RuntimeFailure } from '../../../errors';
import { HOST } from '../../../store/processLiveness';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PortForward, PreparedJob } from '../launcher';
import { jobArgv, LineSplitter, sleep } from './exec';
import { handleOf } from './narrow';

/**
 * A subprocess on this machine, detached in its own process group so it
 * outlives the editor or the CLI that started it. A constant wrapper script
 * (the job's argv travels as positional parameters, never as shell text)
 * records the exit status in <jobDir>/exit-code when the job ends, so whoever
 * follows the job later, from another process, knows how it ended.
 */


// $1 the bundle, $2 the exit file, then the job's argv. The trap lets a TERM
// to the group stop the job while this shell lives on to record its status.
export const LOCAL_WRAPPER = [
  'trap : TERM INT HUP',
  'cd "$1" || exit 97',
  'e=$2',
  'shift 2',
  '"$@"',
  'c=$?',
  'echo "$c" > "$e.tmp" && mv "$e.tmp" "$e"',
  'exit "$c"',
].join('\n');

const POLL_MS = 200;
const READ_CHUNK = 1 << 20;
const CANCEL_GRACE_MS = 5000;

function python(target: TargetConfig): string {
  return (target.kind === 'local' && target.python) || 'python3';
}

function jobFiles(job: Pick<PreparedJob, 'jobDir'>): { log: string; exit: string } {
  return { log: path.join(job.jobDir, 'job.log'), exit: path.join(job.jobDir, 'exit-code') };
}

function jobEnv(job: PreparedJob): NodeJS.ProcessEnv {
  const pythonPath = [path.join(job.bundleDir, 'python-trainer'), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  return { ...process.env, ...job.secrets, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' };
}


/** Whether any process of the group still runs (signal 0 checks without touching it). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signalGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // Already gone.
  }
}

/** Reads a growing file from the start, handing out whole lines. */
class FileTail {
  private offset = 0;
  private readonly lines: LineSplitter;

  constructor(
    private readonly file: string,
    onLine: (line: string) => void,
  ) {
    this.lines = new LineSplitter(onLine);
  }

  drain(): void {
    if (!existsSync(this.file)) return;
    const fd = openSync(this.file, 'r');
    try {
      const size = fstatSync(fd).size;
      const buf = Buffer.alloc(Math.min(READ_CHUNK, Math.max(0, size - this.offset)));
      while (this.offset < size) {
        const n = readSync(fd, buf, 0, Math.min(buf.length, size - this.offset), this.offset);
        if (n <= 0) break;
        this.offset += n;
        this.lines.push(buf.subarray(0, n));
      }
    } finally {
      closeSync(fd);
    }
  }

  end(): void {
    this.drain();
    this.lines.end();
  }
}

export const localLauncher: Launcher = {
  kind: 'local',

  plan(job: PreparedJob): LaunchPlan {
    return {
      target: 'local',
      files: [],
      steps: [
        {
          title: 'run the job in the bundle, detached (a /bin/sh wrapper records its exit status in exit-code; output to job.log)',
          argv: jobArgv(job.spec.command, python(job.target)),
          cwd: job.bundleDir,
          env: ['PYTHONPATH', 'PYTHONUNBUFFERED', ...Object.keys(job.secrets).sort()],
        },
      ],
    };
  },

  async launch(job: PreparedJob): Promise<JobHandle> {
    const f = jobFiles(job);
    mkdirSync(job.jobDir, { recursive: true });
    rmSync(f.exit, { force: true });
    if (!existsSync(job.bundleDir)) throw new RuntimeFailure(`the job bundle ${job.bundleDir} does not exist`);
    const fd = openSync(f.log, 'w');
    try {
      const child = spawn('/bin/sh', ['-c', LOCAL_WRAPPER, 'rollout-lab-job', job.bundleDir, f.exit, ...jobArgv(job.spec.command, python(job.target))], {
        detached: true,
        stdio: ['ignore', fd, fd],
        env: jobEnv(job),
        shell: false,
      });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', () => resolve());
        child.once('error', (err) => reject(new RuntimeFailure(`the job could not start: ${err.message}`)));
      });
      child.unref();
      return { target: 'local', pid: child.pid!, host: HOST, logFile: f.log, exitFile: f.exit, outDir: path.join(job.bundleDir, job.spec.output.dir) };
    } finally {
      closeSync(fd);
    }
  },

  async follow(handle: JobHandle, hooks: FollowHooks): Promise<JobExit> {
    const h = handleOf(handle, 'local');
    const tail = new FileTail(h.logFile, hooks.onLine);
    let gone = 0;
    for (;;) {
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      // The exit file is written after the job's last output: check it first, then drain.
      const ended = existsSync(h.exitFile);
      tail.drain();
      if (ended) {
        tail.end();
        const code = Number.parseInt(readFileSync(h.exitFile, 'utf8'), 10);
        if (Number.isNaN(code)) return { state: 'failed', exitCode: null, detail: `${h.exitFile} holds no exit status` };
        return { state: code === 0 ? 'succeeded' : 'failed', exitCode: code };
      }
      // A process on another host (a shared folder) cannot be checked; on this one, a group gone without an exit file was killed.
      gone = h.host === HOST && !groupAlive(h.pid) ? gone + 1 : 0;
      if (gone >= 3) {
        tail.end();
        return { state: 'failed', exitCode: null, detail: 'the process ended without an exit status (killed?) — see job.log' };
      }
      await sleep(POLL_MS, hooks.signal);
    }
  },

  async fetchOutputs(handle: JobHandle, _job, destDir: string): Promise<void> {
    const h = handleOf(handle, 'local');
    if (!existsSync(h.outDir)) throw new RuntimeFailure(`the job wrote no ${h.outDir}`);
    if (path.resolve(h.outDir) === path.resolve(destDir)) return;
    rmSync(destDir, { recursive: true, force: true });
    mkdirSync(path.dirname(destDir), { recursive: true });
    cpSync(h.outDir, destDir, { recursive: true });
  },

  async cancel(handle: JobHandle): Promise<void> {
    const h = handleOf(handle, 'local');
    if (h.host !== HOST) throw new RuntimeFailure(`job ${h.pid} runs on ${h.host}, not on this machine — cancel it there`);
    if (!groupAlive(h.pid)) return;
    signalGroup(h.pid, 'SIGTERM');
    for (let waited = 0; waited < CANCEL_GRACE_MS && groupAlive(h.pid); waited += 100) await sleep(100);
    if (groupAlive(h.pid)) signalGroup(h.pid, 'SIGKILL');
  },

  async forwardPort(_handle: JobHandle, _job, remotePort: number): Promise<PortForward> {
    // The job listens on this machine: nothing to forward.
    return { url: `http://127.0.0.1:${remotePort}/v1`, close: () => undefined };
  },
};
