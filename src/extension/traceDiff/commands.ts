import * as vscode from 'vscode';
import { z } from 'zod';
import type { RolloutRecord } from '../../core/store/types';
import type { TraceStore } from '../../core/store/traceStore';
import type { FeatureContext } from '../featureContext';
import { shortHash } from '../view/promptLens';
import { rolloutDescription } from '../view/rolloutPresentation';

const RolloutId = z.string().regex(/^[0-9a-f]{32}$/, 'a rollout id is 32 hex digits');
const CompareArgsSchema = z.strictObject({ left: RolloutId, right: RolloutId, folder: z.string().min(1).optional() });

/** Rollouts offered by the pickers, newest first. */
const PICK_LIMIT = 500;
const TITLE = 'Rollout Lab: Compare Two Rollouts (Trace Diff)';

export interface TraceDiffPair {
  left: string;
  right: string;
}

/** Registers "Compare Two Rollouts (Trace Diff)…". */
export function registerTraceDiffCommands(ctx: FeatureContext): void {
  ctx.register('rolloutLab.compareRollouts', (arg, selected) => compareRollouts(ctx, arg, selected));
}

function invalid(error: z.ZodError): Error {
  const issue = error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  return new Error(`invalid arguments for Compare Two Rollouts: ${where}${issue?.message ?? ''} — expected { left: ROLLOUT_ID, right: ROLLOUT_ID, folder? }`);
}

type RolloutNodeLike = { kind?: unknown; folder?: unknown; rollout?: { id?: unknown; startTime?: unknown } };

function rolloutNodes(selected: unknown): Array<{ id: string; startTime: number; folder: string | undefined }> {
  if (!Array.isArray(selected)) return [];
  return (selected as RolloutNodeLike[])
    .filter((n) => n?.kind === 'rollout' && typeof n.rollout?.id === 'string')
    .map((n) => ({ id: n.rollout!.id as string, startTime: typeof n.rollout!.startTime === 'number' ? n.rollout!.startTime : 0, folder: typeof n.folder === 'string' ? n.folder : undefined }));
}

/**
 * Opens the trace diff: on `{left, right}`; on two rollouts selected in the
 * Rollouts view (a menu passes the selection second; the older on the left);
 * on one rollout of the view (then asks for the other, the same task's
 * rollouts first); or asks for both.
 */
export async function compareRollouts(ctx: FeatureContext, raw: unknown, selected?: unknown): Promise<TraceDiffPair | undefined> {
  const node = raw as RolloutNodeLike | undefined;
  const two = rolloutNodes(selected);
  if (two.length === 2 && two[0]!.folder === two[1]!.folder) {
    const [a, b] = two.sort((x, y) => x.startTime - y.startTime);
    return show(ctx, a!.folder, { left: a!.id, right: b!.id });
  }
  if (raw !== undefined && raw !== null && !(typeof raw === 'object' && 'kind' in raw)) {
    const parsed = CompareArgsSchema.safeParse(raw);
    if (!parsed.success) throw invalid(parsed.error);
    const { left, right, folder } = parsed.data;
    const store = await ctx.lab.store(folder);
    for (const [side, id] of [['left', left], ['right', right]] as const) {
      if (!store.getRollout(id)) await ctx.lab.refresh(folder);
      if (!store.getRollout(id)) throw new Error(`the ${side} rollout ${id} is not in the store of ${ctx.lab.resolveFolder(folder)} — pick one in the Rollouts view`);
    }
    return show(ctx, folder, { left, right });
  }
  const folder = typeof node?.folder === 'string' ? node.folder : undefined;
  const store = await ctx.lab.store(folder);
  const recent = store.listRollouts({ sort: 'startTime', order: 'desc', limit: PICK_LIMIT }).rollouts;
  let left: RolloutRecord | undefined;
  if (node?.kind === 'rollout' && typeof node.rollout?.id === 'string') left = store.getRollout(node.rollout.id) ?? undefined;
  else left = await pickRollout(recent, `${TITLE}: left`, 'The first rollout (left)', null);
  if (!left) return undefined;
  // The same task's rollouts first, each rollout once, never the left one.
  const sameTask = store.listRollouts({ taskId: left.taskId, sort: 'startTime', order: 'desc', limit: PICK_LIMIT }).rollouts;
  const others = [...new Map([...sameTask, ...recent].map((r) => [r.id, r])).values()].filter((r) => r.id !== left.id);
  if (others.length === 0) throw new Error('the store holds only one rollout: run some more to compare two');
  const right = await pickRollout(others, `${TITLE}: right`, `Compared with task ${left.taskId} (${left.runId}) — the same task's rollouts first`, left);
  if (!right) return undefined;
  return show(ctx, folder, { left: left.id, right: right.id });
}

function show(ctx: FeatureContext, folder: string | undefined, pair: TraceDiffPair): TraceDiffPair {
  if (folder) ctx.lab.setActiveFolder(folder);
  ctx.panels().showDiff(pair.left, pair.right);
  return pair;
}

