import * as vscode from 'vscode';
import { z } from 'zod';
import { core } from '../coreLoader';
import type { BanditPolicyInfo, BanditTrainResult } from '../../core/train/bandit/policyStore';
import { commandArgument, type FeatureContext } from '../featureContext';

/**
 * Train Supervisor Bandit and Show Bandit Policy. An object argument skips
 * the UI (tests, the pipeline, keybindings): Train returns the new
 * BanditPolicyInfo; Show returns the active version and the list, and with
 * `activate` makes that version active (null: roll back / off).
 */
const TrainArgs = z.strictObject({
  workspace: z.string().min(1).optional(),
  /** Default train, as the pipeline's phases. */
  split: z.enum(['train', 'val', 'all']).optional(),
  /** Decisions of simulated rollouts are left out unless this is true. */
  includeSimulated: z.boolean().optional(),
});
const ShowArgs = z.strictObject({
  workspace: z.string().min(1).optional(),
  activate: z.string().min(1).nullable().optional(),
});

const TITLE = 'Rollout Lab: Supervisor Bandit';

export function registerBanditCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.trainBandit', (arg) => trainBandit(ctx, arg));
  ctx.register('rolloutLab.showBanditPolicy', (arg) => showBanditPolicy(ctx, arg));
}

function parseArgs<T>(schema: z.ZodType<T>, raw: unknown, command: string, shape: string): T {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  throw new Error(`invalid arguments for ${command}: ${where}${issue?.message ?? ''} — expected ${shape}`);
}

async function trainBandit(ctx: FeatureContext, raw: unknown): Promise<BanditTrainResult> {
  const given = commandArgument(raw);
  const args = given === undefined ? {} : parseArgs(TrainArgs, given, 'Train Supervisor Bandit', '{ workspace?, split?: "train" | "val" | "all", includeSimulated? }');
  const { trainBanditPolicy } = await core.policyStore();
  const { info, mode } = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Training the Supervisor bandit…' },
    () =>
      ctx.lab.withLab(args.workspace, async (lab) => {
        // Rollouts another process finished since the last look are training data too.
        await lab.store.refresh();
        const opts = { ...(args.split ? { split: args.split } : {}), includeSimulated: args.includeSimulated === true };
        return { info: await trainBanditPolicy(lab.store, lab.loaded.config, lab.loaded.labDir, opts), mode: lab.loaded.config.bandit.mode };
      }),
  );
  const mean = info.meanReward === null ? 'n/a' : info.meanReward.toFixed(3);
  const left = info.simulatedLeftOut ? `; ${info.simulatedLeftOut} simulated rollouts left out (pass { includeSimulated: true } to use them)` : '';
  ctx.log(`bandit: trained ${info.version} (${info.algorithm}) on ${info.records} decisions of the ${info.split ?? 'all'} split${info.split ? '' : 's'}, mean reward ${mean}; now active${left}`);
  const hint = mode === 'off' ? ' bandit.mode is "off" in lab.json: set it to "advise" or "decide" for rollouts to use it.' : '';
  if (given === undefined) void vscode.window.showInformationMessage(`Supervisor bandit ${info.version} trained on ${info.records} decisions (mean reward ${mean}) and activated.${hint}`);
  return info;
}

async function showBanditPolicy(ctx: FeatureContext, raw: unknown): Promise<{ active: string | null; versions: BanditPolicyInfo[] } | undefined> {
  const given = commandArgument(raw);
  const args = given === undefined ? {} : parseArgs(ShowArgs, given, 'Show Bandit Policy', '{ workspace?, activate?: version | null }');
  const { activateBanditPolicy, listBanditPolicies } = await core.policyStore();
  return ctx.lab.withLab(args.workspace, async (lab) => {
    const { config, labDir } = lab.loaded;
    if (given !== undefined) {
      if (args.activate !== undefined) activateBanditPolicy(labDir, config, args.activate);
      return listBanditPolicies(labDir, config);
    }
    const list = listBanditPolicies(labDir, config);
    if (!list.versions.length) {
      void vscode.window.showInformationMessage('No Supervisor bandit policy yet: run rollouts, then "Rollout Lab: Train Supervisor Bandit".');
      return list;
    }
    const items = [...list.versions].reverse().map((p) => ({
      label: `${p.version === list.active ? '$(check) ' : ''}${p.version}`,
      description: `${p.algorithm} · ${p.records} decisions · mean reward ${p.meanReward === null ? 'n/a' : p.meanReward.toFixed(3)}${p.version === list.active ? ' · active' : ''}`,
      detail: `trained ${new Date(p.trainedAt).toLocaleString()}`,
      policy: p,
    }));
    const picked = await vscode.window.showQuickPick(items, {
      title: `${TITLE} (bandit.mode: ${config.bandit.mode})`,
      placeHolder: `Active: ${list.active ?? 'none'} — pick a version to activate or deactivate it`,
    });
    if (!picked) return list;
    const isActive = picked.policy.version === list.active;
    const actions = isActive ? ['Deactivate'] : ['Activate'];
    const action = await vscode.window.showQuickPick(actions, {
      title: `${TITLE}: ${picked.policy.version}`,
      placeHolder: isActive
        ? 'Deactivate rolls back to the version active before it (or none); bandit.mode stays as lab.json says'
        : 'Make this the policy rollouts use (bandit.mode stays as lab.json says)',
    });
    if (!action) return list;
    activateBanditPolicy(labDir, config, action === 'Activate' ? picked.policy.version : null);
    const after = listBanditPolicies(labDir, config);
    ctx.log(`bandit: active policy is now ${after.active ?? 'none'}`);
    void vscode.window.showInformationMessage(`Supervisor bandit: active policy is now ${after.active ?? 'none'}.`);
    return after;
  });
}
