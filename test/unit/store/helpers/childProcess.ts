import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const CHILD = join(__dirname, 'writerChild.ts');

export interface Child {
  proc: ChildProcess;
  lines: string[];
  /** Resolves when `pred` holds for the lines printed so far. */
  waitFor(pred: (lines: string[]) => boolean): Promise<void>;
  exited: Promise<number | null>;
}

export function startChild(args: string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const waiters: Array<{ pred: (l: string[]) => boolean; resolve: () => void; reject: (e: Error) => void }> = [];
  let buf = '';
  let stderr = '';
  let exitCode: number | null | undefined;
  const check = (): void => {
    for (const w of [...waiters]) {
      if (w.pred(lines)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
    check();
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      exitCode = code;
      for (const w of waiters.splice(0)) w.reject(new Error(`child exited (${code}) before expected output; stderr: ${stderr}`));
      resolve(code);
    }),
  );
  return {
    proc,
    lines,
    exited,
    waitFor: (pred) =>
      new Promise<void>((resolve, reject) => {
        if (pred(lines)) return resolve();
        if (exitCode !== undefined) return reject(new Error(`child exited (${exitCode}) before expected output; stderr: ${stderr}`));
        waiters.push({ pred, resolve, reject });
      }),
  };
}

export async function killHard(child: Child): Promise<void> {
  child.proc.kill('SIGKILL');
  await child.exited;
}
