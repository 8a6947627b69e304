import * as vscode from 'vscode';
import { errorMessage } from '../core/errors';
import { Disposable } from './disposable';
import type { AgentStats, PromptIndex, PromptTarget } from './promptHistory/promptIndex';
import { differsFromBestMarkdown, isChangedLine, versionLinksMarkdown, type PromptVersionRef } from './view/promptDiff';
import { promptAnnotation, type PromptAnnotation, type SparklineTheme } from './view/promptLens';

/** Prompt files under .rollout-lab/prompts/, any Markdown file that some agent names as its prompt, and lab.json for inline prompts. */
export const PROMPT_SELECTOR: vscode.DocumentSelector = [
  { scheme: 'file', pattern: '**/.rollout-lab/prompts/*.md' },
  { scheme: 'file', language: 'markdown' },
  { scheme: 'file', pattern: '**/.rollout-lab/lab.json' },
];

/** The commands the hovers' links may run (the Markdown is trusted for these only). */
const HOVER_COMMANDS = ['rolloutLab.showPromptVersionRollouts', 'rolloutLab.comparePromptWithVersion'];

/** Whether a change to `doc` can change what the lenses show. */
export function mayHoldPrompt(doc: vscode.TextDocument): boolean {
  if (doc.uri.scheme !== 'file') return false;
  const p = doc.uri.fsPath;
  return doc.languageId === 'markdown' || p.endsWith('.md') || p.endsWith('lab.json');
}

/**
 * Reward annotations on agent prompts: above a prompt file's first line, and
 * above each inline `"promptText"` in lab.json, a CodeLens with the
 * statistics of the version the editor's text is (its hash, saved or not)
 * that opens that version's rollouts, a marker lens when a better-scoring
 * version exists, and "Compare with Version…". The hover on that line has
 * the per-criterion breakdown; the hover on lines that differ from the best
 * version says so and links to the diff.
 */
export class PromptCodeLensProvider extends Disposable implements vscode.CodeLensProvider, vscode.HoverProvider {
  private readonly changed = this.register(new vscode.EventEmitter<void>());
  readonly onDidChangeCodeLenses = this.changed.event;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly index: PromptIndex,
    private readonly log: (line: string) => void,
    private readonly debounceMs = 300,
  ) {
    super();
    this.register(index.onDidChange(() => this.changed.fire()));
    this.register(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && mayHoldPrompt(e.document)) this.scheduleRefresh();
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
    const lenses: vscode.CodeLens[] = [];
    for (const { target, annotation, stats } of await this.annotate(doc)) {
      const at = new vscode.Range(target.line, 0, target.line, 0);
      const agentRef = { folder: target.folder, agent: target.agent };
      lenses.push(new vscode.CodeLens(at, showRollouts(annotation.title, agentRef, annotation.openVersion)));
      if (annotation.best) lenses.push(new vscode.CodeLens(at, showRollouts(annotation.best.title, agentRef, annotation.best.version)));
      if (stats.stats.some((s) => s.version !== target.version)) {
        lenses.push(
          new vscode.CodeLens(at, {
            title: 'Compare with Version…',
            command: 'rolloutLab.comparePromptWithVersion',
            arguments: [agentRef],
            tooltip: `Open the diff between a stored version of ${target.agent}'s prompt and this text`,
          }),
        );
      }
    }
    return lenses;
  }

  async provideHover(doc: vscode.TextDocument, position: vscode.Position): Promise<vscode.Hover | undefined> {
    const parts: string[] = [];
    let range: vscode.Range | undefined;
    for (const { target, annotation, stats } of await this.annotate(doc)) {
      const inText = position.line >= target.firstLine && position.line <= target.lastLine;
      if (position.line !== target.line && !inText) continue;
      const ref: PromptVersionRef | null = annotation.openVersion ? { folder: target.folder, agent: target.agent, version: annotation.openVersion } : null;
      if (position.line === target.line) {
        parts.push(annotation.hover, versionLinksMarkdown(ref, { folder: target.folder, agent: target.agent }));
        range = doc.lineAt(target.line).range;
      }
      const diff = this.index.bestDifference(target, stats);
      if (diff && isChangedLine(diff.changes, position.line)) {
        parts.push(differsFromBestMarkdown(diff.best, { folder: target.folder, agent: target.agent, version: diff.best.version }));
        range ??= doc.lineAt(position.line).range;
      }
    }
    if (parts.length === 0) return undefined;
    const md = new vscode.MarkdownString(parts.join('\n\n---\n\n'));
    md.isTrusted = { enabledCommands: HOVER_COMMANDS };
    return new vscode.Hover(md, range);
  }

  private async annotate(doc: vscode.TextDocument): Promise<Array<{ target: PromptTarget; annotation: PromptAnnotation; stats: AgentStats }>> {
    try {
      const targets = await this.index.targetsOf(doc);
      const now = Date.now();
      return await Promise.all(
        targets.map(async (target) => {
          const stats = await this.index.agentStats(target.folder, target.agent);
          return { target, stats, annotation: promptAnnotation(target.agent, stats.stats, stats.comparisons, stats.best, target.version, now, sparklineTheme()) };
        }),
      );
    } catch (err) {
      this.log(`prompt annotations for ${doc.uri.fsPath}: ${errorMessage(err)}`);
      return [];
    }
  }

  override dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    super.dispose();
  }
}

/** A lens's command: the version's rollouts in a picker, or nothing when no version has run yet. */
function showRollouts(title: string, agent: { folder: string; agent: string }, version: string | null): vscode.Command {
  if (!version) return { title, command: '' };
  return {
    title,
    command: 'rolloutLab.showPromptVersionRollouts',
    arguments: [{ ...agent, version }],
    tooltip: 'Show the rollouts of this prompt version; pick one to open it in the Trace Explorer',
  };
}

/** The sparkline's colours follow the active colour theme's kind (read at each hover, so a theme switch shows at once). */
function sparklineTheme(): SparklineTheme {
  switch (vscode.window.activeColorTheme.kind) {
    case vscode.ColorThemeKind.Light:
      return 'light';
    case vscode.ColorThemeKind.HighContrast:
      return 'highContrast';
    case vscode.ColorThemeKind.HighContrastLight:
      return 'highContrastLight';
    default:
      return 'dark';
  }
}
