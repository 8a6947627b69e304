import { bundledCli } from '../bundledCli';
import * as vscode from 'vscode';
import * as path from 'node:path';
import { core } from '../coreLoader';
import type { ModelRegistryEntry } from '../../core/config/modelRegistry';
import type { PhaseRecord } from '../../core/train/phases/pipelineState';
import type { FeatureContext } from '../featureContext';
import { TrainingTree, type TrainingNode, type TrainingSnapshotItem } from './trainingTree';

/** `rolloutLab.runTrainingPhase`'s argument object (tests, other commands): the phase's final record comes back. */
interface RunPhaseArgs {
  phase: string;
  folder?: string;
  /** A gather phase: fewer tasks or samples than declared. */
  limit?: number;
  samples?: number;
  /** A data phase: also use simulated rollouts (the phase's own includeSimulated does the same). */
  includeSimulated?: boolean;
}

/** `rolloutLab.rollbackModelVersion`'s argument object; `confirm: true` skips the question. */
interface RollbackArgs {
  model: string;
  folder?: string;
  confirm?: boolean;
}

/**
 * The Training view and its commands: run a phase of the pipeline (with
 * cancellable progress; the view follows it live), roll a model back to its
 * previous version, refresh. pipeline.json and registry.json are watched, so
 * phases run and versions registered by the CLI show up too; a registry
 * change reopens the lab, so the next rollouts use the active version.
 */
export function registerPipelineCommands(ctx: FeatureContext): { trainingTree: TrainingTree } {
  const tree = new TrainingTree(ctx.lab);
  const view = vscode.window.createTreeView('rolloutLab.training', { treeDataProvider: tree, showCollapseAll: true });

  const registryWatcher = vscode.workspace.createFileSystemWatcher('**/.rollout-lab/registry.json');
  const pipelineWatcher = vscode.workspace.createFileSystemWatcher('**/.rollout-lab/**/pipeline.json');
  const onRegistry = (uri: vscode.Uri): void => {
    ctx.lab.invalidate(path.dirname(path.dirname(uri.fsPath)));
    tree.poke();
  };
  const onPipeline = (): void => tree.poke();
  ctx.extension.subscriptions.push(
    tree,
    view,
    registryWatcher,
    pipelineWatcher,
    registryWatcher.onDidChange(onRegistry),
    registryWatcher.onDidCreate(onRegistry),
    registryWatcher.onDidDelete(onRegistry),
    pipelineWatcher.onDidChange(onPipeline),
    pipelineWatcher.onDidCreate(onPipeline),
    pipelineWatcher.onDidDelete(onPipeline),
  );

  ctx.register('rolloutLab.runTrainingPhase', (arg) => runTrainingPhase(ctx, tree, arg));
  ctx.register('rolloutLab.rollbackModelVersion', (arg) => rollback(ctx, tree, arg));
  ctx.register('rolloutLab.refreshTraining', async (): Promise<TrainingSnapshotItem[]> => {
    tree.refresh();
    return tree.snapshot();
  });
  return { trainingTree: tree };
}

