import * as vscode from 'vscode';
import { core } from '../coreLoader';
import { jobSecrets } from './jobFiles';
import { stopJobQuestion } from './jobText';
import * as path from 'node:path';
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { TrainerBackend } from '../../core/config/trainingSchema';
import type { JobRecord } from '../../core/train/jobs/jobRecord';
import type { DryRun, TrainOptions } from '../../core/train/jobs/jobDraft';
import type { PhaseRecord } from '../../core/train/phases/pipelineState';
import { commandArgument, type FeatureContext } from '../featureContext';
import { jobLogPath, labFolderOf, listJobsOf, readJobOf } from './jobFiles';
import { JobFollowers } from './jobFollowers';
import { JobsSection, jobDescription } from './jobsTree';
import { pickLaunch } from './launchPickers';
import { CurvesPanels, type CurvesPanel } from './trainingCurvesPanel';
import { parseArgs, withProgress, type Jobs } from './jobCommandSupport';
import { startOnline } from './onlineTrainingCommand';
import type { TrainingNode, TrainingTree } from './trainingTree';

const HyperValue = z.union([z.number(), z.string(), z.boolean(), z.array(z.string())]);

/** `rolloutLab.launchTrainingPhase`'s argument object: it skips the pickers (tests, keybindings). */
const LaunchArgs = z.strictObject({
  phase: z.string().min(1),
  target: z.string().min(1).optional(),
  baseModel: z.string().min(1).optional(),
  backend: TrainerBackend.optional(),
  hyperparameters: z.record(z.string(), HyperValue).optional(),
  serve: z.boolean().optional(),
  folder: z.string().optional(),
  dryRun: z.boolean().optional(),
  /** Also train on simulated rollouts (the phase's own includeSimulated does the same). */
  includeSimulated: z.boolean().optional(),
});
type LaunchArgs = z.infer<typeof LaunchArgs>;

/** The argument of the per-job commands: a job id (and its lab), or the view item they were invoked on. */
const JobArgs = z.strictObject({ id: z.string().min(1), folder: z.string().optional(), confirm: z.boolean().optional(), target: z.string().min(1).optional() });
type JobArgs = z.infer<typeof JobArgs>;

/** How long after activation a window looks for jobs a reload left running, when the Training view has not looked yet. */
const REATTACH_DELAY_MS = 10_000;
const ACTIVE = new Set(['launching', 'running', 'fetching']);
const GPU_KINDS = new Set(['sft', 'grpo']);

/** What the extension-host tests reach of the training jobs (through the API activate() returns). */
export interface TrainingJobsApi {
  isFollowing(folder: string, id: string): boolean;
  /** The summary Launch Training Phase… shows to confirm ("Label: value" rows), while it is shown. */
  launchSummary(): string[] | undefined;
  curves(folder: string, id: string): Pick<CurvesPanel, 'notified' | 'isReady'> | undefined;
}

/**
 * Training jobs in the editor: Launch Training Phase… (pickers, pre-flight,
 * export, launch, then the job followed in the background), the "Rollout
 * Lab Training" output channel with each job's log, the Jobs section of the
 * Training view, the per-job commands (curves, log, cancel, serve,
 * reattach) and the reattach after a window reload.
 */
