import * as vscode from 'vscode';
import { errorMessage } from '../../core/errors';
import { Disposable } from '../disposable';
import { mayHoldPrompt } from '../promptCodeLens';
import type { PromptLineChange } from '../view/promptDiff';
import type { PromptIndex } from './promptIndex';

type Kind = PromptLineChange['kind'];

/** Theme colours only, so the markers follow dark, light and high-contrast themes. */
function decorationType(kind: Kind): vscode.TextEditorDecorationType {
  const ruler = new vscode.ThemeColor(kind === 'added' ? 'editorOverviewRuler.addedForeground' : kind === 'modified' ? 'editorOverviewRuler.modifiedForeground' : 'editorOverviewRuler.deletedForeground');
  const gutter = new vscode.ThemeColor(kind === 'added' ? 'editorGutter.addedBackground' : kind === 'modified' ? 'editorGutter.modifiedBackground' : 'editorGutter.deletedBackground');
  if (kind === 'deleted') {
    // Removed lines have no line of their own: a rule above the line they were before.
    return vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      borderColor: gutter,
      borderStyle: 'solid',
      borderWidth: '1px 0 0 0',
      overviewRulerColor: ruler,
      overviewRulerLane: vscode.OverviewRulerLane.Left,
    });
  }
  return vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    // Text the best version does not have, as a diff editor shades it; the bar's colour tells added from changed.
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
    // A bar at the left edge of the text stands in for a gutter mark (gutter icons cannot take theme colours).
    borderColor: gutter,
    borderStyle: 'solid',
    borderWidth: '0 0 0 3px',
    overviewRulerColor: ruler,
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
}

/**
 * Whether an editor is a side of a diff editor (which marks the differences
 * itself): embedded editors have no view column of their own, so one on a
 * document that the active diff tab of some group shows is taken to be it.
 */
function inDiffEditor(editor: vscode.TextEditor): boolean {
  const uri = editor.document.uri.toString();
  return vscode.window.tabGroups.all.some((g) => {
    if (editor.viewColumn !== undefined && g.viewColumn !== editor.viewColumn) return false;
    const input = g.activeTab?.input;
    return input instanceof vscode.TabInputTextDiff && (input.modified.toString() === uri || input.original.toString() === uri);
  });
}

/**
 * Marks, in every visible editor on an agent prompt (but not the sides of a
 * diff editor, which mark the differences themselves), the lines where the text
 * differs from the agent's best-scoring version: a bar and a line background
 * in the editor, a mark in the overview ruler. Updated (debounced) as the
 * user types, when editors are shown and when rollouts land.
 */
export class PromptDecorations extends Disposable {
  private readonly types: Record<Kind, vscode.TextEditorDecorationType> = {
    added: this.register(decorationType('added')),
    modified: this.register(decorationType('modified')),
    deleted: this.register(decorationType('deleted')),
  };
  /** What each document was last decorated with, by URI. */
  private readonly shown = new Map<string, PromptLineChange[]>();
  /** Bumped per document on each update, so an older, slower update never overwrites a newer one. */
  private readonly generation = new Map<string, number>();
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  /** The editors each document's markers were last drawn in (the extension tests read them). */
  private readonly drawnIn = new Map<string, Array<{ viewColumn: vscode.ViewColumn | undefined; inDiff: boolean }>>();

  constructor(
    private readonly index: PromptIndex,
    private readonly log: (line: string) => void,
    private readonly debounceMs = 300,
  ) {
    super();
    this.register(vscode.window.onDidChangeVisibleTextEditors(() => this.updateAll()));
    // A diff editor opened on a prompt in an editor's group: its sides lose the markers.
    this.register(vscode.window.tabGroups.onDidChangeTabs(() => this.updateAll()));
    this.register(index.onDidChange(() => this.updateAll()));
    this.register(
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && mayHoldPrompt(e.document)) this.schedule(e.document);
      }),
    );
    this.register(vscode.workspace.onDidCloseTextDocument((doc) => this.shown.delete(doc.uri.toString())));
    this.updateAll();
  }

  /** The line changes last decorated on a document (empty when none are marked). */
  decorated(uri: vscode.Uri): readonly PromptLineChange[] {
    return this.shown.get(uri.toString()) ?? [];
  }

  /** The editors a document's markers are drawn in: its visible editors that are not a side of a diff editor. */
  markedEditors(uri: vscode.Uri): ReadonlyArray<{ viewColumn: vscode.ViewColumn | undefined; inDiff: boolean }> {
    return this.drawnIn.get(uri.toString()) ?? [];
  }

  private schedule(doc: vscode.TextDocument): void {
    const key = doc.uri.toString();
    const pending = this.timers.get(key);
    if (pending) clearTimeout(pending);
    this.timers.set(
      key,
      setTimeout(() => {
        this.timers.delete(key);
        void this.update(doc);
      }, this.debounceMs),
    );
  }

  private updateAll(): void {
    const docs = new Set(vscode.window.visibleTextEditors.map((e) => e.document).filter(mayHoldPrompt));
    for (const doc of docs) void this.update(doc);
  }

  private async update(doc: vscode.TextDocument): Promise<void> {
    const key = doc.uri.toString();
    const gen = (this.generation.get(key) ?? 0) + 1;
    this.generation.set(key, gen);
    let changes: PromptLineChange[] = [];
    try {
      for (const target of await this.index.targetsOf(doc)) {
        const diff = this.index.bestDifference(target, await this.index.agentStats(target.folder, target.agent));
        if (diff) changes.push(...diff.changes);
      }
    } catch (err) {
      this.log(`prompt markers for ${doc.uri.fsPath}: ${errorMessage(err)}`);
      changes = [];
    }
    if (this.generation.get(key) !== gen || doc.isClosed) return;
    this.shown.set(key, changes);
    const drawn: Array<{ viewColumn: vscode.ViewColumn | undefined; inDiff: boolean }> = [];
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() !== key) continue;
      const inDiff = inDiffEditor(editor);
      let marked = 0;
      for (const kind of Object.keys(this.types) as Kind[]) {
        const ranges = inDiff ? [] : changes.filter((c) => c.kind === kind).map((c) => new vscode.Range(c.startLine, 0, c.endLine, 0));
        editor.setDecorations(this.types[kind], ranges);
        marked += ranges.length;
      }
      if (marked) drawn.push({ viewColumn: editor.viewColumn, inDiff });
    }
    this.drawnIn.set(key, drawn);
  }

  override dispose(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    super.dispose();
  }
}
