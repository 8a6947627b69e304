import * as path from 'node:path';
import * as vscode from 'vscode';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { Lab } from '../../core/lab/lab';
import type { ExportFormat, ExportManifest, ExportOptions } from '../../core/train/export/exportData';
import { commandArgument, type FeatureContext } from '../featureContext';
import { askIncludeSimulated } from './simulatedRolloutsPick';

/**
 * The argument of Export Training Data that skips the pickers and the save
 * dialog (tests, the pipeline, keybindings). A relative `out` is relative to
 * the lab's workspace folder. Resolves to the manifest.
 */
export const ExportDataArgsSchema = z.strictObject({
  format: z.enum(['sft', 'rl', 'bandit']),
  out: z.string().min(1),
  agents: z.array(z.string().min(1)).min(1).optional(),
  minReward: z.number().optional(),
  /** Default train, as the pipeline's phases; 'all' reads every split. */
  split: z.enum(['train', 'val', 'all']).optional(),
  /** Rollouts of the simulated endpoint are left out unless this is true. */
  includeSimulated: z.boolean().optional(),
  /** Rollouts whose reward is a penalty (the judge or the custom reward failed) are left out unless this is true; their rows then say so. */
  includePenalised: z.boolean().optional(),
  credit: z.enum(['equal', 'last', 'discounted']).optional(),
  gamma: z.number().min(0).max(1).optional(),
  /** Which workspace folder's lab, when several folders have one. */
  workspace: z.string().min(1).optional(),
});
export type ExportDataArgs = z.infer<typeof ExportDataArgsSchema>;

const TITLE = 'Rollout Lab: Export Training Data';
const INCLUDE_PENALISED = 'Include Penalised Rollouts';

const FORMAT_ITEMS: Array<vscode.QuickPickItem & { format: ExportFormat }> = [
  { label: 'SFT', description: 'chat conversations of high-reward rollouts (TRL SFTTrainer, chat templates)', format: 'sft' },
  { label: 'RL', description: 'one transition per model call with its credited reward, grouped by task (GRPO)', format: 'rl' },
  { label: 'Bandit', description: 'the Supervisor\u2019s decisions: candidates, chosen index, final reward', format: 'bandit' },
];

/** Registers Export Training Data. */
export function registerExportDataCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.exportTrainingData', (arg) => exportDataCommand(ctx, arg));
}

function parseArgs(given: unknown): ExportDataArgs {
  const parsed = ExportDataArgsSchema.safeParse(given);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  throw new Error(
    `invalid arguments for Export Training Data: ${where}${issue?.message ?? ''} — expected { format: "sft" | "rl" | "bandit", out, agents?, minReward?, split?: "train" | "val" | "all", includeSimulated?, includePenalised?, credit? }`,
  );
}

async function exportDataCommand(ctx: FeatureContext, raw: unknown): Promise<ExportManifest | undefined> {
  const given = commandArgument(raw);
  const args = given !== undefined ? parseArgs(given) : undefined;
  return ctx.lab.withLab(args?.workspace, async (lab, folder) => {
    // Rollouts another process (the CLI, a worker) finished since the last look count too.
    await lab.store.refresh();
    const chosen = args ?? (await askArgs(lab));
    if (!chosen) return undefined;
    const { exportTrainingData, manifestPath } = await core.exportData();
    const opts: ExportOptions = { format: chosen.format };
    if (chosen.agents) opts.agents = chosen.agents;
    if (chosen.minReward !== undefined) opts.minReward = chosen.minReward;
    if (chosen.split) opts.split = chosen.split;
    if (chosen.includeSimulated) opts.includeSimulated = true;
    if (chosen.includePenalised) opts.includePenalised = true;
    if (chosen.credit) opts.credit = chosen.credit;
    if (chosen.gamma !== undefined) opts.gamma = chosen.gamma;
    const file = path.resolve(folder, chosen.out);
    const manifest = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: TITLE, cancellable: true },
      async (progress, token) => {
        const ac = new AbortController();
        const sub = token.onCancellationRequested(() => ac.abort());
        let shown = 0;
        try {
          return await exportTrainingData(lab.store, lab.loaded.config, opts, file, {
            signal: ac.signal,
            onProgress: (done, total) => {
              const pct = Math.floor((done / Math.max(total, 1)) * 100);
              if (pct > shown) {
                progress.report({ increment: pct - shown, message: `${done} of ${total} rollouts` });
                shown = pct;
              }
            },
          });
        } finally {
          sub.dispose();
        }
      },
    );
    const summary = summaryLine(manifest);
    ctx.log(`${summary}; manifest ${manifestPath(manifest.file)}`);
    if (args === undefined) {
      const again = manifest.counts.skipped.penalised ? [INCLUDE_PENALISED] : [];
      void vscode.window.showInformationMessage(summary, 'Open Manifest', ...again).then(async (choice) => {
        if (choice === 'Open Manifest') await vscode.window.showTextDocument(vscode.Uri.file(manifestPath(manifest.file)));
        if (choice === INCLUDE_PENALISED) {
          const again = await vscode.commands.executeCommand<ExportManifest | undefined>('rolloutLab.exportTrainingData', { ...chosen, includePenalised: true, workspace: folder });
          if (again) void vscode.window.showInformationMessage(summaryLine(again));
        }
      });
    }
    return manifest;
  });
}

