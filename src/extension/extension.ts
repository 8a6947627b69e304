import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';
import type { PanelKind } from '../shared/protocol';
import { ApiKeys } from './apiKeys';
import { filterRolloutsCommand } from './commands/filterRollouts';
import { initializeLab } from './commands/initializeLab';
import { ContextKeys, type ContextKey } from './contextKeys';
import { runBatchCommand } from './commands/runCommands';
import { runOnWorkersCommand } from './commands/workersCommand';
import { SimEndpoint } from './commands/simEndpoint';
import { labRequestHandlers } from './labRequests';
import { LabService } from './labService';
import { Panels } from './panels';
import { RolloutsTree, type RolloutsTreeNode } from './rolloutsTree';
import { SETTINGS, Settings } from './settings';
import { OtlpReceiverService } from './otlpReceiverService';
import { webviewCommandHandlers } from './webviewCommands';
import { commandArgument, isMenuArgument, type FeatureContext } from './featureContext';
import { registerRewardWeightsCommands } from './rewardWeights/commands';
import { rewardWeightsCommandHandlers, rewardWeightsRequestHandlers } from './rewardWeights/requests';
import { registerEvalReportCommands } from './evalReport/commands';
import { evalReportCommandHandlers, evalReportRequestHandlers } from './evalReport/requests';
import { registerComparisonCommands } from './comparison/commands';
import { comparisonCommandHandlers, comparisonRequestHandlers } from './comparison/requests';
import { registerTraceDiffCommands } from './traceDiff/commands';
import { traceDiffRequestHandlers } from './traceDiff/requests';
import { registerRolloutsTableCommands, rolloutsTableCommandHandlers, rolloutsTableRequestHandlers } from './rolloutsTable/tableActions';
import { registerPromptHistoryCommands, type PromptHistoryApi } from './promptHistory/commands';
import { registerExportDataCommands } from './training/exportDataCommands';
import { registerPreflightCommands } from './training/preflightCommands';
import { registerBanditCommands } from './training/banditCommands';
import { registerOptimizeCommands } from './training/optimizeCommands';
import { registerPipelineCommands } from './training/pipelineCommands';
import { registerJobCommands, type TrainingJobsApi } from './training/jobCommands';
import type { PanelHost } from './webviews/panelHost';

/** What activate() returns: the extension-host tests drive the extension through it. */
export interface RolloutLabApi {
  /** Milliseconds activate() took (performance.now() around it). */
  activationMs: number;
  service: LabService;
  panels: { get(kind: PanelKind): PanelHost | undefined };
  rolloutsTree: vscode.TreeDataProvider<unknown>;
  /** What the prompt annotations mark (the lines that differ from the best version). */
  prompts: PromptHistoryApi;
  /** The Training view's tree (phases and model versions). */
  trainingTree: vscode.TreeDataProvider<unknown>;
  /** The training jobs this window follows and their curves panels. */
  trainingJobs: TrainingJobsApi;
  /** The OTLP receiver started with the lab (rolloutLab.otlpReceiverPort): its URL, null when off; apply() settles it to the settings now. */
  otlpReceiver: Pick<OtlpReceiverService, 'url' | 'apply'>;
  /** What the extension last set each of its context keys to (undefined: not set yet). */
  contextKey(key: ContextKey): boolean | undefined;
}

/** The walkthrough of package.json's contributes.walkthroughs. */
const WALKTHROUGH = 'gettingStarted';

let service: LabService | undefined;

/**
 * Activation only wires commands, the view and the panel serializers: the
 * core (graph runner, trace store, sql.js) is loaded by dynamic import when
 * a command or the view first needs a lab.
 */
