import * as vscode from 'vscode';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';
import * as path from 'node:path';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { LabConfig } from '../../core/config/schema';
import type { ModelPrices } from '../../core/store/tableQuery';
import { RolloutId } from '../../shared/rolloutId';
import type { TableFacets } from '../../shared/tableProtocol';
import { commandArgument, type FeatureContext } from '../featureContext';
import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';

const RolloutIds = z.array(RolloutId).min(1, 'select at least one rollout');
/** Arguments of the table's actions as commands (tests, keybindings): the selection, and what the pickers would ask. */
const ExportArgs = z.strictObject({ rolloutIds: RolloutIds, format: z.enum(['sft', 'rl', 'bandit']).optional(), out: z.string().min(1).optional() });
const RescoreArgs = z.strictObject({ rolloutIds: RolloutIds, confirmed: z.boolean().optional() });
const DatasetArgs = z.strictObject({ rolloutIds: RolloutIds, file: z.string().min(1).optional() });

/** Per-model prices from lab.json (models.<name>.price), or null when no model has one. */
export function modelPrices(config: LabConfig): ModelPrices | null {
  const out: ModelPrices = {};
  for (const [name, m] of Object.entries(config.models)) if (m.price) out[name] = { input: m.price.input, output: m.price.output };
  return Object.keys(out).length ? out : null;
}

/** The table's queries, on the active lab's store (its prices from the lab.json it was opened with). */
export function rolloutsTableRequestHandlers(service: LabService): RequestHandlers {
  return {
    'table/query': async (q) => {
      const lab = await service.lab();
      return lab.store.queryTable(q, modelPrices(lab.loaded.config), decisionLabelsOf(lab.loaded.config));
    },
    'table/ids': async (q) => {
      const lab = await service.lab();
      return { ids: lab.store.queryTableIds(q, modelPrices(lab.loaded.config), decisionLabelsOf(lab.loaded.config)) };
    },
    'table/facets': async (): Promise<TableFacets> => {
      const lab = await service.lab();
      const facets = lab.store.tableFacets();
      return {
        ...facets,
        runs: lab.store.listRuns().map((r) => ({ id: r.id, startTime: r.startTime, simulated: r.simulated })),
        criteria: Object.keys(lab.loaded.config.reward.criteria),
        prices: modelPrices(lab.loaded.config) !== null,
      };
    },
  };
}

/** The actions on the table's selection; opening and comparing go through the shared trace/open and trace/diff. */
export function rolloutsTableCommandHandlers(service: LabService): CommandHandlers {
  return {
    'table/export': async ({ rolloutIds }) => void (await exportSelection(service, { rolloutIds })),
    'table/rescore': ({ rolloutIds }) => rescoreSelection(service, { rolloutIds }),
    'table/addToDataset': async ({ rolloutIds }) => void (await addSelectionToDataset(service, { rolloutIds })),
  };
}

/** Open Rollouts Table, and the table's actions as commands that take their answers as arguments. */
export function registerRolloutsTableCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.openRolloutsTable', () => void ctx.panels().open('rolloutsTable'));
  ctx.register('rolloutLab.rolloutsTable.export', (arg) => exportSelection(ctx.lab, parse(ExportArgs, arg, 'Export Selected Rollouts')));
  ctx.register('rolloutLab.rolloutsTable.rescore', (arg) => rescoreSelection(ctx.lab, parse(RescoreArgs, arg, 'Re-score Selected Rollouts')));
  ctx.register('rolloutLab.rolloutsTable.addToDataset', (arg) => addSelectionToDataset(ctx.lab, parse(DatasetArgs, arg, 'Add Selected Rollouts to a Dataset')));
}

function parse<T>(schema: z.ZodType<T>, raw: unknown, title: string): T {
  const r = schema.safeParse(commandArgument(raw));
  if (!r.success) throw new Error(`${title} takes { rolloutIds: [...] } (the rollouts selected in the Rollouts Table): ${r.error.issues[0]?.message ?? 'invalid arguments'}`);
  return r.data;
}