export function registerJobCommands(ctx: FeatureContext, tree: TrainingTree): TrainingJobsApi {
  const output = vscode.window.createOutputChannel('Rollout Lab Training');
  const followers = new JobFollowers(ctx, output);
  const curves = new CurvesPanels(ctx.extension.extensionUri, ctx.log);
  tree.setJobs(new JobsSection(followers, () => tree.poke()));

  // Jobs launched by the CLI (or another window) show up, and open curves follow their state.
  const watcher = vscode.workspace.createFileSystemWatcher('**/.rollout-lab/**/jobs/*/job.json');
  const onRecordFile = (uri: vscode.Uri): void => {
    tree.poke();
    const folder = labFolderOf(uri.fsPath);
    if (folder) curves.recordChanged(folder, path.basename(path.dirname(uri.fsPath)));
  };
  const reattachTimer = setTimeout(() => {
    for (const folder of ctx.lab.labFolders()) void followers.reattachAll(folder).catch((err: unknown) => ctx.log(`reattaching training jobs in ${folder}: ${String(err)}`));
  }, REATTACH_DELAY_MS);
  ctx.extension.subscriptions.push(
    output,
    followers,
    curves,
    watcher,
    watcher.onDidChange(onRecordFile),
    watcher.onDidCreate(onRecordFile),
    watcher.onDidDelete(onRecordFile),
    { dispose: () => clearTimeout(reattachTimer) },
    followers.onActivity((a) => {
      tree.poke();
      if (a.jobId) curves.update(a.folder, a.jobId, a.kind === 'record' ? a.record : undefined);
    }),
  );

  const jobs: Jobs = { ctx, followers, curves, output, tree, confirming: undefined };
  ctx.register('rolloutLab.launchTrainingPhase', (arg) => launch(jobs, arg));
  ctx.register('rolloutLab.cancelTrainingJob', (arg) => cancel(jobs, arg));
  ctx.register('rolloutLab.serveTrainingJob', (arg) => serve(jobs, arg));
  ctx.register('rolloutLab.reattachTrainingJob', (arg) => reattach(jobs, arg));
  ctx.register('rolloutLab.showTrainingJobLog', (arg) => showLog(jobs, arg));
  ctx.register('rolloutLab.startOnlineTraining', (arg) => startOnline(jobs, arg));
  ctx.register('rolloutLab.openTrainingCurves', async (arg) => {
    const ref = await jobRef(jobs, arg, 'Open Training Curves', () => true);
    if (ref) curves.show(ref.folder, ref.id);
  });
  return {
    isFollowing: (folder, id) => followers.isFollowing(folder, id),
    launchSummary: () => jobs.confirming,
    curves: (folder, id) => curves.get(folder, id),
  };
}



