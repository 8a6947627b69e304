import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { core } from '../coreLoader';
import type { PromptVersionStats, VersionComparison } from '../../core/analysis/promptStats';
import { Disposable } from '../disposable';
import type { LabService } from '../labService';
import { changedLines, type PromptLineChange } from '../view/promptDiff';
import { findInlinePrompts } from './inlinePrompt';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

/** One agent's prompt as it is in an open document: a prompt file, or an inline `promptText` in lab.json. */
export interface PromptTarget {
  /** Absolute path of the workspace folder that holds the lab. */
  folder: string;
  agent: string;
  kind: 'file' | 'inline';
  /** The document that holds the prompt (the prompt file, or lab.json). */
  uri: vscode.Uri;
  /** The prompt as the runner would read it now. */
  text: string;
  /** Its content hash: the version a run would record. */
  version: string;
  /** Where the lenses and the statistics hover go: line 0 of a file, the `"promptText"` key in lab.json. */
  line: number;
  /** The lines the prompt takes in the document. */
  firstLine: number;
  lastLine: number;
}

export interface AgentStats {
  stats: PromptVersionStats[];
  comparisons: VersionComparison[];
  best: PromptVersionStats | null;
}

/** Where a target differs from the best-scoring version: null when it is the best, or there is none to compare with. */
export interface BestDifference {
  best: PromptVersionStats;
  changes: PromptLineChange[];
}

const LAB_JSON = path.join('.rollout-lab', 'lab.json');

/**
 * Finds the agent prompts in documents (prompt files and lab.json's inline
 * prompts) and keeps each agent's version statistics until its lab's store
 * changes. The lenses, the markers and the prompt-history commands all read
 * through it, so they agree on which text is which version.
 */
export class PromptIndex extends Disposable {
  private readonly changed = this.register(new vscode.EventEmitter<string>());
  /** Fired with the lab folder whose statistics changed (rollouts landed, the lab was reopened). */
  readonly onDidChange = this.changed.event;
  private readonly cache = new Map<string, Promise<AgentStats>>();

  constructor(
    private readonly lab: LabService,
    private readonly log: (line: string) => void,
  ) {
    super();
    this.register(
      lab.onDidChange((change) => {
        const folder = path.resolve(change.folder);
        for (const key of [...this.cache.keys()]) if (key.startsWith(`${folder}\0`)) this.cache.delete(key);
        this.changed.fire(folder);
      }),
    );
  }

  /** The lab folder whose lab.json `file` is, if it is one. */
  labFolderOfConfig(file: string): string | undefined {
    const abs = path.resolve(file);
    return this.lab.labFolders().find((f) => path.join(path.resolve(f), LAB_JSON) === abs);
  }

  /**
   * The prompts `doc` holds. A lab not yet open is opened only for a file
   * inside its .rollout-lab/ (as the lenses have always done), so opening
   * any Markdown file elsewhere costs nothing.
   */
  async targetsOf(doc: vscode.TextDocument): Promise<PromptTarget[]> {
    if (doc.uri.scheme !== 'file') return [];
    const { promptHash } = await core.config();
    const configOf = this.labFolderOfConfig(doc.uri.fsPath);
    if (configOf) {
      return findInlinePrompts(doc.getText()).map((p) => ({
        folder: path.resolve(configOf),
        agent: p.agent,
        kind: 'inline' as const,
        uri: doc.uri,
        text: p.text,
        version: promptHash(p.text),
        line: doc.positionAt(p.keyOffset).line,
        firstLine: doc.positionAt(p.valueOffset).line,
        lastLine: doc.positionAt(p.valueOffset + p.valueLength).line,
      }));
    }
    const file = await this.promptFile(doc.uri.fsPath);
    if (!file) return [];
    const text = doc.getText();
    return [{ ...file, kind: 'file', uri: doc.uri, text, version: promptHash(text), line: 0, firstLine: 0, lastLine: Math.max(0, doc.lineCount - 1) }];
  }

