import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { core } from './coreLoader';
import type { LabService } from './labService';
import type { Panels } from './panels';
import type { CommandHandlers } from './webviews/panelHost';

/** Rollouts whose spans are read when looking for the latest visit of a node the rows cannot tell. */
const SPAN_SCAN_LIMIT = 25;

/** What the panels may ask the editor to do: open a prompt, show a rollout, show a node's latest visit, diff two rollouts. */
export function webviewCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  return {
    'prompt/open': async ({ agent }) => openPrompt(service, agent),
    'trace/open': ({ rolloutId, node }) => {
      panels().showTrace(rolloutId, node);
    },
    'trace/filterNode': async ({ node }) => {
      const rolloutId = await latestRolloutVisiting(service, node);
      if (!rolloutId) {
        void vscode.window.showInformationMessage(`Rollout Lab: no stored rollout has visited node "${node}" yet.`);
        return;
      }
      panels().showTrace(rolloutId, node);
    },
    'trace/diff': ({ left, right }) => {
      panels().showDiff(left, right);
    },
  };
}

/**
 * Opens an agent's prompt file; for an inline prompt (`promptText`), or a
 * `X_tools` node's agent X, opens lab.json at the agent's entry.
 */
export async function openPrompt(service: LabService, agentOrNode: string): Promise<void> {
  const lab = await service.lab();
  const { config, labDir, file: labJson } = lab.loaded;
  const { agentOfNode } = await core.langchainTracer();
  const agent = Object.prototype.hasOwnProperty.call(config.agents, agentOrNode) ? agentOrNode : agentOfNode(agentOrNode);
  const cfg = config.agents[agent];
  if (!cfg) throw new Error(`agent "${agentOrNode}" is not under "agents" in .rollout-lab/lab.json, so it has no prompt to open`);
  if (cfg.promptText !== undefined) {
    await revealJsonPath(labJson, ['agents', agent, 'promptText']);
    return;
  }
  const { defaultPromptPath } = await core.config();
  const file = path.resolve(labDir, cfg.prompt ?? defaultPromptPath(agent));
  if (!existsSync(file)) {
    const fix = cfg.prompt ? `fix agents.${agent}.prompt` : `set agents.${agent}.prompt or promptText`;
    throw new Error(`the prompt file ${file} of agent "${agent}" does not exist — create it, or ${fix} in lab.json`);
  }
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
}

/** Opens a JSON(C) file beside the active editor with the property at `at` selected (or its parent, or the file's start, when it is not found). */
export async function revealJsonPath(file: string, at: string[]): Promise<void> {
  const { findNodeAtLocation, parseTree } = await import('jsonc-parser');
  const text = await readFile(file, 'utf8');
  const root = parseTree(text);
  const node = root && at.length ? (findNodeAtLocation(root, at) ?? findNodeAtLocation(root, at.slice(0, -1))) : undefined;
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  const editor = await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
  if (!node) return;
  // The property's key when there is one, so the selection reads "promptText": ...
  const start = node.parent?.type === 'property' ? node.parent.offset : node.offset;
  const range = new vscode.Range(doc.positionAt(start), doc.positionAt(node.offset + node.length));
  editor.selection = new vscode.Selection(range.start, range.end);
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

/** The newest rollout that ran a graph node: agent nodes from the rollout rows, other nodes from recent spans. */
export async function latestRolloutVisiting(service: LabService, node: string): Promise<string | undefined> {
  const store = await service.store();
  const recent = store.listRollouts({ sort: 'startTime', order: 'desc', limit: 200 }).rollouts;
  const byRow = recent.find((r) => r.agents.some((a) => a.agent === node && a.visits > 0));
  if (byRow) return byRow.id;
  const { rolloutOverlay } = await core.graphStats();
  for (const r of recent.slice(0, SPAN_SCAN_LIMIT)) {
    if ((rolloutOverlay(store.getSpans(r.id)).visits[node] ?? 0) > 0) return r.id;
  }
  return undefined;
}
