import { spawn, type SpawnOptions } from 'node:child_process';
import { RuntimeFailure } from '../../../errors';

/**
 * Runs the targets' tools (ssh, scp, sky, kubectl, rsync) from argument
 * arrays, never through a local shell; secrets go in `env` or on stdin.
 */

export interface ExecOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  stdin?: string;
  signal?: AbortSignal;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

const INSTALL_HINT: Record<string, string> = {
  ssh: 'install openssh-client',
  scp: 'install openssh-client',
  rsync: 'install rsync',
  sky: 'pip install skypilot',
  kubectl: 'install kubectl and point it at your cluster',
};

function spawnChecked(argv: string[], opts: ExecOptions & { stdio?: SpawnOptions['stdio'] }): ReturnType<typeof spawn> {
  return spawn(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: opts.env ?? process.env, stdio: opts.stdio ?? ['pipe', 'pipe', 'pipe'], shell: false });
}

function missing(argv: string[], err: NodeJS.ErrnoException): RuntimeFailure {
  if (err.code === 'ENOENT') return new RuntimeFailure(`${argv[0]} is not installed or not on PATH — ${INSTALL_HINT[argv[0]!] ?? `install ${argv[0]}`}`);
  return new RuntimeFailure(`${argv[0]} could not start: ${err.message}`);
}

/** Runs to the end; a non-zero exit is an error naming the command and its last stderr lines unless `allowFail`. */
export function run(argv: string[], opts: ExecOptions & { allowFail?: boolean } = {}): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawnChecked(argv, opts);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout = (stdout + d.toString()).slice(-4_000_000)));
    child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-200_000)));
    const onAbort = (): void => void child.kill('SIGTERM');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => reject(missing(argv, err)));
    child.on('close', (code) => {
      opts.signal?.removeEventListener('abort', onAbort);
      const result = { code: code ?? 1, stdout, stderr };
      if (result.code !== 0 && !opts.allowFail) {
        const tail = stderr.trim().split('\n').slice(-3).join(' | ');
        reject(new RuntimeFailure(`${argv[0]} ${argv[1] ?? ''} exited with status ${result.code}${tail ? `: ${tail}` : ''}`));
      } else resolve(result);
    });
    child.stdin!.end(opts.stdin ?? '');
  });
}

/** Streams stdout and stderr line by line until the command ends (or the signal kills it). */
export function stream(argv: string[], onLine: (line: string) => void, opts: ExecOptions = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawnChecked(argv, opts);
    const splitter = (): ((d: Buffer) => void) => {
      let rest = '';
      return (d) => {
        rest += d.toString();
        const parts = rest.split(/\r?\n|\r/);
        rest = parts.pop()!;
        for (const p of parts) onLine(p);
      };
    };
    child.stdout!.on('data', splitter());
    child.stderr!.on('data', splitter());
    const onAbort = (): void => void child.kill('SIGTERM');
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.on('error', (err) => reject(missing(argv, err)));
    child.on('close', (code) => {
      opts.signal?.removeEventListener('abort', onAbort);
      resolve(code ?? 1);
    });
    child.stdin!.end(opts.stdin ?? '');
  });
}

/** One argument for a POSIX shell on the far side of ssh: single-quoted, quotes inside escaped. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** `NAME=VALUE` lines for a remote script to export; names are checked, values may hold anything but a newline. */
export function envLines(secrets: Record<string, string>, mask = false): string {
  return Object.entries(secrets)
    .map(([k, v]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new RuntimeFailure(`secret name "${k}" is not an environment variable name`);
      if (v.includes('\n')) throw new RuntimeFailure(`the value of ${k} holds a newline, which cannot travel as an environment variable`);
      return `${k}=${mask ? '***' : v}\n`;
    })
    .join('');
}

/** The job's command with the target's Python in place of a leading python3. */
export function jobArgv(command: string[], python: string): string[] {
  return command[0] === 'python3' || command[0] === 'python' ? [python, ...command.slice(1)] : [...command];
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