export function activate(context: vscode.ExtensionContext): RolloutLabApi {
  const started = performance.now();
  const output = vscode.window.createOutputChannel('Rollout Lab');
  const log = (line: string): void => output.appendLine(line);
  const apiKeys = new ApiKeys(context.secrets, context.globalState);
  const settings = new Settings(vscode.workspace);
  const contextKeys = new ContextKeys();
  const lab = new LabService({
    contextKeys,
    environment: (dir) => apiKeys.environment(dir),
    log,
    pollIntervalMs: settings.get('refreshIntervalSeconds') * 1000,
  });
  service = lab;
  let panels: Panels | undefined;
  const panelsRef = (): Panels => panels!;
  const requests = {
    ...labRequestHandlers(lab),
    ...rewardWeightsRequestHandlers(lab),
    ...evalReportRequestHandlers(lab),
    ...comparisonRequestHandlers(lab),
    ...traceDiffRequestHandlers(lab),
    ...rolloutsTableRequestHandlers(lab),
  };
  const webviewCommands = {
    ...webviewCommandHandlers(lab, panelsRef),
    ...rewardWeightsCommandHandlers(lab, panelsRef),
    ...evalReportCommandHandlers(lab, panelsRef),
    ...comparisonCommandHandlers(lab, panelsRef),
    ...rolloutsTableCommandHandlers(lab),
  };
  panels = new Panels(context.extensionUri, requests, webviewCommands, log);
  const tree = new RolloutsTree(lab, () => settings.get('rolloutsPerPage'));
  const view = vscode.window.createTreeView<RolloutsTreeNode>('rolloutLab.rollouts', { treeDataProvider: tree, showCollapseAll: true });
  tree.attach(view);
  const sim = new SimEndpoint(log);
  const otlpReceiver = new OtlpReceiverService({
    folder: () => lab.activeFolder(),
    port: () => settings.get('otlpReceiverPort'),
    log,
    showError: (message) => void vscode.window.showErrorMessage(message),
  });
  context.subscriptions.push(otlpReceiver);
  void otlpReceiver.apply();
  lab.onDidChange((change) => {
    if (change.reason === 'lab') void otlpReceiver.apply();
  });
  context.subscriptions.push(
    settings.onDidChange((keys) => {
      if (keys.includes('otlpReceiverPort')) void otlpReceiver.apply();
      if (keys.includes('rolloutsPerPage')) tree.refresh();
      for (const k of keys) if (!SETTINGS[k].live) log(`rolloutLab.${k} changed: it takes effect after a window reload`);
    }),
  );

  // Panels hear about new rollouts (those of the lab they show) as the tree does.
  lab.onDidChange((change) => {
    if (!panels || panels.openKinds().length === 0 || change.folder !== lab.activeFolder()) return;
    const store = lab.openedStore(change.folder);
    panels.broadcast(store ? store.listRollouts({ limit: 0 }).total : 0);
  });
  // A new or removed key changes what the router sends: open the labs again on next use.
  apiKeys.onDidChange(() => lab.invalidate());

  const runContext = { service: lab, output, openRewardCurve: () => void panels!.open('rewardCurve'), evaluated: () => void contextKeys.set('rolloutLab.evaluated', true) };
  const register = (id: string, fn: (...args: unknown[]) => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(id, guarded(fn)));
  };

  register('rolloutLab.initialize', (arg) => initializeLab(lab, output, arg));
  register('rolloutLab.openWalkthrough', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, false));
  register('rolloutLab.runRollouts', (arg) => runBatchCommand(runContext, 'run', arg));
  register('rolloutLab.evaluate', (arg) => runBatchCommand(runContext, 'eval', arg));
  register('rolloutLab.runOnWorkers', (arg) => runOnWorkersCommand(runContext, arg));
  const traceOpened = (): void => void contextKeys.set('rolloutLab.traceOpened', true);
  register('rolloutLab.openTraceExplorer', (arg) => openTraceExplorer(lab, panels!, arg, traceOpened));
  const openGraph = (arg: unknown): void => {
    const id = rolloutIdOf(arg);
    if (id) rememberFolderOf(lab, arg);
    panels!.showGraph(id);
  };
  register('rolloutLab.openGraphView', openGraph);
  register('rolloutLab.openRolloutInGraphView', openGraph);
  register('rolloutLab.openRolloutInTraceExplorer', (arg) => openTraceExplorer(lab, panels!, arg, traceOpened));
  register('rolloutLab.openRewardCurve', () => void panels!.open('rewardCurve'));
  register('rolloutLab.showLearningCurve', () => panels!.open('rewardCurve').notify('rewards/showLearningCurve', {}));
  register('rolloutLab.startSimulatedEndpoint', (arg) => sim.start(arg));
  register('rolloutLab.stopSimulatedEndpoint', () => sim.stop());
  register('rolloutLab.simulatedEndpointActions', () => sim.actions());
  register('rolloutLab.setApiKey', (arg) => {
    // From the Rollouts view's title bar: the selected row's lab names the keys to offer.
    const folder = (arg as { folder?: unknown } | undefined)?.folder;
    return apiKeys.command(isMenuArgument(arg) && typeof folder === 'string' ? folder : safeActiveFolder(lab), commandArgument(arg));
  });
  register('rolloutLab.refreshRollouts', async () => {
    await lab.refresh();
    tree.refresh();
  });
  register('rolloutLab.filterRollouts', (arg) => filterRolloutsCommand(tree, arg));
  register('rolloutLab.clearRolloutFilters', () => tree.setFilter({}));
  register('rolloutLab.loadMoreRollouts', (arg) => {
    const n = arg as { folder?: unknown; runId?: unknown } | undefined;
    if (typeof n?.folder === 'string' && typeof n.runId === 'string') tree.loadMore(n.folder, n.runId);
  });

  const feature: FeatureContext = { extension: context, lab, panels: panelsRef, output, log, register, contextKeys };
  registerRewardWeightsCommands(feature);
  registerEvalReportCommands(feature);
  registerComparisonCommands(feature);
  registerTraceDiffCommands(feature);
  registerRolloutsTableCommands(feature);
  // Reward annotations on prompts (lenses, hovers, markers) and the prompt history: the lab is opened only once a prompt is shown.
  const prompts = registerPromptHistoryCommands(feature);
  registerExportDataCommands(feature);
  registerPreflightCommands(feature);
  registerBanditCommands(feature);
  registerOptimizeCommands(feature);
  const { trainingTree } = registerPipelineCommands(feature);
  const trainingJobs = registerJobCommands(feature, trainingTree);

  context.subscriptions.push(output, lab, panels, tree, view, sim);
  const activationMs = performance.now() - started;
  log(`Rollout Lab activated in ${activationMs.toFixed(1)} ms`);
  return { activationMs, service: lab, panels, rolloutsTree: tree, prompts, trainingTree, trainingJobs, otlpReceiver, contextKey: (key) => contextKeys.get(key) };
}

