import * as vscode from 'vscode';
import * as path from 'node:path';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { Lab } from '../../core/lab/lab';
import type { ComparisonRun } from '../../core/lab/runComparison';
import type { Variant } from '../../core/config/variantSpec';
import { commandArgument, type FeatureContext } from '../featureContext';
import { validateCount } from '../runArgs';
import { progressMessage } from '../view/rolloutPresentation';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

/**
 * The argument of Compare Configurations that skips the pickers (tests,
 * keybindings, scripts): variant specs as the CLI takes them.
 */
export const CompareArgsSchema = z.strictObject({
  a: z.string().min(1),
  b: z.string().min(1),
  limit: z.number().int().positive(),
  samples: z.number().int().positive().max(100).optional(),
  split: z.enum(['train', 'val', 'all']).optional(),
  /** A key of "datasets" in lab.json, or a file path (relative to the workspace). */
  dataset: z.string().min(1).optional(),
  concurrency: z.number().int().positive().max(256).optional(),
  /** Which workspace folder's lab, when several folders have one. */
  workspace: z.string().min(1).optional(),
});
export type CompareArgs = z.infer<typeof CompareArgsSchema>;

const OpenArgsSchema = z.strictObject({ runA: z.string().min(1), runB: z.string().min(1) });

/** What Compare Configurations returns to a caller. */
export interface CompareConfigurationsResult {
  id: string;
  runA: string;
  runB: string | null;
  cancelled: boolean;
  simulated: boolean;
  pairs: number | null;
  meanDifference: number | null;
  pValue: number | null;
}

interface Plan {
  a: Variant;
  b: Variant;
  split: 'train' | 'val' | 'all';
  limit: number;
  samples: number;
  concurrency: number;
  dataset: string | undefined;
}

/** The agents whose model "senior agents" means by default (the research lab's two senior roles). */
const SENIOR_AGENTS = ['HypothesisRefiner', 'ProtocolDesigner'];
const TITLE = 'Rollout Lab: Compare Configurations';

/** Registers Compare Configurations and Open Comparison. */
export function registerComparisonCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.compareConfigurations', (arg) => compareConfigurations(ctx, arg));
  ctx.register('rolloutLab.openComparison', (arg) => openComparison(ctx, arg));
}

function invalid(what: string, error: z.ZodError, form: string): Error {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  return new Error(`invalid arguments for ${what}: ${where}${issue?.message ?? ''} — expected ${form}`);
}

async function compareConfigurations(ctx: FeatureContext, raw: unknown): Promise<CompareConfigurationsResult | undefined> {
  const given = commandArgument(raw);
  let args: CompareArgs | undefined;
  if (given !== undefined) {
    const parsed = CompareArgsSchema.safeParse(given);
    if (!parsed.success) throw invalid('Compare Configurations', parsed.error, '{ a: SPEC, b: SPEC, limit, samples?, split?, dataset? }');
    args = parsed.data;
  }
  const folder = args?.workspace ?? (args ? undefined : await pickLabFolder(ctx));
  if (folder === null) return undefined;
  return ctx.lab.withLab(folder, async (lab, dir) => {
    const plan = args ? await planFromArgs(lab, args) : await askPlan(lab);
    if (!plan) return undefined;
    return execute(ctx, lab, dir, plan);
  });
}

async function planFromArgs(lab: Lab, a: CompareArgs): Promise<Plan> {
  const { parseVariantSpec } = await core.variantSpec();
  const va = parseVariantSpec(a.a);
  const vb = parseVariantSpec(a.b);
  if (va.label === vb.label) vb.label = `${vb.label} (B)`;
  return {
    a: va,
    b: vb,
    split: a.split ?? 'val',
    limit: a.limit,
    samples: a.samples ?? 1,
    concurrency: a.concurrency ?? lab.loaded.config.runner.concurrency,
    dataset: a.dataset,
  };
}

