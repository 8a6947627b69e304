import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import type { SkypilotWorkersConfig } from '../../config/workersSchema';
import { ConfigError, RuntimeFailure } from '../../errors';
import { exitFailure, lastLines, run, stream } from '../jobs/launchers/exec';
import { cleanSkyLine, parseSkyJobId, parseSkyQueueStatus } from '../jobs/launchers/skypilot';
import { COORDINATED_ENV } from '../../rollout/batchPlan';
import { dnsLabel, shellWord, TAIL_LINES, workerShellLine, workersDir, type WorkerGroup, type WorkerPlace, type WorkerRequest, type WorkerState, type WorkerStatus } from './workerPlace';

/**
 * `--on skypilot`: one SkyPilot task on N nodes (`num_nodes: N`), each node
 * running `CLI run --resume RUN --shard $SKYPILOT_NODE_RANK/N` in the
 * workspace every node sees (a bucket SkyPilot mounts, or a filesystem the
 * nodes share). Launched with `sky launch -c CLUSTER task.yaml -y -d`,
 * followed with `sky queue CLUSTER`, cancelled with `sky cancel`.
 *
 * What a node failing means: SkyPilot runs the nodes as one gang job with one
 * status. When any node's worker exits non-zero, SkyPilot kills the workers
 * still running on the other nodes (exit 137) and marks the whole job FAILED;
 * it does not restart one node's part. So, until the job ends, every slice
 * shows the job's status; once it has failed, each slice's own end is read
 * from the return code list SkyPilot writes in the job's log. The store still
 * keeps every rollout any worker finished: resuming the run (or rerunning a
 * slice, which launches the same task on one node with ROLLOUT_LAB_SHARD=K)
 * redoes only what did not end.
 */

/** A cluster that nobody tears down (down: false, or the coordinator gone) still stops after this idle time. */
const SAFETY_AUTODOWN_MINUTES = 30;
const SKY_WORKERS_LABEL = 'rollout-lab-workers';

export function workersClusterName(runId: string, cfg: SkypilotWorkersConfig): string {
  return cfg.cluster ?? `rl-w-${dnsLabel(runId)}`.replace(/-+$/, '');
}

export function checkSkyWorkers(cfg: SkypilotWorkersConfig): void {
  if (cfg.workspace.bucket && cfg.workspace.sharedFilesystem) throw new ConfigError('workers.skypilot.workspace: set bucket or sharedFilesystem, not both');
  if (!cfg.workspace.bucket && !cfg.workspace.sharedFilesystem) {
    throw new ConfigError(
      `workers.skypilot.workspace: the nodes and this coordinator must share the workspace (the workers write into its store, the coordinator reads their progress from it). Set workspace.bucket to a bucket that holds it (SkyPilot mounts it at workspace.path, ${cfg.workspace.path}), or set workspace.sharedFilesystem: true when ${cfg.workspace.path} is a filesystem the nodes already share`,
    );
  }
}

export function skyWorkersTask(req: WorkerRequest, cfg: SkypilotWorkersConfig): Record<string, unknown> {
  checkSkyWorkers(cfg);
  const ws = cfg.workspace.path;
  const line = workerShellLine(req, `"$shard/${req.count}"`, { cli: cfg.cli, workspace: ws });
  const resources: Record<string, unknown> = { cpus: `${cfg.cpus}+` };
  if (cfg.cloud || cfg.region) resources.infra = [cfg.cloud ?? '*', ...(cfg.region ? [cfg.region] : [])].join('/');
  if (cfg.image) resources.image_id = cfg.image;
  if (cfg.useSpot) resources.use_spot = true;
  return {
    name: `${SKY_WORKERS_LABEL}-${req.runId.toLowerCase()}`,
    num_nodes: req.count,
    resources,
    ...(cfg.workspace.bucket ? { file_mounts: { [ws]: { source: cfg.workspace.bucket, mode: 'MOUNT_CACHED' } } } : {}),
    envs: { ...cfg.envs, ROLLOUT_LAB_SHARDS: String(req.count) },
    ...(cfg.secrets.length ? { secrets: Object.fromEntries(cfg.secrets.map((n) => [n, null])) } : {}),
    ...(cfg.setup.length ? { setup: ['set -e', ...cfg.setup].join('\n') } : {}),
    run: [
      // ROLLOUT_LAB_SHARD (set by a rerun of one slice) takes the place of the node's rank.
      'shard="${ROLLOUT_LAB_SHARD:-$SKYPILOT_NODE_RANK}"',
      // Every node of the task is followed by its coordinator; a rerun of one slice is not.
      `[ -n "$ROLLOUT_LAB_SHARD" ] || export ${COORDINATED_ENV}=1`,
      `echo "rollout-lab worker: slice $shard/${req.count} on $(hostname)" >&2`,
      `cd ${shellWord(ws)} || { echo "rollout-lab: the workspace ${ws} is not on this node" >&2; exit 2; }`,
      `exec ${line}`,
    ].join('\n'),
  };
}