/** Closes the labs so each store writes its catalog checkpoint. */
export async function deactivate(): Promise<void> {
  await service?.close();
  service = undefined;
}

/**
 * Errors reach the user as one clear message. A call with an argument (a
 * test, a keybinding, another extension) also gets the error back; a menu on
 * a rollouts-view item (whose argument is the item) does not, or VS Code
 * would show the error a second time.
 */
function guarded(fn: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  return async (...args: unknown[]): Promise<unknown> => {
    try {
      return await fn(...args);
    } catch (err) {
      void vscode.window.showErrorMessage(`Rollout Lab: ${errorMessage(err)}`);
      const arg = args[0];
      const fromView = isMenuArgument(arg);
      if (arg !== undefined && !fromView) throw err;
      return undefined;
    }
  };
}

function safeActiveFolder(lab: LabService): string | undefined {
  return lab.activeFolder() ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/** A rollout id from a command argument: the id itself, or a rollouts-view node. */
function rolloutIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as { kind?: unknown; rollout?: { id?: unknown } } | undefined;
  if (node?.kind === 'rollout' && typeof node.rollout?.id === 'string') return node.rollout.id;
  return undefined;
}

/** Panels follow the lab of the rollout a user opened (when several folders have one). */
function rememberFolderOf(lab: LabService, arg: unknown): void {
  const folder = (arg as { folder?: unknown } | undefined)?.folder;
  if (typeof folder === 'string') lab.setActiveFolder(folder);
}

async function openTraceExplorer(lab: LabService, panels: Panels, arg: unknown, shown: () => void): Promise<void> {
  let id = rolloutIdOf(arg);
  if (id && !/^[0-9a-f]{32}$/.test(id)) throw new Error(`"${id}" is not a rollout id (32 hex digits)`);
  if (id) rememberFolderOf(lab, arg);
  if (!id) {
    const store = await lab.store();
    const { rollouts } = store.listRollouts({ sort: 'startTime', order: 'desc', limit: 200 });
    if (rollouts.length === 0) {
      void vscode.window.showInformationMessage('Rollout Lab: no rollouts yet — run some with "Rollout Lab: Run Rollouts".');
      return;
    }
    const { rolloutDescription } = await import('./view/rolloutPresentation');
    const picked = await vscode.window.showQuickPick(
      rollouts.map((r) => ({ label: r.taskId, description: `${r.status} · ${rolloutDescription(r)}`, detail: `${r.runId} · ${new Date(r.startTime).toLocaleString()}`, id: r.id })),
      // ignoreFocusOut: started from the walkthrough, the pick opens while the walkthrough's page may still take the focus.
      { title: 'Rollout Lab: Open Trace Explorer', placeHolder: 'Recent rollouts', matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true },
    );
    if (!picked) return;
    id = picked.id;
  }
  panels.showTrace(id);
  shown();
}