/** null: the user dismissed the picker; undefined: the only (or active) lab. */
async function pickLabFolder(ctx: FeatureContext): Promise<string | null | undefined> {
  const folders = ctx.lab.labFolders();
  if (folders.length <= 1) return undefined;
  const picked = await vscode.window.showQuickPick(
    folders.map((f) => ({ label: path.basename(f), description: f, folder: f })),
    { title: `${TITLE}: which lab?`, placeHolder: 'Several workspace folders have a .rollout-lab/lab.json' },
  );
  return picked ? picked.folder : null;
}

async function askPlan(lab: Lab): Promise<Plan | undefined> {
  const { config } = lab.loaded;
  const what = await vscode.window.showQuickPick(
    [
      { label: 'Model of the senior agents', description: 'base vs another logical model (e.g. a trained one) for chosen agents', vary: 'model' as const },
      { label: 'Prompt version of an agent', description: 'two stored versions of one agent’s prompt', vary: 'prompt' as const },
    ],
    { title: `${TITLE} (1/4)`, placeHolder: 'What differs between A and B?' },
  );
  if (!what) return undefined;
  const variants = what.vary === 'model' ? await askModelVariants(lab) : await askPromptVariants(lab);
  if (!variants) return undefined;
  const limitText = await vscode.window.showInputBox({
    title: `${TITLE} (4/4)`,
    prompt: 'How many validation tasks? Both configurations run the same ones with the same seeds.',
    value: '20',
    validateInput: (v) => validateCount(v, false),
  });
  if (limitText === undefined) return undefined;
  return { ...variants, split: 'val', limit: Number(limitText), samples: 1, concurrency: config.runner.concurrency, dataset: undefined };
}

async function askModelVariants(lab: Lab): Promise<{ a: Variant; b: Variant } | undefined> {
  const { config } = lab.loaded;
  const agents = await vscode.window.showQuickPick(
    Object.entries(config.agents).map(([agent, a]) => ({ label: agent, description: `model ${a.model}`, picked: SENIOR_AGENTS.includes(agent) })),
    { title: `${TITLE} (2/4)`, placeHolder: 'Agents that use the other model in B', canPickMany: true },
  );
  if (!agents || agents.length === 0) return undefined;
  const model = await vscode.window.showQuickPick(
    Object.entries(config.models).map(([name, m]) => ({
      label: name,
      description: `${m.model}${m.version ? ` · version ${m.version}` : ''}`,
      detail: m.baseUrl ?? 'no baseUrl: the simulated endpoint answers it',
    })),
    { title: `${TITLE} (3/4)`, placeHolder: `Logical model for ${agents.map((a) => a.label).join(', ')} in B (A keeps lab.json)` },
  );
  if (!model) return undefined;
  const names = agents.map((a) => a.label);
  const models = Object.fromEntries(names.map((n) => [n, model.label]));
  return { a: { label: 'base' }, b: { label: `${model.label} for ${names.join(', ')}`, models } };
}

