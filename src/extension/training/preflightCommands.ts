import * as vscode from 'vscode';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { PreflightCheck, PreflightPhase, PreflightReport } from '../../core/train/export/preflightTypes';
import type { TraceStore } from '../../core/store/traceStore';
import { commandArgument, type FeatureContext } from '../featureContext';
import { askIncludeSimulated } from './simulatedRolloutsPick';

/**
 * The argument of Run Pre-flight Checks that skips the pickers (tests, the
 * pipeline, keybindings): the report is written to the Output channel and
 * returned. `show: true` also opens the list of checks.
 */
export const PreflightArgsSchema = z.strictObject({
  phase: z.enum(['sft', 'grpo', 'bandit', 'apo']),
  agents: z.array(z.string().min(1)).min(1).optional(),
  minReward: z.number().min(0).max(1).optional(),
  split: z.enum(['train', 'val', 'all']).optional(),
  /** Rollouts of the simulated endpoint are left out (and counted) unless this is true. */
  includeSimulated: z.boolean().optional(),
  /** Rollouts whose reward is a penalty (the judge or the custom reward failed) are left out unless this is true. */
  includePenalised: z.boolean().optional(),
  /** Which workspace folder's lab, when several folders have one. */
  workspace: z.string().min(1).optional(),
  show: z.boolean().optional(),
});
export type PreflightArgs = z.infer<typeof PreflightArgsSchema>;

const TITLE = 'Rollout Lab: Pre-flight Checks';

/** The phases to pick from; the research-lab graph's reference roles are named only for it (a module graph has no Supervisor decisions for a bandit). */
function phaseItems(researchLab: boolean): Array<vscode.QuickPickItem & { phase: PreflightPhase }> {
  return [
    { label: 'SFT', description: `supervised fine-tuning of ${researchLab ? 'the juniors' : 'the trainable agents'} on high-reward rollouts`, phase: 'sft' },
    { label: 'GRPO', description: `group-relative RL of ${researchLab ? 'the seniors' : 'the trainable agents'}: groups, reward spread, logprobs`, phase: 'grpo' },
    ...(researchLab ? [{ label: 'Bandit', description: 'the Supervisor\u2019s contextual bandit: its decisions', phase: 'bandit' as const }] : []),
    { label: 'Prompt optimisation', description: 'low-reward rollouts for the critic, validation tasks', phase: 'apo' },
  ];
}

const INCLUDE_HINT = 'run the checks again choosing "Include simulated rollouts", or with includeSimulated: true, to use them';

/** Registers Run Pre-flight Checks. */
export function registerPreflightCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.runPreflight', (arg) => runPreflightCommand(ctx, arg));
}

async function runPreflightCommand(ctx: FeatureContext, raw: unknown): Promise<PreflightReport | undefined> {
  const given = commandArgument(raw);
  let args: PreflightArgs;
  if (given !== undefined) {
    const parsed = PreflightArgsSchema.safeParse(given);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
      throw new Error(
        `invalid arguments for Run Pre-flight Checks: ${where}${issue?.message ?? ''} — expected { phase: "sft" | "grpo" | "bandit" | "apo", agents?, minReward?, split?, includeSimulated?, includePenalised? }`,
      );
    }
    args = parsed.data;
  } else {
    const picked = await askArgs(ctx);
    if (!picked) return undefined;
    args = picked;
  }
  const { configuredValTasks, runPreflight } = await core.preflight();
  const { preflightReportText } = await core.preflightText();
  const { report, store } = await ctx.lab.withLab(args.workspace, async (lab, dir) => {
    // Rollouts another process (the CLI, a worker) finished since the last look count too.
    await lab.store.refresh();
    const valTasks = args.phase === 'apo' ? await configuredValTasks(dir, lab.loaded.config) : undefined;
    const r = runPreflight(lab.store, lab.loaded.config, {
      phase: args.phase,
      ...(args.agents ? { agents: args.agents } : {}),
      ...(args.minReward !== undefined ? { minReward: args.minReward } : {}),
      ...(args.split ? { split: args.split } : {}),
      ...(valTasks !== undefined ? { valTasks } : {}),
      includeSimulated: args.includeSimulated === true,
      includePenalised: args.includePenalised === true,
      includeSimulatedHint: INCLUDE_HINT,
    });
    return { report: r, store: lab.store };
  });
  ctx.output.appendLine(preflightReportText(report));
  ctx.output.appendLine('');
  if (args.show) {
    ctx.output.show(true);
    await browseChecks(ctx, report, store);
  }
  return report;
}