async function launch(jobs: Jobs, arg: unknown): Promise<JobRecord | PhaseRecord | DryRun | undefined> {
  const { ctx, followers, output } = jobs;
  const explicit = commandArgument(arg);
  const args: LaunchArgs | undefined = explicit === undefined ? undefined : parseArgs(LaunchArgs, explicit, 'Launch Training Phase takes { phase, target?, baseModel?, backend?, hyperparameters?, serve?, folder?, dryRun?, includeSimulated? }');
  const node = arg as TrainingNode | undefined;
  const fromPhase = node?.kind === 'phase' ? node : undefined;
  const folder = ctx.lab.resolveFolder(args?.folder ?? fromPhase?.folder);
  const { loadConfig } = await core.config();
  const loaded = await loadConfig(folder);
  let opts: TrainOptions;
  if (args) {
    opts = { phase: args.phase, target: args.target, baseModel: args.baseModel, ...(args.backend ? { backend: args.backend } : {}), hyperparameters: args.hyperparameters, serve: args.serve, ...(args.includeSimulated ? { includeSimulated: true } : {}) };
  } else {
    const { pipelinePhases } = await core.phases();
    const { referenceHyperparameters } = await core.jobBundle();
    const choice = await pickLaunch(loaded, pipelinePhases(loaded.config), referenceHyperparameters, fromPhase?.status.phase.name);
    if (!choice) return undefined;
    opts = { phase: choice.phase.name, target: choice.target, baseModel: choice.baseModel, hyperparameters: choice.hyperparameters, serve: choice.serve };
  }
  opts.secrets = await jobSecrets(ctx, loaded.config.training.trainer.secrets);
  const { labJobContext } = await core.labJobContext();
  const { resolvePhase } = await core.jobContext();
  const { dryRunTraining } = await core.jobDraft();
  const { launchTraining, trainPhase } = await core.trainPhase();

  if (args?.dryRun) {
    const dry = await ctx.lab.withLab(folder, (lab) => dryRunTraining(labJobContext(lab), opts, (l) => output.appendLine(l)));
    output.appendLine(`DRY RUN — nothing is launched. Job ${dry.spec.id} on ${dry.plan.target}:`);
    for (const step of dry.plan.steps) output.appendLine(`  ${step.title}: ${step.argv.join(' ')}`);
    void ctx.contextKeys.set('rolloutLab.dryRunShown', true);
    return dry;
  }

  if (!args) {
    // From the pickers: pre-flight and export once (a dry run), then the summary to confirm — Launch, Dry Run or Cancel.
    const phase = await ctx.lab.withLab(folder, async (lab) => resolvePhase(labJobContext(lab), opts.phase));
    if (GPU_KINDS.has(phase.kind)) {
      const log = (l: string): void => output.appendLine(l);
      const dry = await withProgress(`pre-flight and export of ${opts.phase}`, { log }, true, (signal, hooks) =>
        ctx.lab.withLab(folder, (lab) => dryRunTraining(labJobContext(lab), { ...opts, signal }, hooks.log)),
      );
      const { referenceHyperparameters } = await core.jobBundle();
      const { launchBlocker, launchSummary } = await import('./launchSummary');
      const rows = launchSummary(phase, dry, referenceHyperparameters(phase.kind as 'sft' | 'grpo'), opts.serve ?? true);
      const answer = await confirmLaunch(jobs, opts.phase, rows, launchBlocker(dry));
      if (answer === 'dry') return showDryRun(jobs, dry);
      if (answer !== 'launch') return undefined;
    }
  }

  const controller = new AbortController();
  const base = followers.hooks(folder, controller);
  const phaseKind = await ctx.lab.withLab(folder, async (lab) => resolvePhase(labJobContext(lab), opts.phase).kind);
  if (!GPU_KINDS.has(phaseKind)) {
    // bandit and apo (a gather too) train on this machine, as Run Training Phase runs them.
    const result = await withProgress(`phase ${opts.phase}`, base, true, (signal, hooks) => ctx.lab.withLab(folder, (lab) => trainPhase(labJobContext(lab), { ...opts, signal }, hooks)));
    jobs.tree.refresh();
    const rec = result.phase;
    if (rec.state === 'done') void vscode.window.showInformationMessage(`Phase ${rec.name} done${rec.produced ? `: ${rec.produced.kind} ${rec.produced.id}` : ''}.`);
    else if (rec.state === 'cancelled') void vscode.window.showInformationMessage(`Phase ${rec.name} cancelled.`);
    else void vscode.window.showWarningMessage(`Phase ${rec.name} failed: ${rec.error ?? 'unknown error'}`);
    return rec;
  }

  output.show(true);
  const launched = await withProgress(`launching ${opts.phase}${opts.target ? ` on ${opts.target}` : ''}`, base, true, (signal, hooks) =>
    ctx.lab.withLab(folder, (lab) => launchTraining(labJobContext(lab), { ...opts, signal }, hooks)),
  );
  jobs.tree.poke();
  if (launched.state === 'failed') {
    void vscode.window.showErrorMessage(`Rollout Lab: job ${launched.id} did not launch: ${launched.error ?? 'unknown error'}`);
    return launched;
  }
  const following = followers.followInBackground(folder, launched.id, controller);
  void vscode.window.showInformationMessage(`Rollout Lab: training job ${launched.id} runs on ${launched.targetName} (${launched.targetKind}).`, 'Open Training Curves', 'Show Log').then((a) => {
    if (a === 'Open Training Curves') jobs.curves.show(folder, launched.id);
    else if (a === 'Show Log') output.show();
  });
  // A call with an argument (a test, a keybinding) gets the final record; the palette and the view go on at once.
  return args ? following : launched;
}

type Confirm = 'launch' | 'dry' | 'cancel';