async function pickRollout(rollouts: readonly RolloutRecord[], title: string, placeHolder: string, other: RolloutRecord | null): Promise<RolloutRecord | undefined> {
  if (rollouts.length === 0) {
    void vscode.window.showInformationMessage('Rollout Lab: no rollouts yet — run some with "Rollout Lab: Run Rollouts".');
    return undefined;
  }
  const items = rollouts.map((r) => ({
    label: `${other && r.taskId === other.taskId ? '$(link) ' : ''}${r.taskId}`,
    description: `${r.status} · ${rolloutDescription(r)}`,
    detail: `${r.runId} · ${new Date(r.startTime).toLocaleString()} · ${r.id}`,
    rollout: r,
  }));
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder, matchOnDescription: true, matchOnDetail: true });
  return picked?.rollout;
}

/**
 * The same task run under two versions of an agent's prompt: the version
 * (by default the newest stored one) on the right, the version stored before
 * it on the left (the nearest earlier one that ran a task in common), each
 * side's newest rollout of a task both ran (the task given, or asked for when
 * several).
 */
export async function diffWithPreviousPromptVersion(
  ctx: FeatureContext,
  who: { folder: string; agent: string; version?: string; taskId?: string },
): Promise<TraceDiffPair | undefined> {
  const store = await ctx.lab.store(who.folder);
  const versions = store.listPromptVersions(who.agent).sort((a, b) => a.firstSeen - b.firstSeen || a.hash.localeCompare(b.hash));
  const at = who.version ? versions.findIndex((v) => v.hash === who.version) : versions.length - 1;
  if (at < 0) throw new Error(`prompt version ${who.version} of ${who.agent} is not in the store of ${who.folder} — pick one with "Show Rollouts of This Prompt Version"`);
  if (at === 0) throw new Error(`${who.agent}'s prompt version ${shortHash(versions[0]?.hash ?? '')} has no earlier stored version to compare with — edit the prompt and run rollouts first`);
  const newer = versions[at]!.hash;
  // The nearest earlier version that ran a task this one ran (usually the one just before).
  const newerRollouts = newestPerTask(store, who.agent, newer);
  let older = versions[at - 1]!.hash;
  let pairs = tasksUnderBoth(newestPerTask(store, who.agent, older), newerRollouts);
  for (let k = at - 2; pairs.size === 0 && k >= 0; k--) {
    const candidate = tasksUnderBoth(newestPerTask(store, who.agent, versions[k]!.hash), newerRollouts);
    if (candidate.size) [older, pairs] = [versions[k]!.hash, candidate];
  }
  if (pairs.size === 0) {
    throw new Error(`no task ran under both ${who.agent} ${shortHash(newer)} and an earlier version — run the same tasks with each version (e.g. Compare Configurations)`);
  }
  let taskId = who.taskId;
  if (taskId !== undefined && !pairs.has(taskId)) throw new Error(`task ${taskId} did not run under both ${who.agent} ${shortHash(older)} and ${shortHash(newer)}`);
  if (taskId === undefined) {
    if (pairs.size === 1) taskId = [...pairs.keys()][0]!;
    else {
      const items = [...pairs.entries()].map(([task, p]) => ({
        label: task,
        description: `reward ${fmt(p.left.finalReward)} → ${fmt(p.right.finalReward)}`,
        detail: `${shortHash(older)}: ${p.left.runId} · ${shortHash(newer)}: ${p.right.runId}`,
        task,
      }));
      const picked = await vscode.window.showQuickPick(items, {
        title: `Rollout Lab: Diff a rollout of ${who.agent} ${shortHash(older)} → ${shortHash(newer)}`,
        placeHolder: 'A task both versions ran',
        matchOnDescription: true,
        matchOnDetail: true,
      });
      if (!picked) return undefined;
      taskId = picked.task;
    }
  }
  const p = pairs.get(taskId)!;
  return show(ctx, who.folder, { left: p.left.id, right: p.right.id });
}

function fmt(r: number | null): string {
  return r === null ? 'n/a' : r.toFixed(3);
}

/** Per task a prompt version ran: its newest finished rollout of it. */
function newestPerTask(store: TraceStore, agent: string, version: string): Map<string, RolloutRecord> {
  const m = new Map<string, RolloutRecord>();
  const { rollouts } = store.listRollouts({ agent, promptVersion: version, status: ['succeeded', 'failed'], sort: 'startTime', order: 'desc' });
  for (const r of rollouts) if (!m.has(r.taskId)) m.set(r.taskId, r);
  return m;
}

/** Per task both versions ran: each version's newest finished rollout of it. */
function tasksUnderBoth(older: ReadonlyMap<string, RolloutRecord>, newer: ReadonlyMap<string, RolloutRecord>): Map<string, { left: RolloutRecord; right: RolloutRecord }> {
  const out = new Map<string, { left: RolloutRecord; right: RolloutRecord }>();
  for (const [task, right] of newer) {
    const left = older.get(task);
    if (left) out.set(task, { left, right });
  }
  return out;
}