function summaryLine(m: ExportManifest): string {
  const groups = m.counts.groups !== undefined ? ` in ${m.counts.groups} task groups` : '';
  const skipped = Object.values(m.counts.skipped).reduce((s, n) => s + n, 0);
  const simulated = m.counts.skipped.simulated ?? 0;
  const left = simulated ? `; ${simulated} simulated rollouts left out (export again choosing "Include simulated rollouts", or with includeSimulated: true, to use them)` : '';
  const penalisedOut = m.counts.skipped.penalised ?? 0;
  const penalty = penalisedOut
    ? `; ${penalisedOut} rollouts whose reward is a penalty (the judge or the custom reward failed) left out (export again with "${INCLUDE_PENALISED}", or with includePenalised: true, to use them)`
    : '';
  const included = m.counts.penalised ? `; ${m.counts.penalised} rollouts whose reward is a penalty included, their rows say reward_source "penalty"` : '';
  return `Exported ${m.counts.records} ${m.format.toUpperCase()} records from ${m.counts.rollouts} rollouts${groups} to ${path.basename(m.file)}${skipped ? ` (${skipped} skipped${left}${penalty})` : ''}${included}`;
}

async function askArgs(lab: Lab): Promise<ExportDataArgs | undefined> {
  const { defaultExportAgents } = await core.exportData();
  const { simulatedInScope } = await core.rolloutSelection();
  const { DEFAULT_SFT_MIN_REWARD, isResearchLabGraph } = await core.trainingDefaults();
  const { config } = lab.loaded;
  // The bandit learns the research-lab Supervisor's choice; a module graph records none.
  const formats = isResearchLabGraph(config) ? FORMAT_ITEMS : FORMAT_ITEMS.filter((f) => f.format !== 'bandit');
  const format = await vscode.window.showQuickPick(formats, { title: TITLE, placeHolder: 'Which training data?' });
  if (!format) return undefined;
  const args: Partial<ExportDataArgs> & { format: ExportFormat } = { format: format.format };

  const split = await vscode.window.showQuickPick(
    [
      { label: 'train', description: 'the default, as the pipeline\u2019s phases', split: 'train' as const },
      { label: 'val', split: 'val' as const },
      { label: 'All', description: 'train and val rollouts', split: 'all' as const },
    ],
    { title: `${TITLE}: split`, placeHolder: 'Rollouts of which split?' },
  );
  if (!split) return undefined;
  args.split = split.split;

  const { splitScope } = await core.trainingDefaults();
  const scope = splitScope(split.split);
  const simulated = simulatedInScope(lab.store, scope);
  if (simulated > 0) {
    const include = await askIncludeSimulated(TITLE, simulated);
    if (include === undefined) return undefined;
    if (include) args.includeSimulated = true;
  }

  if (format.format !== 'bandit') {
    const defaults = defaultExportAgents(lab.store, config, format.format, { ...scope, includeSimulated: args.includeSimulated === true });
    const agents = await vscode.window.showQuickPick(
      // A module graph's node may call a model under a name lab.json does not list: it is offered too.
      [...Object.keys(config.agents), ...defaults.filter((a) => !(a in config.agents))].map((name) => ({
        label: name,
        description: config.agents[name] ? `model ${config.agents[name]!.model}` : 'made model calls; not in lab.json',
        picked: defaults.includes(name),
      })),
      { title: `${TITLE}: agents`, placeHolder: 'Agents whose model calls become training examples', canPickMany: true },
    );
    if (!agents || agents.length === 0) return undefined;
    args.agents = agents.map((a) => a.label);
  }

  const minText = await vscode.window.showInputBox({
    title: `${TITLE}: minimum reward`,
    prompt: format.format === 'sft' ? 'Only rollouts at or over this final reward (SFT learns from successes)' : 'Only rollouts at or over this final reward; leave empty to keep all (GRPO needs the spread)',
    value: format.format === 'sft' ? String(DEFAULT_SFT_MIN_REWARD) : '',
    validateInput: (v) => (v.trim() === '' || Number.isFinite(Number(v)) ? undefined : 'a number, e.g. 0.7, or empty'),
  });
  if (minText === undefined) return undefined;
  if (minText.trim() !== '') args.minReward = Number(minText);

  if (format.format === 'rl') {
    const credit = await vscode.window.showQuickPick(
      [
        { label: 'equal', description: 'the final reward on every call of the agent', credit: 'equal' as const },
        { label: 'last', description: 'the final reward on the agent\u2019s last call only', credit: 'last' as const },
        { label: 'discounted', description: 'gamma^(calls after it) \u00d7 the final reward', credit: 'discounted' as const },
      ],
      { title: `${TITLE}: credit assignment`, placeHolder: 'How the final reward is credited to each call (AIR rewards are added on top)' },
    );
    if (!credit) return undefined;
    args.credit = credit.credit;
  }

  const dir = path.join(lab.loaded.labDir, lab.loaded.config.training.outputDir);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const target = await vscode.window.showSaveDialog({
    title: TITLE,
    defaultUri: vscode.Uri.file(path.join(dir, `${format.format}-${stamp}.jsonl`)),
    filters: { 'JSON Lines': ['jsonl'] },
    saveLabel: 'Export',
  });
  if (!target) return undefined;
  return { ...args, out: target.fsPath };
}
