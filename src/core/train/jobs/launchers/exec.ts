import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { RuntimeFailure } from '../../../errors';

/**
 * Runs the targets' tools (ssh, tar, sky, kubectl, rsync) from argument
 * arrays, never through a local shell (shell: false); secrets go in `env` or
 * on stdin. Executables are looked up on PATH when the call is made, so a
 * PATH changed at run time (a test's fake `sky`) counts.
 */

export interface ExecOptions {
  cwd?: string;
  /** The child's whole environment; default: this process's, read at call time. */
  env?: NodeJS.ProcessEnv;
  /** Written to the child's standard input, which is then closed. */
  stdin?: string;
  /** Aborting kills the command (SIGTERM). */
  signal?: AbortSignal;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

// Enough for any answer these tools give; a runaway output keeps its end, where errors are.
const STDOUT_CAP = 4_000_000;
const STDERR_CAP = 200_000;

const INSTALL_HINT: Record<string, string> = {
  ssh: 'install openssh-client',
  scp: 'install openssh-client',
  tar: 'install tar',
  rsync: 'install rsync',
  sky: 'pip install skypilot',
  kubectl: 'install kubectl and point it at your cluster',
  sbatch: 'install Slurm\'s client commands (apt-get install slurm-client) or set the target\'s "host" to a login node',
  squeue: 'install Slurm\'s client commands (apt-get install slurm-client) or set the target\'s "host" to a login node',
};

/** The error for a command that could not start; ENOENT means it is not installed. */
export function startFailure(argv: string[], err: NodeJS.ErrnoException): RuntimeFailure {
  const cmd = argv[0]!;
  if (err.code === 'ENOENT') return new RuntimeFailure(`${cmd} is not installed or not on PATH — ${INSTALL_HINT[cmd] ?? `install ${cmd}`}`);
  return new RuntimeFailure(`${cmd} could not start: ${err.message}`);
}

/** "sky launch exited with status 1: <last stderr lines>" — the tool, its sub-command when it has one, the status and why. */
export function exitFailure(argv: string[], code: number, stderr: string): RuntimeFailure {
  const name = argv[1] && /^[a-z][a-z-]*$/.test(argv[1]) ? `${argv[0]} ${argv[1]}` : argv[0]!;
  const tail = lastLines(stderr, 3);
  return new RuntimeFailure(`${name} exited with status ${code}${tail ? `: ${tail}` : ''}`);
}

export function lastLines(text: string, n: number): string {
  return text
    .split(/\r?\n|\r/)
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-n)
    .join(' | ');
}

function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return signal ? 128 + (constants.signals[signal] ?? 0) : 1;
}

function start(argv: string[], opts: ExecOptions, stdio: StdioOptions): ChildProcess {
  if (opts.cwd && !existsSync(opts.cwd)) throw new RuntimeFailure(`${argv[0]}: the folder ${opts.cwd} does not exist`);
  return spawn(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: opts.env ?? process.env, stdio, shell: false, windowsHide: true });
}

function feed(child: ChildProcess, stdin: string | undefined): void {
  // A command that exits without reading its input must not crash us with EPIPE.
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(stdin ?? '');
}

function killOnAbort(child: ChildProcess, signal: AbortSignal | undefined): () => void {
  if (!signal) return () => undefined;
  const kill = (): void => void child.kill('SIGTERM');
  if (signal.aborted) kill();
  else signal.addEventListener('abort', kill, { once: true });
  return () => signal.removeEventListener('abort', kill);
}

/**
 * Spawns the command, hands each stdout and stderr chunk to the callbacks,
 * feeds its stdin and settles with its status (stderr's end kept for errors);
 * a command that cannot start rejects with why.
 */
function execute(argv: string[], opts: ExecOptions, onStdout: (d: Buffer) => void, onStderr: (d: Buffer) => void = () => undefined): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    let child: ChildProcess;
    try {
      child = start(argv, opts, ['pipe', 'pipe', 'pipe']);
    } catch (err) {
      reject(err);
      return;
    }
    let stderr = '';
    child.stdout!.on('data', onStdout);
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-STDERR_CAP);
      onStderr(d);
    });
    const detach = killOnAbort(child, opts.signal);
    child.on('error', (err) => {
      detach();
      reject(startFailure(argv, err));
    });
    child.on('close', (code, signal) => {
      detach();
      resolve({ code: exitCode(code, signal), stderr });
    });
    feed(child, opts.stdin);
  });
}

/** Runs to the end. A non-zero exit is an error naming the command, its status and its last stderr lines, unless `allowFail`. */
export async function run(argv: string[], opts: ExecOptions & { allowFail?: boolean } = {}): Promise<ExecResult> {
  let stdout = '';
  const { code, stderr } = await execute(argv, opts, (d) => (stdout = (stdout + d.toString()).slice(-STDOUT_CAP)));
  if (code !== 0 && !opts.allowFail) throw exitFailure(argv, code, stderr);
  return { code, stdout, stderr };
}

/**
 * Splits a byte stream into lines on \n, \r\n or a lone \r (progress bars),
 * keeping a partial line (and a \r that may start a \r\n) for the next chunk.
 */
export class LineSplitter {
  private rest = '';
  private readonly decoder = new StringDecoder('utf8');

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer | string): void {
    this.rest += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    let from = 0;
    for (let i = 0; i < this.rest.length; i++) {
      const c = this.rest[i];
      if (c !== '\n' && c !== '\r') continue;
      if (c === '\r' && i === this.rest.length - 1) break;
      this.onLine(this.rest.slice(from, i));
      if (c === '\r' && this.rest[i + 1] === '\n') i++;
      from = i + 1;
    }
    this.rest = this.rest.slice(from);
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    const last = (this.rest + this.decoder.end()).replace(/\r$/, '');
    this.rest = '';
    if (last) this.onLine(last);
  }
}

