import * as vscode from 'vscode';
import { z } from 'zod';
import type { FeatureContext } from '../featureContext';
import { PROMPT_SELECTOR, PromptCodeLensProvider } from '../promptCodeLens';
import { compactStats, promptDiffTitle, type PromptLineChange, type PromptVersionRef } from '../view/promptDiff';
import { shortHash } from '../view/promptLens';
import { PromptDecorations } from './decorations';
import { setInlinePromptEdits } from './inlinePrompt';
import { rolloutPickRows, versionPickRows } from './pickItems';
import { PromptIndex, type PromptTarget } from './promptIndex';
import { PROMPT_VERSION_SCHEME, PromptVersionContent, parsePromptDocUri, promptDocUri } from './versionContent';
import { diffWithPreviousPromptVersion } from '../traceDiff/commands';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

/** What the extension-host tests can see of the prompt annotations. */
export interface PromptHistoryApi {
  /** The line changes marked (differences from the best version) in the editors on a document. */
  markers(uri: vscode.Uri): readonly PromptLineChange[];
  /** The editors those markers are drawn in (never a side of a diff editor). */
  markedEditors(uri: vscode.Uri): ReadonlyArray<{ viewColumn: vscode.ViewColumn | undefined; inDiff: boolean }>;
}

/** The argument-object form of the three commands (tests, keybindings, the lenses' and hovers' links). */
const PromptArgsSchema = z.strictObject({
  folder: z.string().min(1).optional(),
  agent: z.string().min(1),
  version: z
    .string()
    .regex(/^[0-9a-f]{12}$/, 'a prompt version is 12 hex digits (the hash the lenses show the first 7 of)')
    .optional(),
});
type PromptArgs = z.infer<typeof PromptArgsSchema>;

/** At most this many rollouts are listed; the picker's title says when there are more. */
const MAX_LISTED = 2000;

/**
 * The reward annotations on prompts and the prompt history: the lenses,
 * hovers and markers, the read-only version documents, and the commands
 * "Show Rollouts of This Prompt Version", "Compare with Version…" and
 * "Restore This Version".
 */
export function registerPromptHistoryCommands(ctx: FeatureContext): PromptHistoryApi {
  const index = new PromptIndex(ctx.lab, ctx.log);
  const lenses = new PromptCodeLensProvider(index, ctx.log);
  const decorations = new PromptDecorations(index, ctx.log);
  const content = new PromptVersionContent(ctx.lab, index);
  const history = new PromptHistory(ctx, index);
  ctx.extension.subscriptions.push(
    index,
    lenses,
    decorations,
    content,
    vscode.languages.registerCodeLensProvider(PROMPT_SELECTOR, lenses),
    vscode.languages.registerHoverProvider(PROMPT_SELECTOR, lenses),
    vscode.workspace.registerTextDocumentContentProvider(PROMPT_VERSION_SCHEME, content),
    ...history.trackContextKeys(),
  );
  ctx.register('rolloutLab.showPromptVersionRollouts', (arg) => history.showVersionRollouts(arg));
  ctx.register('rolloutLab.comparePromptWithVersion', (arg) => history.compareWithVersion(arg));
  ctx.register('rolloutLab.restorePromptVersion', (arg) => history.restoreVersion(arg));
  ctx.register('rolloutLab.diffRolloutWithPreviousPromptVersion', (arg) => history.diffRolloutWithPreviousVersion(arg));
  return { markers: (uri) => decorations.decorated(uri), markedEditors: (uri) => decorations.markedEditors(uri) };
}

function parseArgs(raw: unknown, command: string): PromptArgs {
  const r = PromptArgsSchema.safeParse(raw);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const where = issue?.path.length ? `${issue.path.join('.')}: ` : '';
  throw new Error(`invalid arguments for ${command}: ${where}${issue?.message ?? 'expected { folder?, agent, version? }'}`);
}

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !(x instanceof vscode.Uri);
}

class PromptHistory {
  constructor(
    private readonly ctx: FeatureContext,
    private readonly index: PromptIndex,
  ) {}

