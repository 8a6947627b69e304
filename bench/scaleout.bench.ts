/**
 * Rollouts spread over workers, each figure beside its baseline in the same run:
 * - scaleout.slurm: rollouts/s of `run --workers 4 --on slurm` (a job array of four
 *   tasks on the one-node Slurm of scripts/startSlurm.sh) vs `--workers 1 --on slurm`,
 *   each worker at concurrency 4, a one-call graph (fixtures/singleCall.graph.ts,
 *   so the workers' cost is measured rather than a graph's) against the simulated
 *   endpoint in its own process with 200 ms per model call. Timed as a user waits:
 *   from the command's start (submit, scheduling, the workers' start) to its end.
 *   Needs ratio >= 3.5.
 * - scaleout.merge: the coordinator catching up with four workers' shards of 25,000
 *   spans each (their journals in the shared store: the time of its refresh once
 *   they have ended) vs ingesting the same 100,000 spans into one store in one
 *   process. Needs ratio <= 1.2.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { TraceStore } from '../src/core/store/traceStore';
import type { RolloutRecord } from '../src/core/store/types';
import type { SpanRecord } from '../src/core/trace/span';
import { seededRandom } from '../src/core/data/seededRandom';
import { benchWorkspace } from './benchWorkspace';
import { serverProcess } from './runner.bench';
import { median, missingPrerequisite, result, skippedResults, type Bench, type BenchResult } from './harness';
import { slurmMissing, startSlurm } from '../test/unit/train/launchers/slurmCluster';

const CLI = resolve(__dirname, '../dist/cli.js');
const LATENCY_MS = 200;
const TASKS = 800;
const SAMPLES = 2;
const ROLLOUTS = TASKS * SAMPLES;
const SHARDS = 4;
const ROLLOUTS_PER_SHARD = 250;
const SPANS_PER_ROLLOUT = 100;

function missing(message: string): Error {
  return Object.assign(new Error(message), { missingPrerequisite: true });
}

async function timeWorkers(ws: string, url: string, workers: number, seed: number): Promise<number> {
  const t = performance.now();
  const r = spawnSync(process.execPath, [CLI, 'run', '--workspace', ws, '--base-url', url, '--limit', String(TASKS), '--samples', String(SAMPLES), '--seed', String(seed), '--workers', String(workers), '--on', 'slurm', '--concurrency', '4', '--json'], {
    encoding: 'utf8',
    env: { ...process.env, ROLLOUT_LAB_BASE_URL: '' },
  });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0) throw new Error(`run --workers ${workers} --on slurm failed (${r.status}): ${r.stderr.slice(-2000)}`);
  const doc = JSON.parse(r.stdout) as { done: boolean; succeeded: number };
  if (!doc.done || doc.succeeded !== ROLLOUTS) throw new Error(`run --workers ${workers}: ${doc.succeeded} of ${ROLLOUTS} rollouts succeeded`);
  return ROLLOUTS / s;
}

async function benchSlurm(): Promise<BenchResult> {
  const why = slurmMissing();
  if (why) throw missing(`scaleout.slurm needs a real Slurm: ${why}`);
  const cluster = startSlurm('bench');
  cluster.use();
  const sim = await serverProcess(LATENCY_MS);
  const ws = await benchWorkspace('rl-bench-scaleout-', true);
  try {
    const file = join(ws, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    cfg['workers'] = { slurm: { pollSeconds: 0.5 } };
    writeFileSync(file, JSON.stringify(cfg, null, 2));
    const four: number[] = [];
    const one: number[] = [];
    // Alternated, the same tasks (one seed per round) for both.
    for (let round = 0; round < 2; round++) {
      one.push(await timeWorkers(ws, sim.url, 1, round + 1));
      four.push(await timeWorkers(ws, sim.url, SHARDS, round + 1));
    }
    return result('scaleout.slurm', 'rollouts/s', median(four), median(one), `${SHARDS} array tasks vs 1, concurrency 4 each, ${LATENCY_MS} ms per model call, ${ROLLOUTS} one-call rollouts; need ratio >= 3.5`);
  } finally {
    await sim.close();
    cluster.stop();
    rmSync(ws, { recursive: true, force: true });
  }
}

const WORDS = 'amyloid tau microglia synaptic receptor agonist trial cohort placebo dose biomarker plasma imaging hippocampus cortex pathway variant assay endpoint'.split(' ');

/** One shard's rollouts: a root and model calls with a few hundred bytes of messages each. */
function shardSpans(shard: number): Array<{ id: string; spans: SpanRecord[] }> {
  const r = seededRandom(shard + 1);
  return Array.from({ length: ROLLOUTS_PER_SHARD }, (_x, i) => {
    const id = (shard * 100_000 + i).toString(16).padStart(32, '0');
    const t0 = 1_700_000_000_000 + (shard * ROLLOUTS_PER_SHARD + i) * 60_000;
    const spans: SpanRecord[] = Array.from({ length: SPANS_PER_ROLLOUT }, (_y, k) => ({
      traceId: id,
      spanId: (k + 1).toString(16).padStart(16, '0'),
      parentSpanId: k === 0 ? null : '1'.padStart(16, '0'),
      name: k === 0 ? 'rollout' : `chat agent-${k % 9}`,
      kind: k === 0 ? 'rollout' : 'llm',
      startTime: t0 + k * 10,
      endTime: t0 + k * 10 + 9,
      status: 'ok',
      attributes: k === 0 ? ({} as SpanRecord['attributes']) : { 'gen_ai.input.messages': Array.from({ length: 40 }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' '), 'gen_ai.usage.input_tokens': 300 },
    }));
    return { id, spans };
  });
}