export function skyWorkersTaskYaml(req: WorkerRequest, cfg: SkypilotWorkersConfig): string {
  return `# Rollout Lab: the workers of run ${req.runId}, one node per slice of ${req.count}.\n${stringify(skyWorkersTask(req, cfg), { lineWidth: 0 })}`;
}

/** `sky launch` of the task: detached, with an autodown for when nobody tears the cluster down. */
export function skyWorkersLaunch(cluster: string, taskFile: string, cfg: SkypilotWorkersConfig, extra: string[] = []): string[] {
  const autodown = cfg.down ? ['--idle-minutes-to-autostop', String(SAFETY_AUTODOWN_MINUTES), '--down'] : [];
  return ['sky', 'launch', '-c', cluster, taskFile, ...extra, '-y', '-d', ...autodown, ...cfg.secrets.flatMap((n) => ['--secret', n])];
}

/** "ERROR: Job 3 failed with return code list: [0, 1, 137] ...": each node rank's exit status. */
export function parseReturnCodes(log: string, jobId: number | null): number[] | null {
  let found: number[] | null = null;
  for (const raw of log.split('\n')) {
    const m = /Job (\d+) failed with return code list:\s*\[([\d,\s-]*)\]/.exec(cleanSkyLine(raw));
    if (m && (jobId === null || Number(m[1]) === jobId)) found = m[2]!.split(',').filter((s) => s.trim()).map(Number);
  }
  return found;
}

/** The lines of node rank K in the job's log ("(worker1, rank=1, pid=42, ip=10.0.0.2) text"), prefix removed. */
export function rankLines(log: string, rank: number, nodes: number): string[] {
  const out: string[] = [];
  for (const raw of log.split('\n')) {
    const line = raw.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
    const m = /^\(([^()]*)\) (.*)$/.exec(line);
    if (!m) continue;
    const r = /(?:^|,\s*)rank=(\d+)/.exec(m[1]!);
    if (r ? Number(r[1]) === rank : nodes === 1) out.push(m[2]!);
  }
  return out;
}

/** Every slice's worker from the job's status (one for all nodes) and, once it failed, each rank's return code. */
export function skyWorkerStates(count: number, status: string | null, codes: number[] | null, cancelled: boolean, cluster: string): WorkerStatus[] {
  return Array.from({ length: count }, (_, shard): WorkerStatus => {
    const at = (state: WorkerState, detail: string): WorkerStatus => ({ shard, state, detail, restarts: 0 });
    switch (status) {
      case 'INIT':
      case 'PENDING':
        return at('pending', status);
      case 'SETTING_UP':
        return at('pending', 'SETTING_UP (the setup lines run on every node)');
      case 'RUNNING':
        return at('running', 'RUNNING');
      case 'SUCCEEDED':
        return at('succeeded', 'SUCCEEDED');
      case 'CANCELLED':
        return at('cancelled', 'CANCELLED');
      case 'FAILED_SETUP':
        return at('failed', 'FAILED_SETUP: the setup lines failed on a node, so no worker ran');
      case 'FAILED_DRIVER':
        return at('failed', 'FAILED_DRIVER: SkyPilot\'s job driver failed (out of memory on the head node?)');
      case 'FAILED': {
        const code = codes?.[shard];
        if (code === undefined) return at('failed', 'FAILED (the job; this node\'s own exit status is not in its log)');
        if (code === 0) return at('succeeded', 'exit 0 (the job FAILED on another node)');
        const first = codes!.findIndex((c) => c !== 0 && c !== 137);
        if (code === 137 && first >= 0 && first !== shard) return at('failed', `killed by SkyPilot (exit 137) when slice ${first} failed`);
        return at('failed', `exit ${code}`);
      }
      case null:
        return cancelled ? at('cancelled', `cluster ${cluster} is gone`) : at('lost', `sky queue ${cluster} no longer lists the job`);
      default:
        return at(cancelled ? 'cancelled' : 'failed', status);
    }
  });
}

