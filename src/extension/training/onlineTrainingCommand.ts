import * as vscode from 'vscode';
import { z } from 'zod';
import type { OnlineResult } from '../../core/train/pipeline/onlineTraining';
import { core } from '../coreLoader';
import { commandArgument } from '../featureContext';
import { parseArgs, withProgress, type Jobs } from './jobCommandSupport';
import { jobSecrets } from './jobFiles';

const OnlineArgs = z.strictObject({
  phase: z.string().min(1).optional(),
  target: z.string().min(1).optional(),
  rounds: z.number().int().min(1).max(100).optional(),
  tasks: z.number().int().min(1).optional(),
  samples: z.number().int().min(2).optional(),
  folder: z.string().optional(),
  includeSimulated: z.boolean().optional(),
});

/**
 * Start Online Training…: serves the phase's model with python-trainer, then
 * each round runs rollouts against it, sends their groups to its control API
 * and registers the version it serves next (onlineTraining in the core).
 */
export async function startOnline(jobs: Jobs, arg: unknown): Promise<OnlineResult | undefined> {
  const { ctx, followers, output } = jobs;
  const explicit = commandArgument(arg);
  const args = explicit === undefined ? {} : parseArgs(OnlineArgs, explicit, 'Start Online Training takes { phase?, target?, rounds?, tasks?, samples?, folder?, includeSimulated? }');
  const folder = ctx.lab.resolveFolder(args.folder);
  const { loadConfig } = await core.config();
  const loaded = await loadConfig(folder);
  const { pipelinePhases } = await core.phases();
  const grpo = pipelinePhases(loaded.config).filter((p) => p.kind === 'grpo');
  let phase = args.phase;
  if (!phase) {
    if (grpo.length === 0) {
      const { undeclaredPipelineText } = await core.phases();
      const how = loaded.config.training.phases.length || loaded.config.graph.kind === 'research-lab' ? 'declare one under "training.phases" in .rollout-lab/lab.json' : undeclaredPipelineText(loaded.config);
      throw new Error(`no grpo phase to update — online training updates a grpo phase: ${how}`);
    }
    phase = grpo.length === 1 ? grpo[0]!.name : (await vscode.window.showQuickPick(grpo.map((p) => ({ label: p.name, description: (p.agents ?? []).join(', ') })), { title: 'Start Online Training: the phase' }))?.label;
    if (!phase) return undefined;
  }
  let target = args.target;
  if (explicit === undefined) {
    const targets = ['local', ...Object.keys(loaded.config.training.targets).filter((t) => t !== 'local')];
    target = (await vscode.window.showQuickPick(targets, { title: 'Start Online Training: where the policy is served and trained' })) ?? undefined;
    if (!target) return undefined;
  }
  let rounds = args.rounds;
  if (rounds === undefined) {
    const text = await vscode.window.showInputBox({ title: 'Start Online Training: rounds (rollouts → update)', value: '3', validateInput: (v) => (/^[1-9]\d*$/.test(v.trim()) ? undefined : 'a whole number ≥ 1') });
    if (!text) return undefined;
    rounds = Number(text.trim());
  }
  const secrets = await jobSecrets(ctx, loaded.config.training.trainer.secrets);
  const { onlineTraining } = await core.onlineTraining();
  output.show(true);
  const base = followers.hooks(folder, new AbortController());
  const result = await withProgress(`online training of ${phase}`, base, true, (signal, hooks) =>
    ctx.lab.withLab(folder, (lab) =>
      onlineTraining(
        lab,
        {
          phase: phase!,
          ...(target ? { target } : {}),
          rounds: rounds!,
          ...(args.tasks ? { tasks: args.tasks } : {}),
          ...(args.samples ? { samples: args.samples } : {}),
          ...(args.includeSimulated ? { includeSimulated: true } : {}),
          secrets,
          signal,
        },
        () => ctx.lab.openDetached(folder),
        { ...hooks, onRound: () => ctx.lab.notifyStoreChanged(folder) },
      ),
    ),
  );
  ctx.lab.invalidate(folder);
  jobs.tree.refresh();
  const last = result.rounds.at(-1);
  void vscode.window.showInformationMessage(
    last ? `Online training: ${result.rounds.length} rounds; the model's version is now ${last.version}; ${result.note}.` : `Online training stopped before a round finished; ${result.note}.`,
  );
  return result;
}
