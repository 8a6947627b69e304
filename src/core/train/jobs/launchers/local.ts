import { spawn } from 'node:child_process';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { RuntimeFailure } from '../../../errors';
import { HOST, isProcessAlive } from '../../../store/processLiveness';
import type { FollowHooks, JobExit, JobHandle, LaunchPlan, Launcher, PortForward, PreparedJob } from '../launcher';
import { jobArgv, sleep } from './exec';

/**
 * A subprocess on this machine, in its own process group so it outlives the
 * editor or the CLI that started it. A constant wrapper script records its
 * exit status in a file (the job's argv travels as positional parameters), so
 * whoever follows the job later knows how it ended.
 */

// $1 bundle, $2 exit file, then the job's argv.
const WRAPPER = 'cd "$1" || exit 97; e="$2"; shift 2; "$@"; c=$?; echo "$c" > "$e.tmp" && mv "$e.tmp" "$e"; exit "$c"';

type LocalHandle = Extract<JobHandle, { target: 'local' }>;

function python(job: Pick<PreparedJob, 'target'>): string {
  return job.target.kind === 'local' ? job.target.python : 'python3';
}

function files(job: PreparedJob): { log: string; exit: string } {
  return { log: path.join(job.jobDir, 'job.log'), exit: path.join(job.jobDir, 'exit-code') };
}

export const localLauncher: Launcher = {
  kind: 'local',

  plan(job: PreparedJob): LaunchPlan {
    return {
      target: 'local',
      files: [],
      steps: [{ title: 'run the trainer detached in the bundle, output to job.log', argv: jobArgv(job.spec.command, python(job)), cwd: job.bundleDir, env: ['PYTHONPATH', ...Object.keys(job.secrets)] }],
    };
  },

  async launch(job: PreparedJob): Promise<JobHandle> {
    const f = files(job);
    mkdirSync(job.jobDir, { recursive: true });
    rmSync(f.exit, { force: true });
    const fd = openSync(f.log, 'a');
    try {
      const pythonPath = [path.join(job.bundleDir, 'python-trainer'), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
      const child = spawn('/bin/sh', ['-c', WRAPPER, 'rollout-lab-job', job.bundleDir, f.exit, ...jobArgv(job.spec.command, python(job))], {
        detached: true,
        stdio: ['ignore', fd, fd],
        env: { ...process.env, ...job.secrets, PYTHONPATH: pythonPath, PYTHONUNBUFFERED: '1' },
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
    const h = handle as LocalHandle;
    let offset = 0;
    let rest = '';
    const drain = (): void => {
      if (!existsSync(h.logFile)) return;
      const size = statSync(h.logFile).size;
      if (size <= offset) return;
      const fd = openSync(h.logFile, 'r');
      try {
        const buf = Buffer.alloc(size - offset);
        readSync(fd, buf, 0, buf.length, offset);
        offset = size;
        rest += buf.toString('utf8');
        const lines = rest.split('\n');
        rest = lines.pop()!;
        for (const l of lines) hooks.onLine(l);
      } finally {
        closeSync(fd);
      }
    };
    for (;;) {
      drain();
      if (hooks.signal?.aborted) return { state: 'cancelled', exitCode: null };
      if (existsSync(h.exitFile)) {
        drain();
        if (rest) hooks.onLine(rest);
        const code = Number.parseInt(readFileSync(h.exitFile, 'utf8'), 10);
        return { state: code === 0 ? 'succeeded' : 'failed', exitCode: Number.isNaN(code) ? null : code };
      }
      if (h.host === HOST && !isProcessAlive(h.pid, h.host)) {
        await sleep(300);
        if (!existsSync(h.exitFile)) {
          drain();
          return { state: 'failed', exitCode: null, detail: 'the job\'s process ended without an exit status (killed?) — see job.log' };
        }
        continue;
      }
      await sleep(250);
    }
  },

  async fetchOutputs(handle: JobHandle, _job, destDir: string): Promise<void> {
    const h = handle as LocalHandle;
    if (!existsSync(h.outDir)) throw new RuntimeFailure(`the job wrote no ${h.outDir}`);
    if (path.resolve(h.outDir) === path.resolve(destDir)) return;
    rmSync(destDir, { recursive: true, force: true });
    cpSync(h.outDir, destDir, { recursive: true });
  },

  async cancel(handle: JobHandle): Promise<void> {
    const h = handle as LocalHandle;
    const kill = (sig: NodeJS.Signals): boolean => {
      try {
        process.kill(-h.pid, sig);
        return true;
      } catch {
        return false;
      }
    };
    if (!kill('SIGTERM')) return;
    for (let i = 0; i < 40 && isProcessAlive(h.pid, h.host); i++) await sleep(125);
    if (isProcessAlive(h.pid, h.host)) kill('SIGKILL');
  },

  async forwardPort(_handle: JobHandle, _job, remotePort: number): Promise<PortForward> {
    return { url: `http://127.0.0.1:${remotePort}/v1`, close: () => undefined };
  },
};