export function skypilotWorkers(cfg: SkypilotWorkersConfig): WorkerPlace {
  return {
    name: 'skypilot',
    async start(req: WorkerRequest): Promise<WorkerGroup> {
      checkSkyWorkers(cfg);
      const cluster = workersClusterName(req.runId, cfg);
      const dir = workersDir(req.workspace, req.runId);
      mkdirSync(dir, { recursive: true });
      const taskFile = path.join(dir, 'sky-workers.yaml');
      writeFileSync(taskFile, skyWorkersTaskYaml(req, cfg));
      const argv = skyWorkersLaunch(cluster, taskFile, cfg);
      const lines: string[] = [];
      const launched = await stream(argv, (line) => lines.push(cleanSkyLine(line)));
      if (launched.code !== 0) throw exitFailure(argv, launched.code, lines.slice(-5).join('\n'));
      const jobId = parseSkyJobId(lines.join('\n'));
      if (jobId === null) throw new RuntimeFailure(`sky launch -c ${cluster} said no job id: ${lines.slice(-3).join(' / ')}`);

      let cancelled = false;
      let last: WorkerStatus[] = Array.from({ length: req.count }, (_, shard) => ({ shard, state: 'pending', detail: 'launching', restarts: 0 }));
      let log: string | null = null;
      let downed = false;
      const readLog = async (): Promise<string> => {
        const r = await run(['sky', 'logs', '--no-follow', cluster, String(jobId)], { allowFail: true });
        return r.stdout;
      };
      return {
        label: `SkyPilot job ${jobId} on cluster ${cluster} (${req.count} node${req.count > 1 ? 's' : ''}; workspace ${cfg.workspace.path}${cfg.workspace.bucket ? ` = ${cfg.workspace.bucket}` : ''}; task ${taskFile})`,
        pollMs: cfg.pollSeconds * 1000,
        async poll() {
          if (downed) return last.map((s) => ({ ...s }));
          const q = await run(['sky', 'queue', cluster], { allowFail: true });
          if (q.code !== 0 && !/does not exist|not found|is not up/i.test(q.stderr + q.stdout)) throw new RuntimeFailure(`sky queue ${cluster}: ${lastLines(q.stderr, 2) || `exit ${q.code}`}`);
          const status = q.code === 0 ? parseSkyQueueStatus(q.stdout, jobId) : null;
          const ended = status !== null && ['SUCCEEDED', 'FAILED', 'FAILED_SETUP', 'FAILED_DRIVER', 'CANCELLED'].includes(status);
          if (ended && log === null) log = await readLog();
          const states = skyWorkerStates(req.count, status, status === 'FAILED' && log ? parseReturnCodes(log, jobId) : null, cancelled, cluster);
          // A slice seen ended keeps its end when the cluster goes away.
          last = states.map((s, k) => (s.state === 'lost' || s.state === 'cancelled') && ['succeeded', 'failed'].includes(last[k]!.state) ? last[k]! : s);
          if ((ended || status === null) && cfg.down && q.code === 0) {
            // Every worker has ended: the log is kept above for the tails, the cluster goes.
            await run(['sky', 'down', '-y', cluster], { allowFail: true });
            downed = true;
          }
          return last.map((s) => ({ ...s }));
        },
        async tail(shard) {
          log ??= await readLog();
          return rankLines(log, shard, req.count).slice(-TAIL_LINES);
        },
        async cancel() {
          cancelled = true;
          await run(['sky', 'cancel', '-y', cluster, String(jobId)]);
        },
        rerun(shard) {
          return skyWorkersLaunch(cluster, taskFile, cfg, ['--num-nodes', '1', '--env', `ROLLOUT_LAB_SHARD=${shard}`]).map(shellWord).join(' ');
        },
      };
    },
  };
}
