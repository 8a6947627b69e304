import * as vscode from 'vscode';
import * as path from 'node:path';
import type { Lab } from '../../core/lab/lab';
import type { EvalMetrics } from '../../core/analysis/metrics';
import { BatchRunParamsSchema, type BatchPlan } from '../../core/rollout/batchPlan';
import { runOutcomeText } from '../../core/analysis/runOutcome';
import { core } from '../coreLoader';
import { commandArgument } from '../featureContext';
import type { LabService } from '../labService';
import type { RolloutsTreeNode } from '../rolloutsTree';
import { parseRunArgs, validateCount, type RunArgs, type RunSummaryResult } from '../runArgs';
import { progressMessage } from '../view/rolloutPresentation';

export type EvaluateResult = EvalMetrics & { runId: string; simulated: boolean; cancelled: boolean };

export interface RunCommandContext {
  service: LabService;
  output: vscode.OutputChannel;
  /** Opens the reward curve (an action on the finished-run message). */
  openRewardCurve(): void;
  /** An evaluation finished (the walkthrough's step). */
  evaluated(): void;
}

/** The batch plan as the pickers or the argument give it: the command comes from the mode, the seed from lab.json. */
export type RunPlan = Pick<BatchPlan, 'dataset' | 'limit'> & Required<Pick<BatchPlan, 'split' | 'samples' | 'concurrency'>>;

const BROWSE = '$(folder-opened) Browse…';

/**
 * Run Rollouts (`mode` 'run', train split by default) and Evaluate on
 * Validation Set ('eval', val split, then the metrics table). With an
 * argument object the pickers are skipped. Resolves to undefined when the
 * user dismissed a picker.
 */
export async function runBatchCommand(ctx: RunCommandContext, mode: 'run', raw: unknown): Promise<RunSummaryResult | undefined>;
export async function runBatchCommand(ctx: RunCommandContext, mode: 'eval', raw: unknown): Promise<EvaluateResult | undefined>;
export async function runBatchCommand(ctx: RunCommandContext, mode: 'run' | 'eval', raw: unknown): Promise<RunSummaryResult | EvaluateResult | undefined> {
  // From the Rollouts view's title bar or a row's menu, the argument is the selected row: its lab and run propose the answers.
  const selected = selectedRun(raw);
  const args = parseRunArgs(commandArgument(raw));
  const folder = args?.workspace ?? (args ? undefined : (selected?.folder ?? (await pickLabFolder(ctx.service))));
  if (folder === null) return undefined;
  return ctx.service.withLab(folder, async (lab, dir) => {
    // The row's run is read from the lab held here: a store retired since the view listed it (lab.json changed) is open again.
    const params = selected?.run?.params ?? (selected?.runId ? lab.store.getRun(selected.runId)?.params : undefined);
    const plan = args ? planFromArgs(lab, mode, args) : await askPlan(lab, mode, proposal(mode, params));
    if (!plan) return undefined;
    return execute(ctx, lab, dir, mode, plan);
  });
}

/** What the pickers propose first: the options of the run selected in the view. */
interface Proposal {
  dataset?: string;
  split?: RunPlan['split'];
  /** null: all tasks. */
  limit?: number | null;
  samples?: number;
}

/** The lab and the run's options of a Rollouts-view row (a run, one of its rollouts, its "Load more…", a lab). */
function selectedRun(raw: unknown): { folder: string; runId?: string; run?: { params: Record<string, unknown> } } | undefined {
  const node = raw as RolloutsTreeNode | undefined;
  if (typeof node !== 'object' || node === null || typeof node.folder !== 'string') return undefined;
  if (node.kind === 'run') return { folder: node.folder, runId: node.run.id, run: node.run };
  const runId = node.kind === 'rollout' ? node.rollout.runId : node.kind === 'more' ? node.runId : undefined;
  return { folder: node.folder, ...(runId ? { runId } : {}) };
}

/**
 * A selected run of the same command proposes all its options again; another
 * kind of run (an evaluation seen from Run Rollouts, a comparison…) only its dataset.
 */
function proposal(mode: 'run' | 'eval', params: Record<string, unknown> | undefined): Proposal {
  if (!params) return {};
  const p: Proposal = {};
  // Field by field: a comparison's or an older run's options still propose what fits.
  const field = BatchRunParamsSchema.shape;
  const dataset = field.dataset.safeParse(params.dataset);
  if (dataset.success && dataset.data !== null) p.dataset = dataset.data;
  if ((params.command ?? 'run') !== mode) return p;
  const split = field.split.safeParse(params.split);
  if (split.success) p.split = split.data;
  const limit = field.limit.safeParse(params.limit);
  if (limit.success) p.limit = limit.data;
  const samples = field.samples.safeParse(params.samples);
  if (samples.success) p.samples = samples.data;
  return p;
}

/** null: the user dismissed the picker; undefined: the only (or active) lab. */
export async function pickLabFolder(service: LabService): Promise<string | null | undefined> {
  const folders = service.labFolders();
  if (folders.length <= 1) return undefined;
  const picked = await vscode.window.showQuickPick(
    folders.map((f) => ({ label: path.basename(f), description: f, folder: f })),
    { title: 'Rollout Lab: which lab?', placeHolder: 'Several workspace folders have a .rollout-lab/lab.json' },
  );
  return picked ? picked.folder : null;
}

