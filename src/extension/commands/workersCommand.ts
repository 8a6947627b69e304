import * as vscode from 'vscode';
import { bundledCli } from '../bundledCli';
import type { Lab } from '../../core/lab/lab';
import { runOutcomeText } from '../../core/analysis/runOutcome';
import { WORKER_PLACES, type WorkerPlaceName } from '../../core/config/workersSchema';
import { core } from '../coreLoader';
import { commandArgument } from '../featureContext';
import { parseRunArgs, validateCount, WorkersArgsSchema, type RunSummaryResult } from '../runArgs';
import { askPlan, pickLabFolder, planFromArgs, type RunCommandContext, type RunPlan } from './runCommands';

const PLACE_TEXT: Record<WorkerPlaceName, string> = {
  local: 'worker processes on this machine',
  slurm: 'a Slurm job array from this machine (a login node), the workspace on the shared filesystem; settings in lab.json "workers.slurm"',
  k8s: 'a Kubernetes Indexed Job, a pod per slice, the workspace on a ReadWriteMany claim; settings in lab.json "workers.k8s"',
  skypilot: 'one SkyPilot task on N nodes, a slice per node, the workspace on a bucket or shared filesystem; settings in lab.json "workers.skypilot"',
};

export type WorkersRunSummary = RunSummaryResult & { done: boolean; workers: Array<{ shard: string; state: string; detail: string | null; restarts: number }> };

/**
 * Run Rollouts on Workers: the plan of Run Rollouts, split over N workers
 * started where the user picks (`run --workers N --on PLACE`), followed in a
 * progress notification (rollouts over the whole run, and the workers
 * running, pending and ended) that cancels them. Each worker is this
 * extension's own CLI (node: VS Code's runtime as node, or the cluster's
 * command from lab.json); the Rollouts view fills in as they store rollouts.
 */
export async function runOnWorkersCommand(ctx: RunCommandContext, raw: unknown): Promise<WorkersRunSummary | undefined> {
  const args = parseRunArgs(commandArgument(raw), WorkersArgsSchema);
  const folder = args?.workspace ?? (args ? undefined : await pickLabFolder(ctx.service));
  if (folder === null) return undefined;
  return ctx.service.withLab(folder, async (lab, dir) => {
    const plan = args ? planFromArgs(lab, 'run', args) : await askPlan(lab, 'run');
    if (!plan) return undefined;
    const count = args?.workers ?? (await askCount());
    if (count === undefined) return undefined;
    const on = args?.on ?? (await askPlace());
    if (on === undefined) return undefined;
    return execute(ctx, lab, dir, plan, count, on);
  });
}

async function askCount(): Promise<number | undefined> {
  const text = await vscode.window.showInputBox({
    title: 'Rollout Lab: Run Rollouts on Workers',
    prompt: 'How many workers? Each runs one slice of the tasks at the lab\'s concurrency.',
    value: '4',
    ignoreFocusOut: true,
    validateInput: (v) => validateCount(v, false),
  });
  return text === undefined ? undefined : Number(text);
}

async function askPlace(): Promise<WorkerPlaceName | undefined> {
  const picked = await vscode.window.showQuickPick(
    WORKER_PLACES.map((p) => ({ label: p, detail: PLACE_TEXT[p], place: p })),
    { title: 'Rollout Lab: Run Rollouts on Workers', placeHolder: 'Where do the workers run?', ignoreFocusOut: true },
  );
  return picked?.place;
}

async function execute(ctx: RunCommandContext, lab: Lab, folder: string, plan: RunPlan, count: number, on: WorkerPlaceName): Promise<WorkersRunSummary> {
  const { output, service } = ctx;
  const { runOnWorkers, workerPlace } = await core.workers();
  const sim = lab.simulated ? ' (SIMULATED)' : '';
  const workspace = lab.loaded.workspaceDir;
  const { cli, env } = bundledCli();
  const args = ['--concurrency', String(plan.concurrency)];
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Rollout Lab${sim}: rollouts on ${count} worker${count > 1 ? 's' : ''} (${on})`, cancellable: true },
    async (progress, token) => {
      const controller = new AbortController();
      const sub = token.onCancellationRequested(() => {
        output.appendLine('cancelling: every worker is stopped; each finishes the rollouts it has in flight');
        controller.abort();
      });
      let shown = 0;
      try {
        return await runOnWorkers(lab, {
          command: 'run',
          plan: { command: 'run', ...plan },
          count,
          place: workerPlace(on, lab.loaded.config.workers),
          cli,
          args,
          workspace,
          env,
          signal: controller.signal,
          onStarted: (run, group) => {
            output.appendLine(`run ${run.runId}: ${run.keys.length} rollouts from ${run.datasetFile} (${run.params.split} split) on ${group.label}${sim}`);
            progress.report({ message: `0/${run.keys.length} · starting ${group.label}` });
            service.notifyStoreChanged(folder);
          },
          onLine: (k, line) => output.appendLine(`[worker ${k}/${count}] ${line}`),
          onProgress: (p) => {
            const running = p.workers.filter((w) => w.state === 'running').length;
            const pending = p.workers.filter((w) => w.state === 'pending').length;
            const ended = p.workers.length - running - pending;
            progress.report({
              increment: ((p.finished - shown) * 100) / Math.max(1, p.planned),
              message: `${p.finished}/${p.planned} rollouts, ${p.failed} failed · workers: ${running} running${pending ? `, ${pending} pending` : ''}${ended ? `, ${ended} ended` : ''}`,
            });
            if (p.finished !== shown) service.notifyStoreChanged(folder);
            shown = p.finished;
          },
        });
      } finally {
        sub.dispose();
      }
    },
  );
  service.notifyStoreChanged(folder);
  const { run, end, workers, group, cancelled } = result;
  const outcome = runOutcomeText(end.outcome);
  output.appendLine(`run ${run.runId}${end.done ? '' : cancelled ? ' cancelled' : ' not done'}: ${outcome} (${count} workers on ${on})`);
  const stopped = workers.filter((w) => w.state !== 'succeeded');
  for (const w of stopped) {
    output.appendLine(`worker ${w.shard}/${count} ${w.state} (${w.detail ?? ''}); its last lines:`);
    for (const line of await group.tail(w.shard)) output.appendLine(`  ${line}`);
    output.appendLine(`rerun slice ${w.shard}/${count} with: ${group.rerun(w.shard)}`);
  }
  const mean = end.metrics.averageFinalReward === null ? 'n/a' : end.metrics.averageFinalReward.toFixed(3);
  if (end.done) {
    void vscode.window.showInformationMessage(`Rollout Lab${sim}: ${run.runId} finished on ${count} workers: ${outcome}, mean reward ${mean}`, 'Open Reward Curve').then((a) => {
      if (a) ctx.openRewardCurve();
    });
  } else {
    output.appendLine(`finish every slice with: rollout-lab run --resume ${run.runId} --workers ${count} --on ${on} --workspace ${workspace}`);
    void vscode.window.showWarningMessage(`Rollout Lab${sim}: ${run.runId} ${cancelled ? 'cancelled' : 'not done'}: ${outcome}; ${stopped.length} worker${stopped.length === 1 ? '' : 's'} did not succeed`, 'Show Output').then((a) => {
      if (a) output.show(true);
    });
  }
  return {
    runId: run.runId,
    rollouts: end.rollouts,
    succeeded: end.metrics.succeeded,
    failed: end.metrics.failed,
    simulated: end.simulated,
    cancelled,
    done: end.done,
    workers: workers.map((w) => ({ shard: `${w.shard}/${count}`, state: w.state, detail: w.detail, restarts: w.restarts })),
  };
}