/** The selection's training records as JSONL through the core export (every split, simulated rollouts included: the user chose them). */
async function exportSelection(service: LabService, args: z.infer<typeof ExportArgs>): Promise<string | null> {
  const folder = service.resolveFolder();
  const format =
    args.format ??
    (
      await vscode.window.showQuickPick(
        [
          { label: 'sft', description: 'one conversation per model call (supervised fine-tuning)' },
          { label: 'rl', description: 'transitions with rewards, grouped by task' },
          { label: 'bandit', description: "the Supervisor's decisions" },
        ],
        { title: `Export ${args.rolloutIds.length} selected rollout${args.rolloutIds.length === 1 ? '' : 's'} as`, placeHolder: 'Training data format' },
      )
    )?.label;
  if (format !== 'sft' && format !== 'rl' && format !== 'bandit') return null;
  let out = args.out ? path.resolve(folder, args.out) : undefined;
  if (!out) {
    const target = await vscode.window.showSaveDialog({
      title: 'Rollout Lab: export the selected rollouts',
      defaultUri: vscode.Uri.file(path.join(folder, `rollouts-${format}.jsonl`)),
      filters: { 'JSON Lines': ['jsonl'] },
      saveLabel: 'Export',
    });
    if (!target) return null;
    out = target.fsPath;
  }
  const { exportTrainingData } = await core.exportData();
  const manifest = await service.withLab(folder, (lab) =>
    // Rollouts chosen by hand count whatever they are: simulated and penalised ones too (their rows say so).
    exportTrainingData(lab.store, lab.loaded.config, { format, split: 'all', includeSimulated: true, includePenalised: true, rolloutIds: args.rolloutIds }, out),
  );
  const skipped = Object.values(manifest.counts.skipped).reduce((a, b) => a + b, 0);
  void vscode.window.showInformationMessage(
    `Rollout Lab: exported ${manifest.counts.records} ${format} record${manifest.counts.records === 1 ? '' : 's'} from ${manifest.counts.rollouts} of the ${args.rolloutIds.length} selected rollouts to ${path.basename(manifest.file)}${skipped ? ` (${skipped} left out: see its manifest)` : ''}.`,
  );
  return manifest.file;
}

async function rescoreSelection(service: LabService, args: z.infer<typeof RescoreArgs>): Promise<void> {
  const { rescoreStored } = await import('../rewardWeights/rescoreAction');
  const outcome = await rescoreStored(service, { rolloutIds: args.rolloutIds, confirmed: args.confirmed });
  if (!outcome.confirmed) return;
  void vscode.window.showInformationMessage(
    `Rollout Lab: re-scored ${outcome.rescored} of the ${args.rolloutIds.length} selected rollouts (${outcome.changed} rewards changed${outcome.kept ? `, ${outcome.kept} without criterion scores kept theirs` : ''}).`,
  );
}

async function addSelectionToDataset(service: LabService, args: z.infer<typeof DatasetArgs>): Promise<{ added: number; duplicates: number; missing: number } | null> {
  const folder = service.resolveFolder();
  let file = args.file ? path.resolve(folder, args.file) : undefined;
  if (!file) {
    const target = await vscode.window.showSaveDialog({
      title: 'Rollout Lab: add the selected rollouts’ tasks to a dataset (an existing JSONL file is appended to)',
      defaultUri: vscode.Uri.file(path.join(folder, 'datasets', 'selected.jsonl')),
      filters: { 'JSON Lines': ['jsonl'] },
      saveLabel: 'Add Tasks',
    });
    if (!target) return null;
    file = target.fsPath;
  }
  const { addRolloutTasksToDataset } = await core.addToDataset();
  const r = await service.withLab(folder, (lab) => addRolloutTasksToDataset(lab, args.rolloutIds, file));
  const notes = [r.duplicates ? `${r.duplicates} already there` : '', r.missing.length ? `${r.missing.length} whose task is in no dataset of the lab any more` : ''].filter(Boolean);
  void vscode.window.showInformationMessage(
    `Rollout Lab: added ${r.added} task${r.added === 1 ? '' : 's'} to ${path.basename(r.file)}${notes.length ? ` (skipped ${notes.join(', ')})` : ''}.`,
  );
  return { added: r.added, duplicates: r.duplicates, missing: r.missing.length };
}