export function planFromArgs(lab: Lab, mode: 'run' | 'eval', a: RunArgs): RunPlan {
  const runner = lab.loaded.config.runner;
  return {
    dataset: a.dataset,
    split: a.split ?? (mode === 'eval' ? 'val' : 'train'),
    limit: a.limit,
    samples: a.samples ?? (mode === 'eval' ? 1 : runner.samples),
    concurrency: a.concurrency ?? runner.concurrency,
  };
}

export async function askPlan(lab: Lab, mode: 'run' | 'eval', proposed: Proposal = {}): Promise<RunPlan | undefined> {
  const { config, workspaceDir } = lab.loaded;
  const title = mode === 'eval' ? 'Rollout Lab: Evaluate on Validation Set' : 'Rollout Lab: Run Rollouts';
  const steps = mode === 'eval' ? 3 : 4;
  let step = 1;

  type DatasetItem = vscode.QuickPickItem & { key?: string };
  const items: DatasetItem[] = Object.entries(config.datasets).map(([key, d]) => ({
    label: key,
    description: d.path,
    detail: `${Math.round(d.trainFraction * 100)} % train / ${Math.round((1 - d.trainFraction) * 100)} % val${key === (config.runner.dataset ?? Object.keys(config.datasets)[0]) ? ' · default' : ''}`,
    key,
  }));
  // The proposed dataset goes first, so Enter takes it: a key of lab.json's datasets, or a file another run used.
  const proposedAt = items.findIndex((i) => i.key === proposed.dataset);
  if (proposedAt > 0) items.unshift(...items.splice(proposedAt, 1));
  else if (proposedAt < 0 && proposed.dataset) items.unshift({ label: path.basename(proposed.dataset), description: proposed.dataset, detail: 'the selected run\'s dataset', key: proposed.dataset });
  items.push({ label: BROWSE, description: 'a JSONL file, PubMedQA ori_pqal.json or a pubmed_qa export', alwaysShow: true });
  // ignoreFocusOut: the four questions are one form, and the walkthrough that started it redraws (taking the focus) as a lab opens or a step ticks off.
  const picked = await vscode.window.showQuickPick(items, { title: `${title} (${step++}/${steps})`, placeHolder: 'Dataset', ignoreFocusOut: true });
  if (!picked) return undefined;
  let dataset = picked.key;
  if (!dataset) {
    const files = await vscode.window.showOpenDialog({
      title: 'Dataset file',
      defaultUri: vscode.Uri.file(workspaceDir),
      canSelectMany: false,
      filters: { Datasets: ['jsonl', 'json'], 'All files': ['*'] },
    });
    if (!files?.[0]) return undefined;
    dataset = files[0].fsPath;
  }

  let split: RunPlan['split'] = 'val';
  if (mode === 'run') {
    const splits = [
      { label: 'train', description: 'the first part of the dataset (trainFraction)' },
      { label: 'val', description: 'the held-out rest' },
      { label: 'all', description: 'every task' },
    ];
    const s = await vscode.window.showQuickPick(
      [...splits.filter((i) => i.label === proposed.split), ...splits.filter((i) => i.label !== proposed.split)],
      { title: `${title} (${step++}/${steps})`, placeHolder: 'Split', ignoreFocusOut: true },
    );
    if (!s) return undefined;
    split = s.label as RunPlan['split'];
  }

  const limitText = await vscode.window.showInputBox({
    title: `${title} (${step++}/${steps})`,
    prompt: `How many ${split === 'all' ? '' : `${split} `}tasks? Leave empty for all of them.`,
    value: proposed.limit !== undefined ? String(proposed.limit ?? '') : mode === 'eval' ? '' : '10',
    placeHolder: 'all',
    ignoreFocusOut: true,
    validateInput: (v) => validateCount(v, true),
  });
  if (limitText === undefined) return undefined;

  const samplesText = await vscode.window.showInputBox({
    title: `${title} (${step++}/${steps})`,
    prompt: 'Samples per task (a GRPO group size; 1 for a plain run)',
    value: String(proposed.samples ?? (mode === 'eval' ? 1 : config.runner.samples)),
    ignoreFocusOut: true,
    validateInput: (v) => validateCount(v, false),
  });
  if (samplesText === undefined) return undefined;

  return {
    dataset,
    split,
    limit: limitText.trim() ? Number(limitText) : undefined,
    samples: Number(samplesText),
    concurrency: config.runner.concurrency,
  };
}