  /**
   * `rolloutLab.isPromptFile` (the active editor is an agent's prompt file)
   * and `rolloutLab.isPromptVersionDiff` (the active editor is a diff against
   * a stored version) drive the editor menus.
   */
  trackContextKeys(): vscode.Disposable[] {
    let gen = 0;
    const update = async (): Promise<void> => {
      const mine = ++gen;
      const doc = vscode.window.activeTextEditor?.document;
      let isPrompt = false;
      try {
        isPrompt = doc ? (await this.index.targetsOf(doc)).some((t) => t.kind === 'file') : false;
      } catch {
        isPrompt = false;
      }
      if (mine !== gen) return;
      await vscode.commands.executeCommand('setContext', 'rolloutLab.isPromptFile', isPrompt);
      await vscode.commands.executeCommand('setContext', 'rolloutLab.isPromptVersionDiff', this.activeDiff() !== undefined);
    };
    void update();
    const poke = (): void => void update();
    return [
      vscode.window.onDidChangeActiveTextEditor(poke),
      vscode.window.tabGroups.onDidChangeTabs(poke),
      vscode.window.tabGroups.onDidChangeTabGroups(poke),
      this.index.onDidChange(poke),
    ];
  }

  /** The stored version on the left of the active diff editor, when it is one of ours. */
  private activeDiff(): PromptVersionRef | undefined {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    if (!(input instanceof vscode.TabInputTextDiff)) return undefined;
    const ref = parsePromptDocUri(input.original);
    if (!ref || ref.what !== 'text' || ref.version === 'current') return undefined;
    return { folder: ref.folder, agent: ref.agent, version: ref.version };
  }

  /**
   * The agent a command is about: from its argument object, a prompt file's
   * URI (editor menus), the active editor, or else asked.
   */
  private async resolveAgent(arg: unknown, command: string): Promise<{ folder: string; agent: string; version?: string } | undefined> {
    if (isPlainObject(arg)) {
      const a = parseArgs(arg, command);
      const folder = this.ctx.lab.resolveFolder(a.folder);
      const agents = await this.index.agents(folder);
      if (!agents.includes(a.agent)) throw new Error(`agent "${a.agent}" is not defined in ${folder}/.rollout-lab/lab.json (defined: ${agents.join(', ') || '(none)'})`);
      return { folder, agent: a.agent, ...(a.version ? { version: a.version } : {}) };
    }
    if (arg instanceof vscode.Uri) {
      const ref = parsePromptDocUri(arg);
      if (ref && ref.version !== 'current') return { folder: ref.folder, agent: ref.agent, version: ref.version };
      if (ref) return { folder: ref.folder, agent: ref.agent };
      const t = (await this.index.targetsOf(await vscode.workspace.openTextDocument(arg))).find((x) => x.kind === 'file');
      if (t) return { folder: t.folder, agent: t.agent };
    }
    const doc = vscode.window.activeTextEditor?.document;
    const targets = doc ? await this.index.targetsOf(doc) : [];
    const line = vscode.window.activeTextEditor?.selection.active.line ?? 0;
    const here = targets.find((t) => t.kind === 'file') ?? targets.find((t) => line >= Math.min(t.line, t.firstLine) && line <= t.lastLine);
    if (here) return { folder: here.folder, agent: here.agent };
    const folder = this.ctx.lab.resolveFolder();
    const agents = await this.index.agents(folder);
    const agent = await vscode.window.showQuickPick(agents, { title: 'Rollout Lab: Which agent\u2019s prompt?', placeHolder: 'Agent' });
    return agent ? { folder, agent } : undefined;
  }

