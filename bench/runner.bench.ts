import { mkdtempSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../src/core/config/init';
import { startSimServer } from '../src/core/sim/simServer';
import { Lab } from '../src/core/rollout/lab';
import { runRollouts } from '../src/core/rollout/runner';
import { median, result, type Bench, type BenchResult } from './harness';

const PUBMEDQA = resolve(__dirname, '../../shared/data/pubmedqa/ori_pqal.json');

async function workspace(graphModule: boolean): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-bench-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  if (graphModule) {
    copyFileSync(join(__dirname, 'fixtures/singleCall.graph.ts'), join(dir, 'graph.ts'));
    const file = join(dir, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    cfg.graph = { kind: 'module', module: 'graph.ts', export: 'default' };
    cfg.agents = { Writer: { model: 'senior', promptText: 'Write a short experimental protocol for the question.' } };
    cfg.air = [];
    writeFileSync(file, JSON.stringify(cfg, null, 2));
  }
  return dir;
}

async function timeBatch(dir: string, baseUrl: string, n: number, concurrency: number, tracing: boolean): Promise<number> {
  const lab = await Lab.open({ workspace: dir, baseUrl });
  try {
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: n, seed: 1 });
    const env = await lab.environment(ds.tasks);
    const t0 = performance.now();
    const r = await runRollouts(env, { tasks, samples: 1, concurrency, params: {}, tracing });
    const ms = performance.now() - t0;
    if (r.rollouts.some((x) => x.status !== 'succeeded')) throw new Error('a benchmark rollout failed');
    return ms;
  } finally {
    await lab.close();
  }
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
    const slow = await startSimServer({ latencyMs: 200 });
    const oneCall = await workspace(true);
    try {
      const rate: Record<number, number> = {};
      for (const c of [1, 4, 16]) rate[c] = 64 / ((await timeBatch(oneCall, slow.url, 64, c, true)) / 1000);
      out.push(result('runner.scaling.c4', 'rollouts/s', rate[4]!, rate[1]!, 'baseline: concurrency 1'));
      out.push(result('runner.scaling', 'rollouts/s', rate[16]!, rate[1]!, 'concurrency 16 vs 1; want ratio >= 12'));
    } finally {
      await slow.close();
      rmSync(oneCall, { recursive: true, force: true });
    }
    const fast = await startSimServer({ latencyMs: 0 });
    const lab = await workspace(false);
    try {
      await timeBatch(lab, fast.url, 4, 4, true); // warm-up: JIT, sockets, sql.js
      const on: number[] = [];
      const off: number[] = [];
      for (let i = 0; i < 5; i++) {
        off.push(await timeBatch(lab, fast.url, 12, 4, false));
        on.push(await timeBatch(lab, fast.url, 12, 4, true));
      }
      out.push(result('tracing.overhead', 'ms/batch', median(on), median(off), 'tracing on vs off, 12 research-lab rollouts; want ratio <= 1.10'));
    } finally {
      await fast.close();
      rmSync(lab, { recursive: true, force: true });
    }
    return out;
  },
};
