import * as vscode from 'vscode';
import * as path from 'node:path';
import type { PromptVersionStats, VersionComparison } from '../core/rollout/promptStats';
import { errorMessage } from '../core/errors';
import type { LabService } from './labService';
import { promptAnnotation, type PromptAnnotation } from './view/promptLens';

/** Prompt files under .rollout-lab/prompts/, and any Markdown file that some agent names as its prompt. */
export const PROMPT_SELECTOR: vscode.DocumentSelector = [
  { scheme: 'file', pattern: '**/.rollout-lab/prompts/*.md' },
  { scheme: 'file', language: 'markdown' },
];

interface AgentStats {
  stats: PromptVersionStats[];
  comparisons: VersionComparison[];
  best: PromptVersionStats | null;
}

interface PromptFile {
  folder: string;
  agent: string;
}

/**
 * Reward annotations on agent prompt files: a CodeLens at the top with the
 * statistics of the version the editor's text is (its hash, saved or not), a
 * marker lens when a better-scoring version exists, and a hover on the first
 * line with the per-criterion breakdown. The lab is opened only once a prompt
 * file is shown; the statistics are cached per agent until the store changes.
 */
export class PromptCodeLensProvider implements vscode.CodeLensProvider, vscode.HoverProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly cache = new Map<string, Promise<AgentStats>>();
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly lab: LabService,
    private readonly log: (line: string) => void,
    private readonly debounceMs = 300,
  ) {
    this.disposables.push(
      lab.onDidChange((change) => {
        for (const key of [...this.cache.keys()]) if (key.startsWith(`${path.resolve(change.folder)}\0`)) this.cache.delete(key);
        this.changed.fire();
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length === 0 || (e.document.languageId !== 'markdown' && !e.document.uri.fsPath.endsWith('.md'))) return;
        this.scheduleRefresh();
      }),
    );
  }

  private scheduleRefresh(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.changed.fire();
    }, this.debounceMs);
  }

  async provideCodeLenses(doc: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    const a = await this.annotate(doc);
    if (!a) return [];
    const top = new vscode.Range(0, 0, 0, 0);
    const lenses = [new vscode.CodeLens(top, await this.openCommand(a.file, a.annotation.title, a.annotation.openVersion))];
    if (a.annotation.best) lenses.push(new vscode.CodeLens(top, await this.openCommand(a.file, a.annotation.best.title, a.annotation.best.version)));
    return lenses;
  }

  async provideHover(doc: vscode.TextDocument, position: vscode.Position): Promise<vscode.Hover | undefined> {
    if (position.line !== 0) return undefined;
    const a = await this.annotate(doc);
    if (!a) return undefined;
    return new vscode.Hover(new vscode.MarkdownString(a.annotation.hover), doc.lineAt(0).range);
  }

  /** A click opens the latest rollout of the version in the trace explorer (the whole version's list is for later). */
  private async openCommand(file: PromptFile, title: string, version: string | null): Promise<vscode.Command> {
    if (!version) return { title, command: '' };
    try {
      const store = await this.lab.store(file.folder);
      const latest = store.listRollouts({ agent: file.agent, promptVersion: version, status: 'succeeded', sort: 'startTime', order: 'desc', limit: 1 }).rollouts[0];
      if (latest) return { title, command: 'rolloutLab.openTraceExplorer', arguments: [latest.id], tooltip: 'Open the latest rollout of this prompt version in the Trace Explorer' };
    } catch (err) {
      this.log(`prompt annotations: ${errorMessage(err)}`);
    }
    return { title, command: '' };
  }

  private async annotate(doc: vscode.TextDocument): Promise<{ file: PromptFile; annotation: PromptAnnotation } | undefined> {
    try {
      const file = await this.promptFile(doc);
      if (!file) return undefined;
      const [{ promptHash }, s] = await Promise.all([import('../core/config/loader'), this.agentStats(file)]);
      return { file, annotation: promptAnnotation(file.agent, s.stats, s.comparisons, s.best, promptHash(doc.getText()), Date.now()) };
    } catch (err) {
      this.log(`prompt annotations for ${doc.uri.fsPath}: ${errorMessage(err)}`);
      return undefined;
    }
  }

  /**
   * The lab folder and agent whose prompt `doc` is, resolved as readAgentPrompt
   * does. A lab not yet open is opened only for a file inside its .rollout-lab/.
   */
  private async promptFile(doc: vscode.TextDocument): Promise<PromptFile | undefined> {
    if (doc.uri.scheme !== 'file') return undefined;
    const file = path.resolve(doc.uri.fsPath);
    for (const folder of this.lab.labFolders()) {
      const inLabDir = file.startsWith(path.join(folder, '.rollout-lab') + path.sep);
      if (!inLabDir && !this.lab.openedStore(folder)) continue;
      const lab = await this.lab.lab(folder);
      const { defaultPromptPath } = await import('../core/config/loader');
      for (const [agent, cfg] of Object.entries(lab.loaded.config.agents)) {
        if (cfg.promptText !== undefined) continue;
        if (path.resolve(lab.loaded.labDir, cfg.prompt ?? defaultPromptPath(agent)) === file) return { folder: path.resolve(folder), agent };
      }
    }
    return undefined;
  }

  private agentStats(file: PromptFile): Promise<AgentStats> {
    const key = `${file.folder}\0${file.agent}`;
    let p = this.cache.get(key);
    if (!p) {
      p = (async () => {
        const [{ promptVersionStats, compareToPrevious, bestVersion }, store] = await Promise.all([import('../core/rollout/promptStats'), this.lab.store(file.folder)]);
        const stats = promptVersionStats(store, file.agent);
        return { stats, comparisons: compareToPrevious(stats), best: bestVersion(stats) };
      })();
      const mine = p;
      mine.catch(() => {
        if (this.cache.get(key) === mine) this.cache.delete(key);
      });
      this.cache.set(key, mine);
    }
    return p;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}