  /** Asks for one of an agent's stored versions, with its statistics. */
  private async pickVersion(folder: string, agent: string, title: string, current: string | null, opts: { withRestore: boolean; currentLast?: boolean }): Promise<{ version: string; restore: boolean } | undefined> {
    const s = await this.index.agentStats(folder, agent);
    if (s.stats.length === 0) {
      void vscode.window.showInformationMessage(`Rollout Lab: no stored versions of ${agent}'s prompt yet — run some rollouts first.`);
      return undefined;
    }
    const restoreButton: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('discard'), tooltip: 'Restore This Version' };
    const items = versionPickRows(s.stats, s.best?.version ?? null, current, Date.now(), { currentLast: opts.currentLast === true }).map((row) => ({
      ...row,
      buttons: opts.withRestore && row.version !== current ? [restoreButton] : [],
    }));
    const qp = vscode.window.createQuickPick<(typeof items)[number]>();
    qp.title = title;
    qp.placeholder = `${agent}: pick a stored prompt version (newest first)`;
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    qp.items = items;
    return new Promise((resolve) => {
      let result: { version: string; restore: boolean } | undefined;
      qp.onDidAccept(() => {
        const picked = qp.selectedItems[0];
        if (picked) result = { version: picked.version, restore: false };
        qp.hide();
      });
      qp.onDidTriggerItemButton((e) => {
        result = { version: e.item.version, restore: true };
        qp.hide();
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve(result);
      });
      qp.show();
    });
  }

  /** "Show Rollouts of This Prompt Version": every rollout of it, newest first; picking one opens it in the Trace Explorer. */
  async showVersionRollouts(arg: unknown): Promise<string | undefined> {
    const who = await this.resolveAgent(arg, 'Show Rollouts of This Prompt Version');
    if (!who) return undefined;
    const { folder, agent } = who;
    let version = who.version;
    if (!version) {
      const current = await this.currentVersionOrNull(folder, agent);
      version = (await this.pickVersion(folder, agent, `Rollout Lab: Rollouts of a ${agent} prompt version`, current, { withRestore: false }))?.version;
      if (!version) return undefined;
    }
    const lab = await this.ctx.lab.lab(folder);
    const store = lab.store;
    const { rollouts, total } = store.listRollouts({ agent, promptVersion: version, sort: 'startTime', order: 'desc', limit: MAX_LISTED });
    const s = await this.index.agentStats(folder, agent);
    const stats = s.stats.find((x) => x.version === version) ?? null;
    const statsButton: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('graph'), tooltip: 'Reward statistics of this version' };
    const compareButton: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('git-compare'), tooltip: 'Compare this version with the current prompt' };
    const qp = vscode.window.createQuickPick<ReturnType<typeof rolloutPickRows>[number]>();
    qp.title = `${agent} ${shortHash(version)}${s.best?.version === version ? ' (best)' : ''}: ${total > rollouts.length ? `newest ${rollouts.length} of ` : ''}${total} rollout${total === 1 ? '' : 's'} · reward ${compactStats(stats)}`;
    qp.placeholder = total ? 'Pick a rollout to open it in the Trace Explorer' : 'No rollouts have run this version';
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    qp.buttons = [statsButton, compareButton];
    qp.items = rolloutPickRows(rollouts, Date.now(), decisionLabelsOf(lab.loaded.config));
    const ref: PromptVersionRef = { folder, agent, version };
    const picked = await new Promise<string | undefined>((resolve) => {
      let id: string | undefined;
      qp.onDidAccept(() => {
        id = qp.selectedItems[0]?.rolloutId;
        qp.hide();
      });
      qp.onDidTriggerButton((b) => {
        qp.hide();
        if (b === statsButton) void this.openStats(ref);
        else void vscode.commands.executeCommand('rolloutLab.comparePromptWithVersion', ref);
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve(id);
      });
      qp.show();
    });
    if (!picked) return undefined;
    this.ctx.lab.setActiveFolder(folder);
    this.ctx.panels().showTrace(picked);
    return picked;
  }

  /** The version's statistics as a Markdown preview (plain text where no preview is available). */
  private async openStats(ref: PromptVersionRef): Promise<void> {
    const uri = promptDocUri({ ...ref, what: 'stats' });
    try {
      await vscode.commands.executeCommand('markdown.showPreview', uri);
    } catch {
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: true });
    }
  }

  private async currentVersionOrNull(folder: string, agent: string): Promise<string | null> {
    try {
      return (await this.index.currentTarget(folder, agent)).version;
    } catch {
      return null;
    }
  }

  /** "Compare with Version…": the diff editor between a stored version and the prompt as it is now, with both sides' statistics in the title. */
  async compareWithVersion(arg: unknown): Promise<string | undefined> {
    const who = await this.resolveAgent(arg, 'Compare with Version…');
    if (!who) return undefined;
    const { folder, agent } = who;
    const current = await this.index.currentTarget(folder, agent);
    let version = who.version;
    if (!version) {
      const picked = await this.pickVersion(folder, agent, `Rollout Lab: Compare ${agent}'s prompt with a version`, current.version, { withRestore: true, currentLast: true });
      if (!picked) return undefined;
      if (picked.restore) {
        await this.restore(folder, agent, picked.version, true);
        return undefined;
      }
      version = picked.version;
    }
    await this.requireStored(folder, version);
    const s = await this.index.agentStats(folder, agent);
    const title = promptDiffTitle(agent, version, s.stats.find((x) => x.version === version) ?? null, s.stats.find((x) => x.version === current.version) ?? null);
    const left = promptDocUri({ folder, agent, version, what: 'text' });
    const right = current.kind === 'file' ? current.uri : promptDocUri({ folder, agent, version: 'current', what: 'text' });
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false });
    return title;
  }

  /**
   * "Diff a Rollout with the Previous Version…": the trace diff of one task
   * run under a prompt version (by default the newest) and the version stored
   * before it. Takes `{folder?, agent, version?}` or a prompt file.
   */
  async diffRolloutWithPreviousVersion(arg: unknown): Promise<{ left: string; right: string } | undefined> {
    const who = await this.resolveAgent(arg, 'Diff a Rollout with the Previous Version');
    if (!who) return undefined;
    return diffWithPreviousPromptVersion(this.ctx, who);
  }

  /** "Restore This Version": from the diff editor's title bar, the version picker, or an argument object. */
  async restoreVersion(arg: unknown): Promise<PromptVersionRef | undefined> {
    const fromDiff = !isPlainObject(arg) && !(arg instanceof vscode.Uri && arg.scheme === PROMPT_VERSION_SCHEME) ? this.activeDiff() : undefined;
    let who: { folder: string; agent: string; version?: string } | undefined = fromDiff ?? (await this.resolveAgent(arg, 'Restore This Version'));
    if (!who) return undefined;
    if (!who.version) {
      const current = await this.currentVersionOrNull(who.folder, who.agent);
      const picked = await this.pickVersion(who.folder, who.agent, `Rollout Lab: Restore a version of ${who.agent}'s prompt`, current, { withRestore: false, currentLast: true });
      if (!picked) return undefined;
      who = { ...who, version: picked.version };
    }
    const done = await this.restore(who.folder, who.agent, who.version!, !isPlainObject(arg));
    return done ? { folder: who.folder, agent: who.agent, version: who.version! } : undefined;
  }

  private async requireStored(folder: string, version: string): Promise<string> {
    const stored = (await this.ctx.lab.store(folder)).getPromptVersion(version);
    if (!stored) throw new Error(`prompt version ${version} is not in the store of ${folder} — pick one with "Compare with Version…"`);
    return stored.text;
  }

  /**
   * Puts a stored version's text back as the agent's prompt (its file, or its
   * inline promptText) with one undoable edit, then saves. Asked first, when
   * interactive, if the text it replaces is not stored anywhere.
   */
  private async restore(folder: string, agent: string, version: string, interactive: boolean): Promise<boolean> {
    const text = await this.requireStored(folder, version);
    const current = await this.index.currentTarget(folder, agent);
    if (current.version === version) {
      if (interactive) void vscode.window.showInformationMessage(`Rollout Lab: ${agent}'s prompt already is version ${shortHash(version)}.`);
      return true;
    }
    if (interactive && !(await this.ctx.lab.store(folder)).getPromptVersion(current.version)) {
      const ok = await vscode.window.showWarningMessage(
        `Replace ${agent}'s prompt with version ${shortHash(version)}? Its current text has never run, so the store does not keep it; Undo brings it back.`,
        { modal: true },
        'Restore',
      );
      if (ok !== 'Restore') return false;
    }
    const doc = await vscode.workspace.openTextDocument(current.uri);
    const edit = new vscode.WorkspaceEdit();
    for (const e of this.restoreEdits(doc, current, text)) edit.replace(doc.uri, e.range, e.text);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not edit ${doc.uri.fsPath} — is it read-only?`);
    if (!(await doc.save())) throw new Error(`restored version ${shortHash(version)} in ${doc.uri.fsPath} but could not save it — save it yourself`);
    this.ctx.log(`restored ${agent}'s prompt to version ${version} in ${doc.uri.fsPath}`);
    return true;
  }

  private restoreEdits(doc: vscode.TextDocument, current: PromptTarget, text: string): Array<{ range: vscode.Range; text: string }> {
    if (current.kind === 'file') return [{ range: new vscode.Range(0, 0, doc.lineCount, 0), text }];
    const editor = vscode.window.visibleTextEditors.find((e) => e.document === doc);
    const tabSize = typeof editor?.options.tabSize === 'number' ? editor.options.tabSize : 2;
    const insertSpaces = typeof editor?.options.insertSpaces === 'boolean' ? editor.options.insertSpaces : true;
    const eol = doc.eol === vscode.EndOfLine.CRLF ? '\r\n' : '\n';
    return setInlinePromptEdits(doc.getText(), current.agent, text, { tabSize, insertSpaces, eol }).map((e) => ({
      range: new vscode.Range(doc.positionAt(e.offset), doc.positionAt(e.offset + e.length)),
      text: e.content,
    }));
  }
}
