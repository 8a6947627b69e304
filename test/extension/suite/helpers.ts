import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as vscode from 'vscode';

export const EXTENSION_ID = 'rollout-lab.rollout-lab';
/** The bundles live in out/test/extension/, three levels below the repository. */
export const REPO = resolve(__dirname, '../../..');
export const CLI = join(REPO, 'dist', 'cli.js');

export type PanelKind = 'traceExplorer' | 'graphView' | 'rewardCurve' | 'rewardWeights' | 'evalReport' | 'comparison';

/**
 * The part of the extension's API (what activate() returns) these tests use,
 * written structurally so the suite states the contract it relies on.
 */
export interface PanelHostLike {
  handle(method: string, params: unknown): Promise<unknown>;
}
export interface RolloutLabApiLike {
  activationMs: number;
  service: unknown;
  panels: { get(kind: PanelKind): PanelHostLike | undefined };
  rolloutsTree: vscode.TreeDataProvider<unknown>;
  /** What the extension last set its context keys to (undefined: not set yet, which when clauses read as false). */
  contextKey(key: 'rolloutLab.hasLab' | 'rolloutLab.hasRollouts' | 'rolloutLab.traceOpened' | 'rolloutLab.evaluated' | 'rolloutLab.dryRunShown'): boolean | undefined;
}

export function extension(): vscode.Extension<RolloutLabApiLike> {
  const ext = vscode.extensions.getExtension<RolloutLabApiLike>(EXTENSION_ID);
  if (!ext) throw new Error(`extension ${EXTENSION_ID} is not installed in this extension host`);
  return ext;
}

export async function api(): Promise<RolloutLabApiLike> {
  const ext = extension();
  const exports = ext.isActive ? ext.exports : await ext.activate();
  if (!exports) throw new Error('activate() returned nothing: the extension must return its RolloutLabApi');
  return exports;
}

export function workspaceDir(): string {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error('the tests need a folder open');
  return folder.uri.fsPath;
}

/**
 * Polls until `check` returns a value other than undefined/false. The bound is
 * generous because it only decides when to give up on a slow machine, never
 * whether something was fast enough.
 */
export async function waitFor<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${(last as Error).message ?? last}` : ''}`);
    await sleep(100);
  }
}

/** What Run Rollouts and Evaluate return when called with an argument. */
export interface RunSummaryLike {
  runId: string;
  rollouts: number;
  succeeded: number;
  failed: number;
  simulated: boolean;
  cancelled?: boolean;
}

const RUN_KEY = '__rolloutLabTestRun';

/**
 * One run of three rollouts on the simulated endpoint, made through the
 * command the first time a test file needs it and shared by the others (each
 * file is its own bundle, so the cache lives on globalThis).
 */
export async function ensureRun(): Promise<RunSummaryLike> {
  const g = globalThis as unknown as Record<string, Promise<RunSummaryLike> | undefined>;
  g[RUN_KEY] ??= (async () => {
    const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 3 });
    if (!r || typeof r.runId !== 'string') throw new Error(`rolloutLab.runRollouts({ limit: 3 }) returned ${JSON.stringify(r)}, not { runId, rollouts, succeeded, failed, simulated }`);
    return r;
  })();
  return g[RUN_KEY]!;
}

/** A node of the rollouts view as the tests look at it (the provider's own node type is internal). */
export interface TreeNodeLike {
  kind: string;
  run?: { id: string; status: string };
  rollout?: { id: string; runId: string; status: string; finalReward: number | null; taskId: string };
}

export async function treeChildren(tree: vscode.TreeDataProvider<unknown>, node?: unknown): Promise<TreeNodeLike[]> {
  return ((await tree.getChildren(node)) ?? []) as TreeNodeLike[];
}

/** The run's node in the view, and its rollouts' nodes, or undefined while the view does not show it. */
export async function runInTree(tree: vscode.TreeDataProvider<unknown>, runId: string): Promise<{ run: TreeNodeLike; rollouts: TreeNodeLike[] } | undefined> {
  const top = await treeChildren(tree);
  // With one lab the top level is runs; with several, labs whose children are runs.
  const runs = top.some((n) => n.kind === 'lab') ? (await Promise.all(top.map((n) => treeChildren(tree, n)))).flat() : top;
  const run = runs.find((n) => n.kind === 'run' && n.run?.id === runId);
  if (!run) return undefined;
  const rollouts = (await treeChildren(tree, run)).filter((n) => n.kind === 'rollout');
  return { run, rollouts };
}

/** Runs the CLI in another process, as a user in a terminal would (the extension host must not block on it). */
export function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** What `rolloutLab.refreshTraining` returns: the Training view as plain data. */
export interface SnapshotItem {
  label: string;
  /** A job's id (its label is the phase and when it started). */
  jobId?: string;
  description?: string;
  icon?: string;
  contextValue?: string;
  children?: SnapshotItem[];
}

/**
 * Presses Enter on each picker and input box the command shows until it
 * settles, as a user taking every proposed answer. It paces the presses: a
 * multi-select picker accepted before its items arrive from the extension
 * host would return nothing picked.
 */
export async function answerEveryPicker<T>(run: () => Thenable<T>): Promise<T> {
  // A panel an earlier command opened (the evaluation report) may take the focus while it loads, which closes a picker: none is open.
  await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  let done = false;
  const settled = Promise.resolve(run()).finally(() => (done = true));
  for (let i = 0; !done && i < 400; i++) {
    await new Promise((r) => setTimeout(r, 300));
    if (!done) await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
  }
  return settled;
}
