import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import type { BatchPlan } from '../../core/rollout/batchPlan';
import { MAX_SHARDS } from '../../core/rollout/shards';
import { metricsTable } from '../../core/analysis/metricsTable';
import { runOutcomeText } from '../../core/analysis/runOutcome';
import { runOnWorkers, shellWord, WORKER_PLACES, workerPlace, type WorkerPlaceName, type WorkersProgress, type WorkerStatus } from '../../core/train/workers';
import { err, out, type Values } from '../args';
import { withRunningLab } from '../labSession';

/** `--workers N [--on PLACE]`, checked before anything opens. */
export function workersOption(v: Values): { count: number; on: WorkerPlaceName } | undefined {
  if (v.on !== undefined && v.workers === undefined) throw new UsageError('--on says where --workers start: pass it with --workers N');
  if (v.workers === undefined) return undefined;
  const n = Number(v.workers);
  if (!Number.isInteger(n) || n < 1 || n > MAX_SHARDS) throw new UsageError(`--workers must be an integer from 1 to ${MAX_SHARDS}, got "${String(v.workers)}"`);
  if (v.shard !== undefined) throw new UsageError('--workers starts its own workers, each with its --shard K/N: pass --workers or --shard, not both');
  const on = (v.on as string | undefined) ?? 'local';
  if (!(WORKER_PLACES as readonly string[]).includes(on)) {
    throw new UsageError(`--on ${on}: workers start on ${WORKER_PLACES.join(', ')}; elsewhere, start \`rollout-lab run --resume RUN_ID --shard K/N\` on each machine, one per slice`);
  }
  return { count: n, on: on as WorkerPlaceName };
}

/** One progress line: rollouts over the whole run, then each worker's slice and state. */
function progressLine(p: WorkersProgress): string {
  const running = p.workers.filter((w) => w.state === 'running').length;
  const pending = p.workers.filter((w) => w.state === 'pending').length;
  const slices = p.slices.map((r, k) => `${r.shard} ${r.finished}/${r.planned}${workerMark(p.workers[k])}`).join('  ');
  return `[${String(p.finished).padStart(String(p.planned).length)}/${p.planned}] ${p.succeeded} succeeded, ${p.failed} failed · ${running} running${pending ? `, ${pending} pending` : ''} of ${p.workers.length} workers · ${slices}`;
}

const workerMark = (w: WorkerStatus | undefined): string => (!w || w.state === 'running' ? '' : w.state === 'pending' ? ' (pending)' : w.state === 'succeeded' ? ' ✓' : ` (${w.state})`);

/**
 * `run --workers N [--on local|slurm]`: creates the run (or takes up a sharded
 * one with --resume), starts N workers through the place — each `--resume RUN
 * --shard K/N` with the given concurrency — follows their progress in the
 * store, and prints the metrics over the whole run once every worker has
 * ended. The coordinator owns the run's status (runner.ts shardedRunStatus):
 * done only when every planned key stands; a worker that ends otherwise is
 * named with how to rerun its slice.
 */
export async function runWorkers(command: 'run' | 'eval', v: Values, plan: BatchPlan, asked: { count: number; on: WorkerPlaceName }): Promise<number> {
  const json = Boolean(v.json);
  const { count } = asked;
  return withRunningLab(v, async (lab, signal) => {
    const workspace = resolve((v.workspace as string) ?? '.');
    const args: string[] = [];
    if (plan.concurrency) args.push('--concurrency', String(plan.concurrency));
    if (plan.retryFailed) args.push('--retry-failed');
    if (v['base-url'] !== undefined) args.push('--base-url', String(v['base-url']));
    if (v.model !== undefined) args.push('--model', String(v.model));
    let last = '';
    const { run, group, workers, cancelled, end } = await runOnWorkers(lab, {
      command,
      plan,
      count,
      place: workerPlace(asked.on, lab.loaded.config.workers),
      // The node options this CLI runs under (a loader, when it runs from source) go to the workers too.
      cli: [process.execPath, ...process.execArgv, process.argv[1]!],
      args,
      workspace,
      signal,
      onStarted: (r, g) => {
        const { samples } = r.params;
        err(
          `${command}: run ${r.runId}, ${r.tasks} tasks × ${samples} sample${samples > 1 ? 's' : ''} from ${r.datasetFile} (${r.params.split} split) on ${g.label}${plan.concurrency ? `, concurrency ${plan.concurrency} each` : ''}${lab.simulated ? ' — SIMULATED endpoint' : ''}`,
        );
      },
      onLine: (k, line) => err(`[${k}/${count}] ${line}`),
      onProgress: (p) => {
        const line = progressLine(p);
        if (line !== last) err(line);
        last = line;
      },
    });
    const failed = workers.filter((w) => w.state !== 'succeeded');
    if (json) {
      const exits = workers.map((w) => ({ shard: `${w.shard}/${count}`, state: w.state, detail: w.detail, restarts: w.restarts, rerun: group.rerun(w.shard) }));
      out(JSON.stringify({ runId: run.runId, on: asked.on, simulated: end.simulated, rollouts: end.rollouts, succeeded: end.metrics.succeeded, failed: end.metrics.failed, cancelled, done: end.done, outcome: end.outcome, metrics: end.metrics, workers: exits }));
    } else {
      if (end.simulated) out('SIMULATED endpoint: outputs and rewards below come from the built-in simulator, not a model.');
      out(`run ${run.runId}${end.done ? '' : cancelled ? ' cancelled' : ' not done'}: ${runOutcomeText(end.outcome)} (${count} worker${count > 1 ? 's' : ''} on ${asked.on})`);
      out(metricsTable(end.metrics, end.simulated));
      out(`store: ${lab.store.dir}`);
    }
    for (const w of failed) {
      const tail = await group.tail(w.shard);
      err(`worker ${w.shard}/${count} ${cancelled ? 'stopped' : w.state} (${w.detail ?? w.state})${tail.length ? `; its last lines:\n${tail.map((l) => `  ${l}`).join('\n')}` : ''}`);
      err(`rerun slice ${w.shard}/${count} with: ${group.rerun(w.shard)}`);
    }
    if (!end.done) {
      const ws = v.workspace ? ` --workspace ${shellWord(String(v.workspace))}` : '';
      err(`run ${run.runId} is not done — finish every slice with: rollout-lab ${command} --resume ${run.runId} --workers ${count}${asked.on === 'local' ? '' : ` --on ${asked.on}`}${ws}`);
      return 1;
    }
    return failed.length ? 1 : 0;
  });
}