/**
 * The summary to confirm before a launch: Launch (Enter), Dry Run, Cancel,
 * and under them what will run. Picking a summary row keeps it open.
 * `blocker` says why Launch would fail here (no torch on this machine): it
 * stays offered, and says so.
 */
function confirmLaunch(jobs: Jobs, phase: string, rows: Array<{ label: string; value: string }>, blocker: string | null): Promise<Confirm | undefined> {
  type Item = vscode.QuickPickItem & { action?: Confirm };
  const items: Item[] = [
    { label: '$(rocket) Launch', description: blocker ? `$(warning) fails here: ${blocker}` : 'start the job now', action: 'launch' },
    { label: '$(beaker) Dry Run', description: 'only the pre-flight and export: shows the spec and every command, starts nothing', action: 'dry' },
    { label: '$(close) Cancel', description: 'launch nothing', action: 'cancel' },
    { label: 'What will run', kind: vscode.QuickPickItemKind.Separator },
    ...rows.map((r) => ({ label: r.value, description: r.label })),
  ];
  const qp = vscode.window.createQuickPick<Item>();
  qp.title = `Launch Training Phase ${phase}: confirm`;
  qp.placeholder = 'Launch, Dry Run or Cancel — the job that would run is summarised below';
  qp.items = items;
  qp.ignoreFocusOut = true;
  qp.matchOnDescription = true;
  jobs.confirming = rows.map((r) => `${r.label}: ${r.value}`);
  return new Promise((resolve) => {
    let result: Confirm | undefined;
    qp.onDidAccept(() => {
      const action = qp.activeItems[0]?.action;
      if (!action) return;
      result = action;
      qp.hide();
    });
    qp.onDidHide(() => {
      jobs.confirming = undefined;
      qp.dispose();
      resolve(result);
    });
    qp.show();
  });
}

/** Dry Run from the summary: what would run (the spec, the files, each command), in the output channel and an editor. */
async function showDryRun(jobs: Jobs, dry: DryRun): Promise<DryRun> {
  const { dryRunText } = await core.dryRunText();
  const text = dryRunText(dry);
  jobs.output.appendLine(text);
  const doc = await vscode.workspace.openTextDocument({ content: text, language: 'plaintext' });
  await vscode.window.showTextDocument(doc, { preview: true });
  void jobs.ctx.contextKeys.set('rolloutLab.dryRunShown', true);
  return dry;
}

/**
 * The job a per-job command works on: from its view item, its argument
 * object, or a quick pick of the lab's jobs (those `eligible` lets through).
 */
async function jobRef(jobs: Jobs, arg: unknown, command: string, eligible: (j: JobRecord) => boolean): Promise<(JobArgs & { folder: string }) | undefined> {
  const node = arg as TrainingNode | undefined;
  if (node?.kind === 'job') return { id: node.job.id, folder: node.folder };
  if (node?.kind === 'jobMetric' || node?.kind === 'jobInfo') return { id: node.jobId, folder: node.folder };
  const explicit = commandArgument(arg);
  if (explicit !== undefined) {
    const a = parseArgs(JobArgs, explicit, `${command} takes { id, folder? }`);
    return { ...a, folder: jobs.ctx.lab.resolveFolder(a.folder) };
  }
  const folder = jobs.ctx.lab.resolveFolder();
  const list = (await listJobsOf(folder)).jobs.filter(eligible);
  if (list.length === 0) {
    void vscode.window.showInformationMessage(`Rollout Lab: no training job to ${command.toLowerCase()} — launch one with "Launch Training Phase…".`);
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    list.map((j) => ({ label: j.id, description: jobDescription(j), detail: j.error ?? undefined, id: j.id })),
    { title: command, placeHolder: 'Training jobs, newest first', matchOnDescription: true },
  );
  return picked ? { id: picked.id, folder } : undefined;
}

