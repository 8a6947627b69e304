import * as vscode from 'vscode';
import type { RolloutStatus, Split } from '../../core/store/types';
import { commandArgument } from '../featureContext';
import type { RolloutsTree } from '../rolloutsTree';
import { ROLLOUT_STATUSES, formatRewardRange, parseRewardRange, type RolloutFilter } from '../view/rolloutFilter';

/**
 * Filter Rollouts: statuses (multi-pick), a reward range, a split. With an
 * argument ({ status?, minReward?, maxReward?, split? }) it sets that filter
 * without asking. From the view's title bar the argument is the selected
 * row, which says nothing about the filter: the pickers ask.
 */
export async function filterRolloutsCommand(tree: RolloutsTree, raw?: unknown): Promise<RolloutFilter | undefined> {
  const arg = commandArgument(raw);
  if (arg !== undefined) {
    const f = checkFilterArg(arg);
    tree.setFilter(f);
    return f;
  }
  const current = tree.getFilter();
  const title = 'Rollout Lab: Filter Rollouts';
  const statuses = await vscode.window.showQuickPick(
    ROLLOUT_STATUSES.map((s) => ({ label: s, picked: !current.status?.length || current.status.includes(s) })),
    { title: `${title} (1/3)`, placeHolder: 'Show rollouts with these statuses', canPickMany: true },
  );
  if (!statuses) return undefined;
  if (statuses.length === 0) {
    void vscode.window.showWarningMessage('Rollout Lab: pick at least one status to filter by.');
    return undefined;
  }
  const rangeText = await vscode.window.showInputBox({
    title: `${title} (2/3)`,
    prompt: 'Final reward range: 0.5-1, >= 0.5, <= 0.3, or empty for any',
    value: formatRewardRange(current),
    validateInput: (v) => {
      const r = parseRewardRange(v);
      return typeof r === 'string' ? r : undefined;
    },
  });
  if (rangeText === undefined) return undefined;
  const range = parseRewardRange(rangeText);
  if (typeof range === 'string') return undefined;
  const split = await vscode.window.showQuickPick(
    [
      { label: 'any split', value: undefined },
      { label: 'train', value: 'train' as const },
      { label: 'val', value: 'val' as const },
    ].map((i) => ({ ...i, picked: i.value === current.split })),
    { title: `${title} (3/3)`, placeHolder: 'Split' },
  );
  if (!split) return undefined;
  const f: RolloutFilter = {
    status: statuses.length === ROLLOUT_STATUSES.length ? undefined : statuses.map((s) => s.label as RolloutStatus),
    ...range,
    split: split.value,
  };
  tree.setFilter(f);
  return f;
}

function checkFilterArg(arg: unknown): RolloutFilter {
  const bad = (why: string): never => {
    throw new Error(`Filter Rollouts takes { status?: string[], minReward?: number, maxReward?: number, split?: "train" | "val" }: ${why}`);
  };
  if (typeof arg !== 'object' || arg === null || Array.isArray(arg)) return bad('not an object');
  const a = arg as Record<string, unknown>;
  for (const k of Object.keys(a)) if (!['status', 'minReward', 'maxReward', 'split'].includes(k)) bad(`unknown key "${k}"`);
  const f: RolloutFilter = {};
  if (a.status !== undefined) {
    if (!Array.isArray(a.status) || !a.status.every((s) => ROLLOUT_STATUSES.includes(s as RolloutStatus))) bad(`status must list some of ${ROLLOUT_STATUSES.join(', ')}`);
    f.status = a.status as RolloutStatus[];
  }
  for (const k of ['minReward', 'maxReward'] as const) {
    if (a[k] === undefined) continue;
    if (typeof a[k] !== 'number' || !Number.isFinite(a[k])) bad(`${k} must be a number`);
    f[k] = a[k] as number;
  }
  if (a.split !== undefined) {
    if (a.split !== 'train' && a.split !== 'val') bad('split must be "train" or "val"');
    f.split = a.split as Split;
  }
  return f;
}