async function askPromptVariants(lab: Lab): Promise<{ a: Variant; b: Variant } | undefined> {
  const { promptVersionStats } = await core.promptStats();
  const { readAgentPrompt, promptHash } = await core.config();
  const agentNames = Object.keys(lab.loaded.config.agents);
  const agent = await vscode.window.showQuickPick(
    agentNames.map((name) => {
      const n = lab.store.listPromptVersions(name).length;
      return { label: name, description: `${n} stored version${n === 1 ? '' : 's'}` };
    }),
    { title: `${TITLE} (2/4)`, placeHolder: 'Agent whose prompt differs' },
  );
  if (!agent) return undefined;
  const stats = promptVersionStats(lab.store, agent.label, { labels: decisionLabelsOf(lab.loaded.config), reward: lab.loaded.config.reward }).sort((x, y) => y.firstSeen - x.firstSeen);
  if (stats.length < 2) {
    throw new Error(
      `${agent.label} has ${stats.length} stored prompt version${stats.length === 1 ? '' : 's'}; edit its prompt and run rollouts to store another, or compare a file from a terminal: rollout-lab compare --a base --b prompt:${agent.label}=@FILE`,
    );
  }
  let current: string | null = null;
  try {
    current = promptHash((await readAgentPrompt(lab.loaded, agent.label)).text);
  } catch {
    // A missing prompt file only loses the "current" mark.
  }
  const item = (s: (typeof stats)[number]): vscode.QuickPickItem & { version: string } => ({
    label: `${s.version.slice(0, 8)}${s.version === current ? ' (current)' : ''}`,
    description: `${s.rollouts} rollouts · mean ${s.meanReward === null ? 'n/a' : s.meanReward.toFixed(3)}${s.ci ? ` [${s.ci[0].toFixed(3)}, ${s.ci[1].toFixed(3)}]` : ''}${s.decisionAlignment === null ? '' : ` · alignment ${s.decisionAlignment.toFixed(0)} %`}`,
    detail: `first seen ${new Date(s.firstSeen).toLocaleString()} · ${firstLine(s.text ?? '')}`,
    version: s.version,
  });
  const pickA = await vscode.window.showQuickPick(stats.map(item), { title: `${TITLE} (3/4)`, placeHolder: `Version of ${agent.label} for A`, matchOnDetail: true });
  if (!pickA) return undefined;
  const pickB = await vscode.window.showQuickPick(
    stats.filter((s) => s.version !== pickA.version).map(item),
    { title: `${TITLE} (3/4)`, placeHolder: `Version of ${agent.label} for B (A: ${pickA.version.slice(0, 8)})`, matchOnDetail: true },
  );
  if (!pickB) return undefined;
  const variant = (v: string): Variant => ({ label: `${agent.label} ${v.slice(0, 8)}`, prompts: { [agent.label]: { version: v } } });
  return { a: variant(pickA.version), b: variant(pickB.version) };
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

async function execute(ctx: FeatureContext, lab: Lab, folder: string, plan: Plan): Promise<CompareConfigurationsResult> {
  const { runComparison } = await core.runComparison();
  const { compareRuns } = await core.comparison();
  const { output, lab: service } = ctx;
  const seed = lab.loaded.config.runner.seed;
  const ds = await lab.loadDataset(plan.dataset);
  const tasks = lab.selectTasks(ds, { split: plan.split, limit: plan.limit, seed });
  if (tasks.length === 0) throw new Error(`the ${plan.split} split of ${ds.file} has no tasks — pick another split or dataset`);
  const sim = lab.simulated ? ' (SIMULATED)' : '';
  const notice = lab.simulationNotice();
  if (notice) output.appendLine(notice);
  output.appendLine(`compare: ${tasks.length} ${plan.split} tasks × ${plan.samples} from ${ds.file}; A = ${plan.a.label}, B = ${plan.b.label}${sim}`);

  const run: ComparisonRun = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Rollout Lab${sim}: comparing ${plan.a.label} vs ${plan.b.label}`, cancellable: true },
    async (progress, token) => {
      const controller = new AbortController();
      const sub = token.onCancellationRequested(() => {
        output.appendLine('cancelling: the rollouts in flight finish, no new ones start');
        controller.abort();
      });
      const total = 2 * tasks.length * plan.samples;
      try {
        return await runComparison(lab, {
          a: plan.a,
          b: plan.b,
          tasks,
          allTasks: ds.tasks,
          samples: plan.samples,
          concurrency: plan.concurrency,
          seed,
          params: { dataset: plan.dataset ?? null, split: plan.split, limit: plan.limit },
          signal: controller.signal,
          onStart: (side, { runId, total: n }) => {
            output.appendLine(`side ${side.toUpperCase()}: run ${runId}, ${n} rollouts`);
            service.notifyStoreChanged(folder);
          },
          onProgress: (side, p) => {
            progress.report({ increment: 100 / Math.max(1, total), message: `${side.toUpperCase()} ${progressMessage(p)}` });
            const r = p.last;
            if (r) output.appendLine(`[${side.toUpperCase()} ${p.done}/${p.total}] ${r.taskId} ${r.status} reward ${r.finalReward === null ? 'n/a' : r.finalReward.toFixed(3)}${r.error ? `: ${r.error}` : ''}`);
            service.notifyStoreChanged(folder);
          },
          onRetry: (side, n) => output.appendLine(`retry (side ${side.toUpperCase()}): ${n.message}`),
        });
      } finally {
        sub.dispose();
      }
    },
  );
  service.notifyStoreChanged(folder);
  const base: CompareConfigurationsResult = { id: run.id, runA: run.runA, runB: run.runB, cancelled: run.cancelled, simulated: lab.simulated, pairs: null, meanDifference: null, pValue: null };
  if (!run.runB) {
    output.appendLine(`cancelled: comparison ${run.id} stopped during side A (${run.runA})`);
    void vscode.window.showInformationMessage(`Rollout Lab: comparison cancelled before ${plan.b.label} ran.`);
    return base;
  }
  const result = compareRuns(lab.store, run.runA, run.runB, Object.keys(lab.loaded.config.reward.criteria), decisionLabelsOf(lab.loaded.config));
  output.appendLine(`comparison ${run.id}: ${result.aggregate.summary}`);
  service.setActiveFolder(folder);
  showComparison(ctx, run.runA, run.runB);
  return { ...base, pairs: result.aggregate.pairs, meanDifference: result.aggregate.meanDifference, pValue: result.aggregate.pairedT?.pValue ?? null };
}

function showComparison(ctx: FeatureContext, runA: string, runB: string): void {
  ctx.panels().open('comparison').notify('comparison/show', { runA, runB });
}

async function openComparison(ctx: FeatureContext, raw: unknown): Promise<void> {
  const given = commandArgument(raw);
  if (given !== undefined) {
    const parsed = OpenArgsSchema.safeParse(given);
    if (!parsed.success) throw invalid('Open Comparison', parsed.error, '{ runA, runB }');
    showComparison(ctx, parsed.data.runA, parsed.data.runB);
    return;
  }
  const { listComparisons } = await core.comparisonList();
  const store = await ctx.lab.store();
  const PICK_RUNS = 'runs';
  const items: Array<vscode.QuickPickItem & { runA?: string; runB?: string; action?: string }> = listComparisons(store)
    .filter((c) => c.runA && c.runB)
    .map((c) => ({
      label: `${c.labelA} vs ${c.labelB}`,
      description: `${c.status}${c.simulated ? ' · SIMULATED' : ''}`,
      detail: `${new Date(c.startTime).toLocaleString()} · ${c.runA} · ${c.runB}`,
      runA: c.runA!,
      runB: c.runB!,
    }));
  items.push({ label: '$(list-selection) Pick two runs…', description: 'compare any two stored runs task by task', alwaysShow: true, action: PICK_RUNS });
  const picked = await vscode.window.showQuickPick(items, { title: 'Rollout Lab: Open Comparison', placeHolder: 'A stored comparison', matchOnDetail: true });
  if (!picked) return;
  if (picked.runA && picked.runB) return showComparison(ctx, picked.runA, picked.runB);
  const runs = store.listRuns().sort((x, y) => y.startTime - x.startTime);
  if (runs.length < 2) throw new Error('the store has fewer than two runs: run rollouts twice (or Compare Configurations) first');
  const runItem = (r: (typeof runs)[number]): vscode.QuickPickItem & { id: string } => ({
    label: r.id,
    description: `${String(r.params.command ?? 'run')} · ${r.status}${r.simulated ? ' · SIMULATED' : ''}`,
    detail: new Date(r.startTime).toLocaleString(),
    id: r.id,
  });
  const a = await vscode.window.showQuickPick(runs.map(runItem), { title: 'Rollout Lab: Open Comparison (A)', placeHolder: 'Run A (the baseline)' });
  if (!a) return;
  const b = await vscode.window.showQuickPick(runs.filter((r) => r.id !== a.id).map(runItem), { title: 'Rollout Lab: Open Comparison (B)', placeHolder: `Run B (compared with ${a.id})` });
  if (!b) return;
  showComparison(ctx, a.id, b.id);
}