async function execute(ctx: RunCommandContext, lab: Lab, folder: string, mode: 'run' | 'eval', plan: RunPlan): Promise<RunSummaryResult | EvaluateResult> {
  const { output, service } = ctx;
  const { runBatch } = await core.batch();
  const { warningSummaryLine } = await core.runWarnings();
  // Before the run: the simulator is up for some model; after it, what it actually answered.
  const simStarted = lab.simulated ? ' (SIMULATED)' : '';

  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Rollout Lab${simStarted}: ${mode === 'eval' ? 'evaluating' : 'running rollouts'}`, cancellable: true },
    async (progress, token) => {
      const controller = new AbortController();
      const sub = token.onCancellationRequested(() => {
        output.appendLine('cancelling: the rollouts in flight finish, no new ones start');
        controller.abort();
      });
      try {
        return await runBatch(lab, { command: mode, ...plan }, {
          signal: controller.signal,
          onPlanned: ({ params, concurrency, tasks, datasetFile }) => {
            if (tasks === 0) throw new Error(`the ${params.split} split of ${datasetFile} has no tasks — pick another split or dataset`);
            const notice = lab.simulationNotice();
            if (notice) output.appendLine(notice);
            output.appendLine(
              `${mode}: ${tasks} tasks × ${params.samples} sample${params.samples > 1 ? 's' : ''} from ${datasetFile} (${params.split} split), concurrency ${concurrency}${simStarted}`,
            );
          },
          onStart: ({ runId, total }) => {
            output.appendLine(`run ${runId}: ${total} rollouts to do`);
            progress.report({ message: `0/${total}` });
            service.notifyStoreChanged(folder);
          },
          onProgress: (p) => {
            progress.report({ increment: 100 / Math.max(1, p.total), message: progressMessage(p) });
            const r = p.last;
            if (r) {
              const reward = r.finalReward === null ? 'n/a' : r.finalReward.toFixed(3);
              output.appendLine(`[${p.done}/${p.total}] ${r.taskId} ${r.status} reward ${reward}${r.error ? `: ${r.error}` : ''}`);
            }
            service.notifyStoreChanged(folder);
          },
          // Once per kind and run: a cut prompt or a failing reward hides behind plausible numbers otherwise.
          onWarning: (w) => {
            output.appendLine(`warning: ${w.message}`);
            void vscode.window.showWarningMessage(`Rollout Lab${simStarted}: ${w.message}`, 'Show Output').then((a) => {
              if (a) output.show(true);
            });
          },
          // A stalled server or a flaky proxy shows in the output as it happens, not only in the summary.
          onRetry: (n) => output.appendLine(`retry: ${n.message}`),
        });
      } finally {
        sub.dispose();
      }
    },
  );
  service.notifyStoreChanged(folder);

  const { metrics, simulated } = result;
  const sim = simulated ? ' (SIMULATED)' : '';
  const mean = metrics.averageFinalReward === null ? 'n/a' : metrics.averageFinalReward.toFixed(3);
  const outcome = runOutcomeText(result.outcome);
  output.appendLine(`run ${result.runId}${result.cancelled ? ' cancelled' : ''}: ${outcome}, mean reward ${mean}${sim}`);
  if (result.cancelled) output.appendLine(`cancelled — resume from a terminal with: rollout-lab ${mode} --resume ${result.runId} --workspace ${folder}`);
  for (const w of result.warnings) output.appendLine(`warning: ${warningSummaryLine(w, result.ranNow)}`);

  const allFailed = result.allFailedError !== null;
  if (allFailed) {
    void vscode.window.showWarningMessage(`Rollout Lab${sim}: every rollout of ${result.runId} failed; the first error was: ${result.allFailedError}`, 'Show Output').then((a) => {
      if (a) output.show(true);
    });
  }

  if (mode === 'eval') {
    ctx.evaluated();
    const { metricsTable } = await core.metricsTable();
    output.appendLine(metricsTable(metrics, simulated));
    output.show(true);
    await openReport(ctx, folder, result.runId);
    if (!allFailed) {
      const align = !metrics.shape.alignment ? '' : `, decision alignment ${metrics.decisionAlignment === null ? 'n/a' : `${metrics.decisionAlignment.toFixed(1)} %`}`;
      void vscode.window.showInformationMessage(
        `Rollout Lab${sim}: evaluation of ${metrics.rollouts} val rollouts — success ${metrics.executionSuccessRate.toFixed(1)} %, mean reward ${mean}${align}`,
      );
    }
    return { ...metrics, runId: result.runId, simulated, cancelled: result.cancelled };
  }

  if (!allFailed) {
    void vscode.window
      .showInformationMessage(
        `Rollout Lab${sim}: ${result.runId} ${result.cancelled ? 'cancelled' : 'finished'}: ${outcome}, mean reward ${mean}`,
        'Open Reward Curve',
      )
      .then((a) => {
        if (a) ctx.openRewardCurve();
      });
  }
  return { runId: result.runId, rollouts: metrics.rollouts, succeeded: metrics.succeeded, failed: metrics.failed, simulated, cancelled: result.cancelled };
}

/**
 * The evaluation report of the run that just finished, beside the Output
 * table: the breakdowns and failure categories explain the numbers there. A
 * panel that cannot open does not fail the evaluation that already ran.
 */
async function openReport(ctx: RunCommandContext, folder: string, runId: string): Promise<void> {
  try {
    await vscode.commands.executeCommand('rolloutLab.openEvaluationReport', { runId, folder });
  } catch (err) {
    ctx.output.appendLine(`could not open the evaluation report of ${runId}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
