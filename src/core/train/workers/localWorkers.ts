import { spawn, type ChildProcess } from 'node:child_process';
import { COORDINATED_ENV } from '../../rollout/batchPlan';
import { outputTail, rerunCommand, workerArgv, type WorkerGroup, type WorkerPlace, type WorkerRequest, type WorkerStatus } from './workerPlace';

interface LocalWorker {
  child: ChildProcess;
  tail: string[];
  exit: { code: number | null; signal: NodeJS.Signals | null } | null;
}

/**
 * `--on local`: one process of this CLI per slice on this machine. Each has
 * its own process group, so a Ctrl+C in the terminal reaches the coordinator
 * only, which passes it on once (cancel): every worker finishes the rollouts
 * it has in flight and marks the others cancelled.
 */
export const localWorkers: WorkerPlace = {
  name: 'local',
  async start(req: WorkerRequest): Promise<WorkerGroup> {
    const workers: LocalWorker[] = [];
    const group: WorkerGroup = {
      pollMs: 500,
      label: `${req.count} local worker process${req.count > 1 ? 'es' : ''}`,
      async poll(): Promise<WorkerStatus[]> {
        return workers.map((w, shard) => {
          if (!w.exit) return { shard, state: 'running', detail: `pid ${w.child.pid}`, restarts: 0 };
          const { code, signal } = w.exit;
          if (code === 0) return { shard, state: 'succeeded', detail: 'exit 0', restarts: 0 };
          return { shard, state: signal === 'SIGINT' || code === 130 ? 'cancelled' : 'failed', detail: signal ? `killed by ${signal}` : `exit ${code}`, restarts: 0 };
        });
      },
      async tail(shard) {
        return [...(workers[shard]?.tail ?? [])];
      },
      async cancel() {
        for (const w of workers) if (!w.exit) w.child.kill('SIGINT');
      },
      rerun: (shard) => rerunCommand(req, shard),
    };
    for (let k = 0; k < req.count; k++) {
      const [exe, ...args] = workerArgv(req, `${k}/${req.count}`);
      const child = spawn(exe!, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true, cwd: req.workspace, env: { ...process.env, ...req.env, [COORDINATED_ENV]: '1' } });
      const w: LocalWorker = { child, tail: [], exit: null };
      child.on('close', (code, signal) => (w.exit = { code, signal }));
      // A worker that could not start at all ('error' without a pid) has ended too.
      child.on('error', (e) => (w.exit ??= { code: 127, signal: null }) && w.tail.push(String(e.message)));
      const lines = outputTail(w.tail, (line) => group.onLine?.(k, line));
      child.stderr!.on('data', (d: Buffer) => lines.push(d));
      child.stderr!.on('end', () => lines.end());
      workers.push(w);
    }
    // The workers are this process's children: should it end without cancelling them, they stop too.
    const stopAll = (): void => {
      for (const w of workers) if (!w.exit) w.child.kill('SIGINT');
    };
    process.once('exit', stopAll);
    void Promise.all(workers.map((w) => new Promise((done) => (w.exit ? done(null) : w.child.once('close', done))))).then(() => process.off('exit', stopAll));
    return group;
  },
};