  /** The lab folder and agent whose prompt file `fsPath` is, resolved as readAgentPrompt does. */
  private async promptFile(fsPath: string): Promise<{ folder: string; agent: string } | undefined> {
    const file = path.resolve(fsPath);
    for (const folder of this.lab.labFolders()) {
      const inLabDir = file.startsWith(path.join(folder, '.rollout-lab') + path.sep);
      if (!inLabDir && !this.lab.openedStore(folder)) continue;
      const lab = await this.lab.lab(folder);
      const { defaultPromptPath } = await core.config();
      for (const [agent, cfg] of Object.entries(lab.loaded.config.agents)) {
        if (cfg.promptText !== undefined) continue;
        if (path.resolve(lab.loaded.labDir, cfg.prompt ?? defaultPromptPath(agent)) === file) return { folder: path.resolve(folder), agent };
      }
    }
    return undefined;
  }

  /** The agents of a lab, in config order. */
  async agents(folder: string): Promise<string[]> {
    return Object.keys((await this.lab.lab(folder)).loaded.config.agents);
  }

  /**
   * An agent's prompt as it is now (unsaved edits included): inline in
   * lab.json when the editor's lab.json has its promptText, else its file.
   */
  async currentTarget(folder: string, agent: string): Promise<PromptTarget> {
    const abs = path.resolve(folder);
    const lab = await this.lab.lab(abs);
    const cfg = lab.loaded.config.agents[agent];
    if (!cfg) {
      const known = Object.keys(lab.loaded.config.agents).join(', ') || '(none)';
      throw new Error(`agent "${agent}" is not defined in ${lab.loaded.file} (defined: ${known})`);
    }
    const config = await vscode.workspace.openTextDocument(vscode.Uri.file(lab.loaded.file));
    const inline = (await this.targetsOf(config)).find((t) => t.agent === agent);
    if (inline) return inline;
    const { defaultPromptPath, promptHash } = await core.config();
    const file = path.resolve(lab.loaded.labDir, cfg.prompt ?? defaultPromptPath(agent));
    if (!existsSync(file)) throw new Error(`the prompt file ${file} of agent "${agent}" does not exist — create it, or set agents.${agent}.prompt in lab.json`);
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    const text = doc.getText();
    return { folder: abs, agent, kind: 'file', uri: doc.uri, text, version: promptHash(text), line: 0, firstLine: 0, lastLine: Math.max(0, doc.lineCount - 1) };
  }

  /** An agent's version statistics, cached until its lab's store changes. */
  agentStats(folder: string, agent: string): Promise<AgentStats> {
    const key = `${path.resolve(folder)}\0${agent}`;
    let p = this.cache.get(key);
    if (!p) {
      p = (async () => {
        const [{ promptVersionStats, compareToPrevious, bestVersion }, lab] = await Promise.all([core.promptStats(), this.lab.lab(folder)]);
        // Under the lab's current reward: rewards scored under older weights are re-scored on the fly, or not compared.
        const stats = promptVersionStats(lab.store, agent, { labels: decisionLabelsOf(lab.loaded.config), reward: lab.loaded.config.reward });
        return { stats, comparisons: compareToPrevious(stats), best: bestVersion(stats) };
      })();
      const mine = p;
      mine.catch((err: unknown) => {
        if (this.cache.get(key) === mine) this.cache.delete(key);
        this.log(`prompt statistics of ${agent}: ${(err as Error)?.message ?? err}`);
      });
      this.cache.set(key, mine);
    }
    return p;
  }

  /**
   * The lines of a target that differ from its agent's best-scoring version.
   * An inline prompt is one JSON string, so all its lines are marked.
   */
  bestDifference(target: PromptTarget, s: AgentStats): BestDifference | null {
    const best = s.best;
    if (!best || best.version === target.version) return null;
    if (target.kind === 'inline') return { best, changes: [{ kind: 'modified', startLine: target.firstLine, endLine: target.lastLine }] };
    if (best.text === undefined) return null;
    const changes = changedLines(best.text, target.text);
    return changes.length ? { best, changes } : null;
  }
}