/** Writes shards into a store as one process would: each rollout started, its spans, finished. Returns the seconds taken, open to close. */
async function ingest(ws: string, shards: number[]): Promise<number> {
  const data = shards.flatMap(shardSpans);
  const t = performance.now();
  const store = await TraceStore.open(ws);
  const runId = 'bench';
  if (!store.getRun(runId)) store.startRun({ id: runId, startTime: 0, endTime: null, status: 'running', params: {}, simulated: true, planned: 0 });
  for (const [i, d] of data.entries()) {
    const rec: RolloutRecord = {
      id: d.id,
      runId,
      taskId: `t${d.id}`,
      split: 'train',
      sample: 0,
      status: 'running',
      startTime: d.spans[0]!.startTime,
      endTime: null,
      finalReward: null,
      criteria: {},
      decision: null,
      spanCount: 0,
      agents: [],
      judgeFailed: false,
      expectedDecision: null,
      turns: 1,
      error: null,
      simulated: true,
    };
    store.startRollout(rec);
    for (const s of d.spans) store.writeSpan(s);
    store.finishRollout({ ...rec, status: 'succeeded', endTime: d.spans.at(-1)!.endTime, finalReward: (i % 10) / 10, spanCount: d.spans.length });
  }
  await store.close();
  return (performance.now() - t) / 1000;
}

async function benchMerge(): Promise<BenchResult> {
  const merges: number[] = [];
  const ingests: number[] = [];
  for (let round = 0; round < 3; round++) {
    const dir = mkdtempSync(join(tmpdir(), 'rl-bench-merge-'));
    try {
      // The coordinator holds the store open before its workers write, as `run --workers` does.
      const shared = join(dir, 'shared');
      const coordinator = await TraceStore.open(shared);
      const writers = Array.from({ length: SHARDS }, (_x, k) => spawn(process.execPath, ['--import', 'tsx', __filename, '--writer', shared, String(k)], { stdio: ['ignore', 'ignore', 'inherit'] }));
      await Promise.all(writers.map((w) => new Promise<void>((ok, fail) => w.once('exit', (code) => (code === 0 ? ok() : fail(new Error(`shard writer exited with ${code}`)))))));
      const t = performance.now();
      await coordinator.refresh();
      const spans = coordinator.listRollouts({ runId: 'bench', limit: Number.MAX_SAFE_INTEGER }).rollouts.reduce((n, x) => n + x.spanCount, 0);
      merges.push((performance.now() - t) / 1000);
      if (spans !== SHARDS * ROLLOUTS_PER_SHARD * SPANS_PER_ROLLOUT) throw new Error(`the coordinator sees ${spans} spans after the merge`);
      await coordinator.close();
      ingests.push(await ingest(join(dir, 'one'), [0, 1, 2, 3]));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return result('scaleout.merge', 's', median(merges), median(ingests), `${SHARDS} shards of ${ROLLOUTS_PER_SHARD * SPANS_PER_ROLLOUT} spans caught up by the coordinator vs ingesting the same spans into one store; need ratio <= 1.2`);
}

export const bench: Bench = {
  names: ['scaleout.merge', 'scaleout.slurm'],
  async run(): Promise<BenchResult[]> {
    const merge = await benchMerge();
    // Without a Slurm here, the merge figure still stands.
    const slurm = await benchSlurm().catch((e: unknown) => {
      const why = missingPrerequisite(e);
      if (why === null) throw e;
      return skippedResults(['scaleout.slurm'], why)[0]!;
    });
    return [merge, slurm];
  },
};

if (process.argv[2] === '--writer') {
  void ingest(process.argv[3]!, [Number(process.argv[4])]).then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${String(e)}\n`);
      process.exit(1);
    },
  );
}
