import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { UsageError } from '../../core/errors';
import type { BatchPlan } from '../../core/rollout/batchPlan';
import { createShardedRun, finishShardedRun, reopenShardedRun, shardProgress, type ShardedRun } from '../../core/lab/batch';
import { MAX_SHARDS, shardText } from '../../core/rollout/shards';
import { metricsTable } from '../../core/analysis/metricsTable';
import { runOutcomeText } from '../../core/analysis/runOutcome';
import { err, out, type Values } from '../args';
import { withRunningLab } from '../labSession';
import { LineSplitter } from '../../core/train/jobs/launchers/exec';

/** Where workers can be started: only this machine so far (the cluster launchers come later). */
export const WORKER_PLACES = ['local'] as const;

/** How often the coordinator reads the store for its workers' progress. */
const POLL_MS = 500;

/** The last lines of a worker's stderr kept, to show why it failed. */
const TAIL_LINES = 12;

interface Worker {
  shard: string;
  child: ChildProcess;
  /** The command that (re)runs this worker, as a user would type it. */
  command: string;
  tail: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `--workers N [--on local]`, checked before anything opens. */
export function workersOption(v: Values): number | undefined {
  if (v.on !== undefined && v.workers === undefined) throw new UsageError('--on says where --workers start: pass it with --workers N');
  if (v.workers === undefined) return undefined;
  const n = Number(v.workers);
  if (!Number.isInteger(n) || n < 1 || n > MAX_SHARDS) throw new UsageError(`--workers must be an integer from 1 to ${MAX_SHARDS}, got "${String(v.workers)}"`);
  if (v.shard !== undefined) throw new UsageError('--workers starts its own workers, each with its --shard K/N: pass --workers or --shard, not both');
  const on = (v.on as string | undefined) ?? 'local';
  if (!(WORKER_PLACES as readonly string[]).includes(on)) {
    throw new UsageError(`--on ${on}: only --on local (worker processes on this machine) is built so far; to use other machines now, start \`rollout-lab run --resume RUN_ID --shard K/N\` on each, one per slice`);
  }
  return n;
}

const quote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * `run --workers N`: creates the run (or takes up a sharded one with --resume),
 * starts N worker processes of this CLI on this machine — each `--resume RUN
 * --shard K/N` with the given concurrency — follows their progress in the
 * store, and prints the metrics over the whole run once every worker has ended.
 * The coordinator owns the run's status (runner.ts shardedRunStatus): done only
 * when every planned key stands; a worker that exits non-zero leaves it failed,
 * with the command that reruns its slice.
 */
export async function runWorkers(command: 'run' | 'eval', v: Values, plan: BatchPlan, count: number): Promise<number> {
  const json = Boolean(v.json);
  return withRunningLab(v, async (lab, signal) => {
    const run: ShardedRun = plan.resume ? await reopenShardedRun(lab, plan.resume, count) : await createShardedRun(lab, plan, count);
    const { samples } = run.params;
    err(
      `${command}: run ${run.runId}, ${run.tasks} tasks × ${samples} sample${samples > 1 ? 's' : ''} from ${run.datasetFile} (${run.params.split} split) over ${count} local worker${count > 1 ? 's' : ''}${plan.concurrency ? `, concurrency ${plan.concurrency} each` : ''}${lab.simulated ? ' — SIMULATED endpoint' : ''}`,
    );
    const workspace = resolve((v.workspace as string) ?? '.');
    const entry = process.argv[1]!;
    const passed: string[] = ['--workspace', workspace];
    if (plan.concurrency) passed.push('--concurrency', String(plan.concurrency));
    if (plan.retryFailed) passed.push('--retry-failed');
    if (v['base-url'] !== undefined) passed.push('--base-url', String(v['base-url']));
    if (v.model !== undefined) passed.push('--model', String(v.model));
    const workers: Worker[] = [];
    for (let k = 0; k < count; k++) {
      const shard = shardText({ index: k, count });
      const args = [command, '--resume', run.runId, '--shard', shard, ...passed];
      // Its own process group: a Ctrl+C in the terminal reaches the coordinator only, which passes it on once.
      // The node options this CLI runs under (a loader, when it runs from source) go to the workers too.
      const child = spawn(process.execPath, [...process.execArgv, entry, ...args, '--json'], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
      const w: Worker = {
        shard,
        child,
        command: `rollout-lab ${args.map(quote).join(' ')}`,
        tail: [],
        exit: new Promise((done) => child.on('close', (code, sig) => done({ code, signal: sig }))),
      };
      const lines = new LineSplitter((line) => {
        w.tail.push(line);
        if (w.tail.length > TAIL_LINES) w.tail.shift();
        // Progress lines are summed up below; what a user must see (warnings, retries, errors) is passed on.
        if (/warning|retr(y|ied)|error|rollout-lab:/i.test(line) && !line.startsWith('[')) err(`[${shard}] ${line}`);
      });
      child.stderr!.on('data', (d: Buffer) => lines.push(d));
      child.stderr!.on('end', () => lines.end());
      workers.push(w);
    }
    // Ctrl+C: every worker is asked to stop (it finishes its rollouts in flight); a second one stops them at once.
    let cancelled = false;
    const stopAll = (): void => {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGINT');
    };
    const onCancel = (): void => {
      cancelled = true;
      stopAll();
    };
    signal.addEventListener('abort', onCancel, { once: true });
    process.once('exit', stopAll);
    const ended = new Map<string, { code: number | null; signal: NodeJS.Signals | null }>();
    for (const w of workers) void w.exit.then((e) => ended.set(w.shard, e));
    let last = '';
    const report = async (): Promise<void> => {
      await lab.store.refresh();
      const rows = shardProgress(lab, run, count);
      const finished = rows.reduce((n, r) => n + r.finished, 0);
      const succeeded = rows.reduce((n, r) => n + r.succeeded, 0);
      const failed = rows.reduce((n, r) => n + r.failed, 0);
      const line = `[${String(finished).padStart(String(run.keys.length).length)}/${run.keys.length}] ${succeeded} succeeded, ${failed} failed · ${count - ended.size} of ${count} workers running · ${rows.map((r) => `${r.shard} ${r.finished}/${r.planned}`).join('  ')}`;
      if (line !== last) err(line);
      last = line;
    };
    try {
      while (ended.size < count) {
        await Promise.race([Promise.all(workers.map((w) => w.exit)), new Promise((t) => setTimeout(t, POLL_MS))]);
        await report();
      }
    } finally {
      signal.removeEventListener('abort', onCancel);
      process.off('exit', stopAll);
    }
    const failedWorkers = workers.filter((w) => ended.get(w.shard)?.code !== 0);
    const end = await finishShardedRun(lab, run, { cancelled });
    const exits = workers.map((w) => ({ shard: w.shard, code: ended.get(w.shard)?.code ?? null, signal: ended.get(w.shard)?.signal ?? null, command: w.command }));
    if (json) {
      out(JSON.stringify({ runId: run.runId, simulated: end.simulated, rollouts: end.rollouts, succeeded: end.metrics.succeeded, failed: end.metrics.failed, cancelled, done: end.done, outcome: end.outcome, metrics: end.metrics, workers: exits }));
    } else {
      if (end.simulated) out('SIMULATED endpoint: outputs and rewards below come from the built-in simulator, not a model.');
      out(`run ${run.runId}${end.done ? '' : cancelled ? ' cancelled' : ' not done'}: ${runOutcomeText(end.outcome)} (${count} worker${count > 1 ? 's' : ''})`);
      out(metricsTable(end.metrics, end.simulated));
      out(`store: ${lab.store.dir}`);
    }
    const ws = v.workspace ? ` --workspace ${quote(String(v.workspace))}` : '';
    for (const w of failedWorkers) {
      const e = ended.get(w.shard)!;
      err(`worker ${w.shard} ${cancelled ? 'stopped' : 'failed'} (${e.signal ? `killed by ${e.signal}` : `exit ${e.code}`})${w.tail.length ? `; its last lines:\n${w.tail.map((l) => `  ${l}`).join('\n')}` : ''}`);
      err(`rerun slice ${w.shard} with: ${w.command}`);
    }
    if (!end.done) {
      err(`run ${run.runId} is not done — finish every slice with: rollout-lab ${command} --resume ${run.runId} --workers ${count}${ws}`);
      return 1;
    }
    return failedWorkers.length ? 1 : 0;
  });
}