export interface StreamOptions extends ExecOptions {
  /** 'lines' (default): stderr lines go to onLine too; 'capture': only kept for the result (a tool's own complaints, not the job's output). */
  stderr?: 'lines' | 'capture';
}

/** Streams the command's output line by line until it ends (or the signal kills it); resolves with its status, never rejects on one. */
export async function stream(argv: string[], onLine: (line: string) => void, opts: StreamOptions = {}): Promise<ExecResult> {
  const out = new LineSplitter(onLine);
  const err = new LineSplitter(opts.stderr === 'capture' ? (): void => undefined : onLine);
  const { code, stderr } = await execute(argv, opts, (d) => out.push(d), (d) => err.push(d));
  out.end();
  err.end();
  return { code, stdout: '', stderr };
}

/**
 * `from | to` without a shell: the first command's stdout feeds the second's
 * stdin (tar streams). Fails if either fails; when the consumer fails first,
 * its error is the one that says why.
 */
export function pipe(from: string[], to: string[], opts: { fromCwd?: string; env?: NodeJS.ProcessEnv; signal?: AbortSignal } = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    let producer: ChildProcess;
    let consumer: ChildProcess;
    try {
      producer = start(from, { cwd: opts.fromCwd, env: opts.env }, ['ignore', 'pipe', 'pipe']);
      consumer = start(to, { env: opts.env }, ['pipe', 'pipe', 'pipe']);
    } catch (err) {
      reject(err);
      return;
    }
    const stderr = { from: '', to: '' };
    producer.stderr!.on('data', (d: Buffer) => (stderr.from = (stderr.from + d.toString()).slice(-STDERR_CAP)));
    consumer.stderr!.on('data', (d: Buffer) => (stderr.to = (stderr.to + d.toString()).slice(-STDERR_CAP)));
    consumer.stdout!.resume();
    consumer.stdin!.on('error', () => undefined);
    producer.stdout!.pipe(consumer.stdin!);
    const detach = [killOnAbort(producer, opts.signal), killOnAbort(consumer, opts.signal)];
    const codes: { from?: number; to?: number } = {};
    let failed = false;
    const fail = (err: Error): void => {
      if (failed) return;
      failed = true;
      producer.kill('SIGTERM');
      consumer.kill('SIGTERM');
      reject(err);
    };
    const settle = (): void => {
      if (failed || codes.from === undefined || codes.to === undefined) return;
      detach.forEach((d) => d());
      if (codes.to !== 0) reject(exitFailure(to, codes.to, stderr.to));
      else if (codes.from !== 0) reject(exitFailure(from, codes.from, stderr.from));
      else resolve();
    };
    producer.on('error', (e) => fail(startFailure(from, e)));
    consumer.on('error', (e) => fail(startFailure(to, e)));
    producer.on('close', (code, signal) => {
      codes.from = exitCode(code, signal);
      settle();
    });
    consumer.on('close', (code, signal) => {
      codes.to = exitCode(code, signal);
      settle();
    });
  });
}

/** A command that keeps running (a port forward): its stdout lines as they come, and a promise of its end. */
export interface Background {
  child: ChildProcess;
  exited: Promise<ExecResult>;
  stop(): void;
}

export function background(argv: string[], onLine: (line: string) => void = () => undefined, opts: ExecOptions = {}): Background {
  const child = start(argv, opts, ['ignore', 'pipe', 'pipe']);
  let stderr = '';
  const out = new LineSplitter(onLine);
  child.stdout!.on('data', (d: Buffer) => out.push(d));
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-STDERR_CAP)));
  const exited = new Promise<ExecResult>((resolve, reject) => {
    child.on('error', (e) => reject(startFailure(argv, e)));
    child.on('close', (code, signal) => resolve({ code: exitCode(code, signal), stdout: '', stderr }));
  });
  // Whoever awaits `exited` sees a start failure; an unawaited one must not crash the process.
  exited.catch(() => undefined);
  return { child, exited, stop: () => void (child.exitCode === null && child.signalCode === null && child.kill('SIGTERM')) };
}

/** One argument for a POSIX shell on the far side of ssh: single-quoted, each ' written as '\''. */
export function shellQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** The command line `ssh HOST -- LINE` hands to the remote login shell: every argument quoted, so none is interpreted. */
export function remoteCommandLine(argv: string[]): string {
  return argv.map(shellQuote).join(' ');
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `NAME=VALUE` lines for a remote script to export (values masked as *** for a plan). */
export function envLines(secrets: Record<string, string>, mask = false): string {
  return Object.keys(secrets)
    .sort()
    .map((k) => {
      const v = secrets[k]!;
      if (!ENV_NAME.test(k)) throw new RuntimeFailure(`secret name "${k}" is not an environment variable name`);
      if (/[\n\r\0]/.test(v)) throw new RuntimeFailure(`the value of ${k} holds a line break or NUL, which cannot travel as an environment variable line`);
      return `${k}=${mask ? '***' : v}\n`;
    })
    .join('');
}

/** The job's command with the target's Python in place of a leading python3 (local and ssh targets). */
export function jobArgv(command: string[], python: string): string[] {
  return command[0] === 'python3' ? [python, ...command.slice(1)] : [...command];
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
