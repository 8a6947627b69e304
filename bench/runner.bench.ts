import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { spawn } from 'node:child_process';
import { startSimServer } from '../src/core/sim/simServer';
import { Lab } from '../src/core/lab/lab';
import { runRollouts } from '../src/core/rollout/runner';
import { benchWorkspace } from './benchWorkspace';
import { median, result, type Bench, type BenchResult } from './harness';

/** The simulated endpoint in its own process, as a real model server would be. */
export async function serverProcess(latencyMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const probe = await startSimServer();
  const port = probe.port;
  await probe.close();
  const child = spawn(process.execPath, [resolve(__dirname, '../dist/cli.js'), 'sim', '--port', String(port), '--latency-ms', String(latencyMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((ok, fail) => {
    child.once('exit', (code) => fail(new Error(`simulated endpoint exited with ${code}`)));
    child.stdout!.once('data', () => ok());
  });
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((done) => (child.exitCode !== null ? done() : (child.once('exit', () => done()), child.kill('SIGTERM')))),
  };
}

/** A lab opened once, so every timed batch runs in the same warmed-up process state. */
async function openBench(dir: string, baseUrl: string): Promise<{ time(n: number, concurrency: number, tracing: boolean, seed?: number): Promise<number>; close(): Promise<void> }> {
  const lab = await Lab.open({ workspace: dir, baseUrl });
  const ds = await lab.loadDataset();
  const env = await lab.environment(ds.tasks);
  return {
    async time(n, concurrency, tracing, seed = 1): Promise<number> {
      const tasks = lab.selectTasks(ds, { split: 'train', limit: n, seed });
      const t0 = performance.now();
      const r = await runRollouts(env, { tasks, samples: 1, concurrency, params: {}, tracing });
      const ms = performance.now() - t0;
      if (r.rollouts.some((x) => x.status !== 'succeeded')) throw new Error('a benchmark rollout failed');
      return ms;
    },
    close: () => lab.close(),
  };
}

/**
 * runner.scaling: 64 rollouts against a server answering every call in 200 ms,
 * at concurrency 1, 4 and 16 (baseline: concurrency 1).
 * tracing.overhead: research-lab rollouts against a zero-latency server with
 * tracing on vs off (baseline: off), alternated and taken as medians.
 */
export const bench: Bench = {
  names: ['runner.scaling', 'tracing.overhead'],
  async run(): Promise<BenchResult[]> {
    const out: BenchResult[] = [];
    const slow = await serverProcess(200);
    const oneCall = await benchWorkspace('rl-bench-', true);
    const scaling = await openBench(oneCall, slow.url);
    try {
      await scaling.time(16, 16, true, 99); // warm-up: JIT, sockets, sql.js
      const rate: Record<number, number> = {};
      for (const c of [1, 4, 16]) rate[c] = 64 / ((await scaling.time(64, c, true)) / 1000);
      out.push(result('runner.scaling.c4', 'rollouts/s', rate[4]!, rate[1]!, 'baseline: concurrency 1'));
      out.push(result('runner.scaling', 'rollouts/s', rate[16]!, rate[1]!, 'concurrency 16 vs 1; want ratio >= 12'));
    } finally {
      await scaling.close();
      await slow.close();
      rmSync(oneCall, { recursive: true, force: true });
    }
    const fast = await serverProcess(0);
    const labDir = await benchWorkspace('rl-bench-', false);
    const overhead = await openBench(labDir, fast.url);
    try {
      // Warm-up of both paths until the JIT settles: the first batches run several times slower.
      for (let i = 0; i < 3; i++) {
        await overhead.time(16, 4, true, 99);
        await overhead.time(16, 4, false, 99);
      }
      const on: number[] = [];
      const off: number[] = [];
      // Alternated on the same tasks, so drift in the machine's load hits both sides alike.
      for (let i = 0; i < 7; i++) {
        off.push(await overhead.time(16, 4, false));
        on.push(await overhead.time(16, 4, true));
      }
      out.push(result('tracing.overhead', 'ms/batch', median(on), median(off), 'tracing on vs off, 16 research-lab rollouts; want ratio <= 1.10'));
    } finally {
      await overhead.close();
      await fast.close();
      rmSync(labDir, { recursive: true, force: true });
    }
    return out;
  },
};
