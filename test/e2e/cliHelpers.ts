import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const REPO = resolve(__dirname, '../..');
export const CLI = join(REPO, 'dist/cli.js');
export const PUBMEDQA = resolve(REPO, '../shared/data/pubmedqa/ori_pqal.json');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a user would, in its own process. */
export function cli(args: string[], env: NodeJS.ProcessEnv = {}): CliResult {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ROLLOUT_LAB_BASE_URL: '', ...env },
    maxBuffer: 256 * 1024 * 1024,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

export function cliAsync(args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ROLLOUT_LAB_BASE_URL: '', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const done = new Promise<CliResult>((res) => child.on('close', (code, signal) => res({ code: code ?? (signal ? 128 : -1), stdout, stderr })));
  return { child, done };
}

/** Edits a workspace's .rollout-lab/lab.json in place, as a user would by hand. */
export function editLab(ws: string, edit: (cfg: Record<string, any>) => void): void {
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>;
  edit(cfg);
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

export function tempWorkspace(): string {
  return mkdtempSync(join(tmpdir(), 'rl-e2e-'));
}

export function json<T = Record<string, unknown>>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${r.code}):\n${r.stdout.slice(0, 2000)}\nstderr:\n${r.stderr.slice(-3000)}`);
  }
}

/** What `run --json` and `eval --json` print. */
export interface RunDoc {
  runId: string;
  simulated: boolean;
  rollouts: number;
  succeeded: number;
  failed: number;
  metrics: {
    executionSuccessRate: number;
    averageFinalReward: number;
    decisionAlignment: number | null;
    averageTurnCount: number;
    judge: Record<string, number>;
  };
}

/** One span as `traces --rollout ID --json` prints it. */
export interface SpanDoc {
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: string;
  startTime: number;
  endTime: number;
  status: string;
  attributes: Record<string, unknown>;
}