async function runTrainingPhase(ctx: FeatureContext, tree: TrainingTree, arg: unknown): Promise<PhaseRecord | undefined> {
  const args = await phaseArgs(ctx, tree, arg);
  if (!args) return undefined;
  const { runPhase } = await core.runPhase();
  const folder = ctx.lab.resolveFolder(args.folder);
  const record = await ctx.lab.withLab(folder, async (lab): Promise<PhaseRecord> =>
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Rollout Lab: phase ${args.phase}${lab.simulated ? ' (SIMULATED endpoint)' : ''}`, cancellable: true },
      async (progress, token) => {
        const controller = new AbortController();
        const sub = token.onCancellationRequested(() => {
          ctx.log(`phase ${args.phase}: cancelling`);
          controller.abort();
        });
        try {
          return await runPhase(lab, args.phase, {
            signal: controller.signal,
            log: ctx.log,
            limit: args.limit,
            samples: args.samples,
            workerCli: bundledCli(),
            ...(args.includeSimulated ? { includeSimulated: true } : {}),
            onUpdate: (r) => {
              const c = r.counts;
              if (r.state === 'running' && c.planned) progress.report({ message: `${c.rollouts ?? 0}/${c.planned} rollouts` });
              tree.poke();
              // A gather phase writes rollouts: the Rollouts view follows them.
              if (r.runId) ctx.lab.notifyStoreChanged(folder);
            },
          });
        } finally {
          sub.dispose();
        }
      },
    ),
  );
  tree.refresh();
  if (record.state === 'done') {
    void vscode.window.showInformationMessage(`Phase ${record.name} done${record.produced ? `: ${record.produced.kind} ${record.produced.id}` : ''}.${record.note ? ` ${record.note}` : ''}`);
  } else if (record.state === 'cancelled') {
    void vscode.window.showInformationMessage(`Phase ${record.name} cancelled.`);
  } else {
    void vscode.window.showErrorMessage(`Phase ${record.name} failed: ${record.error ?? 'unknown error'}`);
  }
  return record;
}

async function phaseArgs(ctx: FeatureContext, tree: TrainingTree, arg: unknown): Promise<RunPhaseArgs | undefined> {
  const node = arg as TrainingNode | undefined;
  if (node?.kind === 'phase') return { phase: node.status.phase.name, folder: node.folder };
  const a = arg as Partial<RunPhaseArgs> | undefined;
  if (a && typeof a === 'object' && typeof a.phase === 'string') {
    const int = (x: unknown, name: string): number | undefined => {
      if (x === undefined) return undefined;
      if (typeof x !== 'number' || !Number.isInteger(x) || x < 1) throw new Error(`${name} must be a whole number ≥ 1`);
      return x;
    };
    if (a.includeSimulated !== undefined && typeof a.includeSimulated !== 'boolean') throw new Error('includeSimulated must be true or false');
    return {
      phase: a.phase,
      folder: typeof a.folder === 'string' ? a.folder : undefined,
      limit: int(a.limit, 'limit'),
      samples: int(a.samples, 'samples'),
      ...(a.includeSimulated ? { includeSimulated: true } : {}),
    };
  }
  const folder = ctx.lab.resolveFolder();
  const status = await tree.status(folder);
  if (status.example) {
    // A module graph without training.phases: nothing to pick; say how to declare its pipeline.
    const choice = await vscode.window.showInformationMessage(
      'No training pipeline is declared: this lab runs its own graph, which has no reference pipeline. Add "training.phases" to lab.json (the Training view shows an example built from its agents).',
      'Copy Example',
    );
    if (choice === 'Copy Example') {
      const { pipelineExampleText } = await core.phases();
      await vscode.env.clipboard.writeText(pipelineExampleText(status.example));
    }
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    status.phases.map((p) => ({ label: p.phase.name, description: `${p.phase.kind} · ${p.record.state}`, detail: p.record.error ?? p.record.note ?? undefined })),
    { title: 'Run Training Phase', placeHolder: 'The phase to run now' },
  );
  return picked ? { phase: picked.label, folder } : undefined;
}

async function rollback(ctx: FeatureContext, tree: TrainingTree, arg: unknown): Promise<ModelRegistryEntry | undefined> {
  const node = arg as TrainingNode | undefined;
  let model: string | undefined;
  let folder: string | undefined;
  let confirmed = false;
  if (node?.kind === 'model') {
    model = node.model.name;
    folder = node.folder;
  } else if (node?.kind === 'version') {
    model = node.model;
    folder = node.folder;
  } else if (arg && typeof arg === 'object' && typeof (arg as RollbackArgs).model === 'string') {
    const a = arg as RollbackArgs;
    model = a.model;
    folder = a.folder;
    confirmed = a.confirm === true;
  }
  folder = ctx.lab.resolveFolder(folder);
  const status = await tree.status(folder);
  if (!model) {
    const versioned = status.models.filter((m) => m.active !== null);
    if (versioned.length === 0) {
      void vscode.window.showInformationMessage("Every model runs lab.json's own settings: there is no registered version to roll back from.");
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(
      versioned.map((m) => ({ label: m.name, description: `version ${m.active}` })),
      { title: 'Roll Back Model Version', placeHolder: 'The model to roll back' },
    );
    if (!picked) return undefined;
    model = picked.label;
  }
  const m = status.models.find((x) => x.name === model);
  if (!m) throw new Error(`model "${model}" is neither in lab.json nor in the registry`);
  if (m.active === null) throw new Error(`model "${model}" already runs lab.json's own settings — there is no registered version to roll back from`);
  const previous = m.history.at(-2) ?? null;
  const target = previous ? `version ${previous}` : "lab.json's own settings";
  if (!confirmed) {
    const answer = await vscode.window.showWarningMessage(
      `Roll "${model}" back from version ${m.active} to ${target}?`,
      { modal: true, detail: 'The next rollouts use it. The version stays registered.' },
      'Roll Back',
    );
    if (answer !== 'Roll Back') return undefined;
  }
  const { rollbackModelVersion, routedVersion, routesText } = await core.modelRegistry();
  const entry = rollbackModelVersion(path.join(folder, '.rollout-lab'), model);
  // The lab is opened again on next use, with the registry's new active version laid over lab.json.
  ctx.lab.invalidate(folder);
  tree.refresh();
  // Versions may serve some of the model's agents only: say what each agent runs now.
  const routes = m.routes.map((r) => ({ agent: r.agent, version: routedVersion(entry, r.agent)?.version ?? null }));
  const now = routes.length ? routesText(routes) : entry.active ? `version ${entry.active}` : "lab.json's own settings";
  ctx.log(`model ${model}: rolled back one step: ${now}`);
  void vscode.window.showInformationMessage(`"${model}" rolled back one step: ${now}; the next rollouts use it.`);
  return entry;
}
