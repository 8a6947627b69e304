import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';

/**
 * Activation stays cheap: the core (graph runner, store, sql.js) is loaded
 * only when a command first needs it.
 */
export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('Rollout Lab');
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('rolloutLab.initialize', () => initialize(output)),
    vscode.commands.registerCommand('rolloutLab.runRollouts', () => runRollouts(output)),
  );
}

export function deactivate(): void {}

function workspaceDir(): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) void vscode.window.showErrorMessage('Rollout Lab needs an open folder: open the folder that holds (or will hold) .rollout-lab/.');
  return folder?.uri.fsPath;
}

async function initialize(output: vscode.OutputChannel): Promise<void> {
  const dir = workspaceDir();
  if (!dir) return;
  try {
    const { initWorkspace } = await import('../core/config/init');
    const r = await initWorkspace(dir);
    output.appendLine(`Initialized ${dir}: created ${r.created.length}, kept ${r.skipped.length}`);
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(`${dir}/.rollout-lab/lab.json`));
    await vscode.window.showTextDocument(doc);
  } catch (err) {
    void vscode.window.showErrorMessage(`Rollout Lab: ${errorMessage(err)}`);
  }
}

async function runRollouts(output: vscode.OutputChannel): Promise<void> {
  const dir = workspaceDir();
  if (!dir) return;
  const limitText = await vscode.window.showInputBox({ prompt: 'How many training tasks?', value: '10', validateInput: (v) => (/^[1-9]\d*$/.test(v) ? null : 'a whole number ≥ 1') });
  if (!limitText) return;
  const { Lab } = await import('../core/rollout/lab');
  const { runRollouts: run } = await import('../core/rollout/runner');
  const { computeMetrics } = await import('../core/reward/metrics');
  let lab: Awaited<ReturnType<typeof Lab.open>> | undefined;
  try {
    lab = await Lab.open({ workspace: dir });
    const notice = lab.simulationNotice();
    if (notice) output.appendLine(notice);
    const ds = await lab.loadDataset();
    const tasks = lab.selectTasks(ds, { split: 'train', limit: Number(limitText), seed: lab.loaded.config.runner.seed });
    const env = await lab.environment(ds.tasks);
    const opened = lab;
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Rollout Lab${opened.simulated ? ' (SIMULATED)' : ''}`, cancellable: true },
      async (progress, token) => {
        const controller = new AbortController();
        token.onCancellationRequested(() => controller.abort());
        return run(env, {
          tasks,
          samples: opened.loaded.config.runner.samples,
          concurrency: opened.loaded.config.runner.concurrency,
          params: { command: 'run', split: 'train', limit: tasks.length, seed: opened.loaded.config.runner.seed, samples: opened.loaded.config.runner.samples, dataset: null },
          seed: opened.loaded.config.runner.seed,
          signal: controller.signal,
          onProgress: (p) => {
            const mean = p.meanReward === null ? '' : `, mean reward ${p.meanReward.toFixed(3)}`;
            progress.report({ increment: 100 / p.total, message: `${p.done}/${p.total}${mean}` });
            output.appendLine(`[${p.done}/${p.total}] ${p.last?.taskId ?? ''} ${p.last?.status ?? ''} reward ${p.last?.finalReward?.toFixed(3) ?? '-'}`);
          },
        });
      },
    );
    const m = computeMetrics(result.rollouts, Object.keys(lab.loaded.config.reward.criteria));
    void vscode.window.showInformationMessage(
      `Rollout Lab${lab.simulated ? ' (SIMULATED)' : ''}: ${m.succeeded}/${m.rollouts} rollouts succeeded, mean reward ${m.averageFinalReward?.toFixed(3) ?? 'n/a'}`,
    );
  } catch (err) {
    void vscode.window.showErrorMessage(`Rollout Lab: ${errorMessage(err)}`);
  } finally {
    await lab?.close();
  }
}