async function cancel(jobs: Jobs, arg: unknown): Promise<JobRecord | undefined> {
  const ref = await jobRef(jobs, arg, 'Cancel Job', (j) => ACTIVE.has(j.state));
  if (!ref) return undefined;
  const { job } = await readJobOf(ref.folder, ref.id);
  if (!ACTIVE.has(job.state)) throw new Error(`job ${ref.id} is not running (it is ${job.state})`);
  if (ref.confirm !== true) {
    const q = stopJobQuestion(job);
    const answer = await vscode.window.showWarningMessage(q.message, { modal: true, detail: q.detail }, { title: q.stop }, { title: q.keep, isCloseAffordance: true });
    if (answer?.title !== q.stop) return undefined;
  }
  // Stop following first: the follower would otherwise record the killed process as a failure.
  jobs.followers.stop(ref.folder, ref.id);
  const { labJobContext } = await core.labJobContext();
  const { cancelJob } = await core.jobLifecycle();
  try {
    const rec = await cancelJob(labJobContext(await jobs.ctx.lab.lab(ref.folder)), ref.id);
    jobs.output.appendLine(`job ${ref.id}: ${rec.error ?? 'cancelled'}`);
    jobs.tree.poke();
    jobs.curves.update(ref.folder, ref.id, rec);
    return rec;
  } catch (err) {
    // The job still runs: keep following it.
    void jobs.followers.followInBackground(ref.folder, ref.id);
    throw err;
  }
}

async function serve(jobs: Jobs, arg: unknown): Promise<JobRecord | undefined> {
  const ref = await jobRef(jobs, arg, 'Serve Result', (j) => j.kind !== 'serve' && j.state === 'succeeded');
  if (!ref) return undefined;
  const { ctx, followers, output } = jobs;
  const { loadConfig } = await core.config();
  const secrets = await jobSecrets(ctx, (await loadConfig(ref.folder)).config.training.trainer.secrets);
  const { labJobContext } = await core.labJobContext();
  const { serveJobResult } = await core.jobLifecycle();
  // The serve job outlives this command: it is followed (and its port forwarded) under this controller until cancelled or the window closes.
  const controller = new AbortController();
  output.show(true);
  const served = await withProgress(`serving the result of ${ref.id}`, followers.hooks(ref.folder, controller), false, async (_signal, hooks) =>
    serveJobResult(labJobContext(await ctx.lab.lab(ref.folder)), ref.id, { ...(ref.target ? { target: ref.target } : {}), secrets }, hooks),
  );
  jobs.tree.poke();
  void vscode.window.showInformationMessage(
    `Rollout Lab: ${served.registered ? `"${served.registered.model}" version ${served.registered.version} is active, ` : ''}served at ${served.serveUrl} (job ${served.id}).`,
  );
  return served;
}

async function reattach(jobs: Jobs, arg: unknown): Promise<JobRecord | undefined> {
  const ref = await jobRef(jobs, arg, 'Reattach', (j) => ACTIVE.has(j.state));
  if (!ref) return undefined;
  const { job } = await readJobOf(ref.folder, ref.id);
  if (!ACTIVE.has(job.state)) throw new Error(`job ${ref.id} has ended (${job.state}): there is nothing to follow`);
  if (jobs.followers.isFollowing(ref.folder, ref.id)) {
    void vscode.window.showInformationMessage(`Rollout Lab: this window already follows job ${ref.id}.`);
    return job;
  }
  jobs.output.appendLine(`job ${ref.id}: reattaching (${job.state} on ${job.targetName})`);
  jobs.output.show(true);
  void jobs.followers.followInBackground(ref.folder, ref.id);
  return job;
}

async function showLog(jobs: Jobs, arg: unknown): Promise<string | undefined> {
  const ref = await jobRef(jobs, arg, 'Show Log', () => true);
  if (!ref) return undefined;
  const { trainingDir } = await readJobOf(ref.folder, ref.id);
  const file = jobLogPath(trainingDir, ref.id);
  if (!existsSync(file)) throw new Error(`job ${ref.id} has no log yet (${file})`);
  await vscode.window.showTextDocument(vscode.Uri.file(file), { preview: true });
  return file;
}
