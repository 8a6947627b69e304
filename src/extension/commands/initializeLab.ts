import * as path from 'node:path';
import * as vscode from 'vscode';
import { initDatasetNote } from '../../core/lab/initDatasetNote';
import { core } from '../coreLoader';
import type { LabService } from '../labService';

/** Set up for the research lab, or for the user's own module (`{ graph }`, relative to the folder or absolute). */
export type InitializeChoice = 'research-lab' | { graph: string };

/** The argument that asks for the user's own graph module straight away (the walkthrough's "your own graph" link). */
export const PICK_OWN_GRAPH = 'own-graph';

const GRAPH_FILES = '**/*.{ts,mts,cts,js,mjs,cjs}';

/**
 * Which lab to set up. An argument decides ('research-lab', `{ graph }`, or
 * 'own-graph' for the file picker); a folder with no source file gets the
 * research lab without a question; otherwise a quick pick offers the
 * research-lab reference or one of the user's own graph modules (a file picker).
 */
async function choose(folder: vscode.WorkspaceFolder, arg: unknown): Promise<InitializeChoice | undefined> {
  if (arg === 'research-lab') return arg;
  if (arg === PICK_OWN_GRAPH) return pickGraphModule(folder);
  if (typeof arg === 'object' && arg !== null && typeof (arg as { graph?: unknown }).graph === 'string') return { graph: (arg as { graph: string }).graph };
  const sources = await vscode.workspace.findFiles(new vscode.RelativePattern(folder, GRAPH_FILES), '**/node_modules/**', 1);
  if (sources.length === 0) return 'research-lab';
  const picked = await vscode.window.showQuickPick(
    [
      { label: 'Research-lab reference', detail: 'The built-in nine-agent graph with its prompts, tools and judge criteria.', choice: 'research' as const },
      { label: 'My own graph module…', detail: 'A TS or JS file exporting a LangGraph.js graph or a factory (ctx) => graph: lab.json gets its agents only.', choice: 'module' as const },
    ],
    { title: 'Rollout Lab: Initialize Lab', placeHolder: 'Which graph will the rollouts run?' },
  );
  if (!picked) return undefined;
  if (picked.choice === 'research') return 'research-lab';
  return pickGraphModule(folder);
}

/** The user's graph module, from a file picker: relative to the folder when it is inside it. */
async function pickGraphModule(folder: vscode.WorkspaceFolder): Promise<InitializeChoice | undefined> {
  const files = await vscode.window.showOpenDialog({
    title: 'The LangGraph.js module the lab runs',
    defaultUri: folder.uri,
    canSelectMany: false,
    filters: { 'TypeScript or JavaScript': ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs'] },
    openLabel: 'Use This Graph',
  });
  const file = files?.[0]?.fsPath;
  if (!file) return undefined;
  const rel = path.relative(folder.uri.fsPath, file);
  return { graph: rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel.split(path.sep).join('/') : file };
}

/** The "Initialize Lab" command: writes .rollout-lab/ and opens lab.json. */
export async function initializeLab(lab: LabService, output: vscode.OutputChannel, arg?: unknown): Promise<void> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) throw new Error('Rollout Lab needs an open folder: open the folder that holds (or will hold) .rollout-lab/');
  const dir = folder.uri.fsPath;
  const choice = await choose(folder, arg);
  if (!choice) return;
  const { initWorkspace } = await core.init();
  const r = await initWorkspace(dir, choice === 'research-lab' ? {} : { graph: choice.graph });
  output.appendLine(`Initialized ${dir}: created ${r.created.length}, kept ${r.skipped.length}`);
  // Which data Run Rollouts will offer: the bundled sample in a folder with nothing beside it.
  if (r.dataset) {
    const note = initDatasetNote(r.dataset, 'workspace', 'pick another file with Browse… in Run Rollouts, add one under "datasets" in lab.json,');
    output.appendLine(note);
    // Not awaited: the message stays up while lab.json opens.
    void vscode.window.showInformationMessage(`Rollout Lab: ${note}`);
  }
  if (r.agents) output.appendLine(`Agents of the graph module: ${r.agents.names.join(', ')}; write each one's prompt in .rollout-lab/prompts/.`);
  lab.invalidate(dir);
  await lab.syncContext();
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(`${dir}/.rollout-lab/lab.json`));
  // Pinned, so it opens beside the walkthrough (a preview editor would take the walkthrough's place).
  await vscode.window.showTextDocument(doc, { preview: false });
}
