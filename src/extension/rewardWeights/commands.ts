import * as vscode from 'vscode';
import type { FeatureContext } from '../featureContext';
import { rescoreStored, type RescoreOutcome } from './rescoreAction';

/**
 * The reward-weight editor's commands: open it, re-score stored rollouts
 * under lab.json's weights, and preview AIR rules on a rollout of the tree.
 * The open editor is told when lab.json changes so it can reload what the
 * user is not editing.
 */
export function registerRewardWeightsCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.openRewardWeights', () => {
    ctx.panels().open('rewardWeights');
  });
  ctx.register('rolloutLab.rescoreStoredRollouts', (arg) => rescoreCommand(ctx, arg));
  ctx.register('rolloutLab.previewAirRules', (arg) => {
    const rolloutId = rolloutIdOf(arg);
    if (rolloutId !== undefined && !/^[0-9a-f]{32}$/.test(rolloutId)) throw new Error(`"${rolloutId}" is not a rollout id (32 hex digits)`);
    const folder = (arg as { folder?: unknown } | undefined)?.folder;
    if (typeof folder === 'string') ctx.lab.setActiveFolder(folder);
    const host = ctx.panels().open('rewardWeights');
    host.notify('air/selectRollout', rolloutId ? { rolloutId } : {});
  });
  ctx.extension.subscriptions.push(
    ctx.lab.onDidChange((change) => {
      if (change.reason !== 'lab' || change.folder !== ctx.lab.activeFolder()) return;
      ctx.panels().get('rewardWeights')?.notify('weights/configChanged', { file: vscode.Uri.joinPath(vscode.Uri.file(change.folder), '.rollout-lab', 'lab.json').fsPath });
    }),
  );
}

/**
 * Re-scores after a modal confirmation, or straight away with
 * `{ confirm: true }` (tests, keybindings); `runId` / `split` narrow it.
 * Returns the counts when called with an argument object.
 */
async function rescoreCommand(ctx: FeatureContext, arg: unknown): Promise<RescoreOutcome | undefined> {
  const opts = typeof arg === 'object' && arg !== null && !('kind' in arg) ? (arg as Record<string, unknown>) : {};
  const runId = typeof opts.runId === 'string' ? opts.runId : undefined;
  const split = opts.split === 'train' || opts.split === 'val' ? opts.split : undefined;
  if (opts.split !== undefined && split === undefined) throw new Error(`split must be "train" or "val", not ${JSON.stringify(opts.split)}`);
  const outcome = await rescoreStored(ctx.lab, { runId, split, confirmed: opts.confirm === true, note: typeof opts.note === 'string' ? opts.note : undefined });
  if (outcome.confirmed) {
    const kept = outcome.kept ? `; ${outcome.kept} kept their reward (no criterion scores or the judge failed)` : '';
    const line = `Re-scored ${outcome.rescored} stored rollouts: ${outcome.changed} rewards changed${kept}. Earlier rewards are kept in the history.`;
    ctx.log(`${line} (${outcome.rescoreId ?? 'no re-score id'})`);
    void vscode.window.showInformationMessage(`Rollout Lab: ${line}`);
  }
  return arg === undefined ? undefined : outcome;
}

/** A rollout id from a command argument: the id itself, or a rollouts-view node. */
function rolloutIdOf(arg: unknown): string | undefined {
  if (typeof arg === 'string') return arg;
  const node = arg as { rollout?: { id?: unknown } } | undefined;
  return typeof node?.rollout?.id === 'string' ? node.rollout.id : undefined;
}