/** The phase, and whether simulated rollouts count when the store has some. */
async function askArgs(ctx: FeatureContext): Promise<PreflightArgs | undefined> {
  const { defaultDataSplit, isResearchLabGraph, splitScope } = await core.trainingDefaults();
  const { simulatedInScope } = await core.rolloutSelection();
  const researchLab = await ctx.lab.withLab(undefined, async (lab) => isResearchLabGraph(lab.loaded.config));
  const picked = await vscode.window.showQuickPick(phaseItems(researchLab), { title: TITLE, placeHolder: 'Which training phase is about to run?' });
  if (!picked) return undefined;
  const args: PreflightArgs = { phase: picked.phase, show: true };
  // Counted over the rollouts the checks will read: the split the phase trains on.
  const simulated = await ctx.lab.withLab(undefined, async (lab) => {
    await lab.store.refresh();
    return simulatedInScope(lab.store, splitScope(defaultDataSplit(picked.phase)));
  });
  if (simulated > 0) {
    const include = await askIncludeSimulated(TITLE, simulated);
    if (include === undefined) return undefined;
    if (include) args.includeSimulated = true;
  }
  return args;
}

const CODICON: Record<PreflightCheck['severity'], string> = { error: '$(error)', warning: '$(warning)', info: '$(info)' };

/** The checks, worst first; a check leads to its rollouts, a rollout opens in the trace explorer. */
async function browseChecks(ctx: FeatureContext, report: PreflightReport, store: TraceStore): Promise<void> {
  const rank = { error: 0, warning: 1, info: 2 } as const;
  const items = [...report.checks]
    .sort((a, b) => rank[a.severity] - rank[b.severity])
    .map((check) => ({
      label: `${check.severity === 'info' && check.count === 0 ? '$(pass)' : CODICON[check.severity]} ${check.title}`,
      description: check.count ? String(check.count) : '',
      detail: check.severity === 'info' && check.count === 0 ? undefined : check.fix,
      check,
    }));
  const errors = report.checks.filter((c) => c.severity === 'error').length;
  for (;;) {
    const picked = await vscode.window.showQuickPick(items, {
      title: `${TITLE}: ${report.phase} — ${report.ok ? 'ready to run' : `${errors} error${errors === 1 ? '' : 's'}, the phase would fail`}`,
      placeHolder: 'Pick a check to see its rollouts',
      matchOnDetail: true,
    });
    if (!picked) return;
    if (!picked.check.rollouts.length) {
      void vscode.window.showInformationMessage(`${picked.check.title} — no rollouts to show.`);
      continue;
    }
    const rolloutItems = picked.check.rollouts.map((id) => {
      const r = store.getRollout(id);
      return {
        label: id,
        description: r ? `task ${r.taskId} · sample ${r.sample} · ${r.status}` : '',
        detail: r ? `reward ${r.finalReward === null ? 'none' : r.finalReward.toFixed(3)}${r.error ? ` · ${r.error}` : ''}` : undefined,
        id,
      };
    });
    const rollout = await vscode.window.showQuickPick(rolloutItems, {
      title: `${TITLE}: ${picked.check.title}`,
      placeHolder: `${picked.check.count} found${picked.check.count > picked.check.rollouts.length ? `, the first ${picked.check.rollouts.length} listed` : ''} — pick one to open its trace`,
      matchOnDescription: true,
    });
    if (!rollout) continue;
    ctx.panels().showTrace(rollout.id);
    return;
  }
}
