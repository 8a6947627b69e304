import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { promptHash } from '../../../src/core/config/loader';
import { findInlinePrompts } from '../../../src/extension/promptHistory/inlinePrompt';
import { api, waitFor, workspaceDir, type PanelHostLike, type RolloutLabApiLike, type RunSummaryLike } from './helpers';

/** The part of the API these tests add to the suite's contract: what the prompt markers decorate. */
interface MarkerLike {
  kind: 'added' | 'modified' | 'deleted';
  startLine: number;
  endLine: number;
}
interface ApiWithPrompts extends RolloutLabApiLike {
  prompts: { markers(uri: vscode.Uri): readonly MarkerLike[]; markedEditors(uri: vscode.Uri): ReadonlyArray<{ viewColumn: vscode.ViewColumn | undefined; inDiff: boolean }> };
}

async function promptApi(): Promise<ApiWithPrompts> {
  const a = (await api()) as ApiWithPrompts;
  assert.equal(typeof a.prompts?.markers, 'function', 'RolloutLabApi.prompts.markers(uri)');
  return a;
}

const SCHEME = 'rollout-lab-prompt';

function supervisorUri(): vscode.Uri {
  return vscode.Uri.file(join(workspaceDir(), '.rollout-lab', 'prompts', 'Supervisor.md'));
}

function labUri(): vscode.Uri {
  return vscode.Uri.file(join(workspaceDir(), '.rollout-lab', 'lab.json'));
}

async function lensTitles(uri: vscode.Uri, line?: number): Promise<string[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)) ?? [];
  return lenses
    .filter((l) => line === undefined || l.range.start.line === line)
    .map((l) => l.command?.title ?? '')
    .filter((t) => t !== '');
}

/** The rollout count the first lens shows (0 for "no rollouts yet"), or undefined while there is none. */
function countOf(titles: string[]): number | undefined {
  const first = titles.find((t) => /rollouts? · reward|no rollouts yet/.test(t));
  if (!first) return undefined;
  const m = /^(\d+) rollouts? · reward/.exec(first);
  return m ? Number(m[1]) : 0;
}

async function hoverText(uri: vscode.Uri, position: vscode.Position): Promise<string> {
  const hovers = (await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, position)) ?? [];
  return hovers.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
}

async function replaceText(doc: vscode.TextDocument, text: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), text);
  assert.ok(await vscode.workspace.applyEdit(edit), `could not edit ${doc.uri.fsPath}`);
}

async function run(limit: number): Promise<void> {
  const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit });
  assert.equal(r.succeeded, limit, `the run failed: ${JSON.stringify(r)}`);
}

/** Makes an agent's prompt inline in lab.json (its "prompt" file setting removed) and saves. */
async function setInlinePrompt(labDoc: vscode.TextDocument, agent: string, prompt: string): Promise<void> {
  const fmt = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
  let text = labDoc.getText();
  text = applyEdits(text, modify(text, ['agents', agent, 'prompt'], undefined, fmt));
  text = applyEdits(text, modify(text, ['agents', agent, 'promptText'], prompt, fmt));
  await replaceText(labDoc, text);
  const saved = await labDoc.save();
  assert.ok(saved, `lab.json saved (dirty ${labDoc.isDirty}, closed ${labDoc.isClosed}, disk ${readFileSync(labDoc.uri.fsPath, 'utf8') === labDoc.getText() ? 'same' : 'differs'})`);
}

function diffTabs(): Array<{ tab: vscode.Tab; input: vscode.TabInputTextDiff }> {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t): t is vscode.Tab & { input: vscode.TabInputTextDiff } => t.input instanceof vscode.TabInputTextDiff && t.input.original.scheme === SCHEME)
    .map((tab) => ({ tab, input: tab.input }));
}

describe('prompt history', () => {
  it('marks the lines that differ from the best version while the prompt is edited, with a hover that links to the diff', async () => {
    const a = await promptApi();
    const uri = supervisorUri();
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    // Three rewards make the saved text eligible as the best version (the only one with that many).
    await run(3);
    const original = doc.getText();
    try {
      await waitFor('the lens after the run', async () => (countOf(await lensTitles(uri)) ?? 0) >= 3);
      assert.deepEqual(a.prompts.markers(uri), [], 'no marker while the text is the best version');

      const edit = new vscode.WorkspaceEdit();
      edit.insert(uri, new vscode.Position(2, 0), 'A line the best version does not have.\n');
      assert.ok(await vscode.workspace.applyEdit(edit));
      const marked = await waitFor('a marker on the inserted line', () => {
        const m = a.prompts.markers(uri);
        return m.length > 0 ? m : undefined;
      });
      assert.deepEqual(marked, [{ kind: 'added', startLine: 2, endLine: 2 }]);

      const hover = await hoverText(uri, new vscode.Position(2, 3));
      assert.match(hover, /Differs from best version `[0-9a-f]{7}` \(mean \d\\\.\d\d/);
      assert.match(hover, /\(command:rolloutLab\.comparePromptWithVersion\?/);
      assert.doesNotMatch(await hoverText(uri, new vscode.Position(3, 0)), /Differs from best version/, 'an unchanged line has no marker hover');
      await replaceText(doc, original);
      await waitFor('the marker to go once the text is the best version again', () => a.prompts.markers(uri).length === 0);
    } finally {
      if (doc.getText() !== original) await replaceText(doc, original);
      // Saving the saved text again leaves the file as it was and the editor clean for the next test.
      await doc.save();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it('Compare with Version… opens a diff titled with both versions\' statistics; Restore This Version in it puts the old text back', async () => {
    await promptApi();
    const uri = supervisorUri();
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const original = doc.getText();
    const originalVersion = promptHash(original);
    const before = await waitFor('the lens of the saved prompt', async () => countOf(await lensTitles(uri)));
    assert.ok(before > 0, 'the saved prompt has rollouts (the suite ran some)');
    try {
      // A second version: saved, and run once.
      await replaceText(doc, `${original.trimEnd()}\n\nAlways name the single largest risk.\n`);
      assert.ok(await doc.save());
      await run(1);
      await waitFor('the lens of the new version', async () => countOf(await lensTitles(uri)) === 1);

      // Without a version, the picker's default (Enter) is the previous version — never the current text against itself.
      const a = await promptApi();
      const picking = Promise.resolve(vscode.commands.executeCommand<string | undefined>('rolloutLab.comparePromptWithVersion', { agent: 'Supervisor' }));
      let picked: string | undefined;
      for (let i = 0; i < 40 && picked === undefined; i++) {
        await new Promise((r) => setTimeout(r, 250));
        await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
        picked = await Promise.race([picking, new Promise<undefined>((r) => setTimeout(() => r(undefined), 50))]);
      }
      assert.ok(picked, 'the picker was answered');
      assert.match(picked, new RegExp(`^Supervisor ${originalVersion.slice(0, 7)} \\(`), `the default is the previous version, got "${picked}"`);
      // The current text differs from the best version (the original): its editor is marked, the diff editor's sides are not.
      const diff = await waitFor('the default diff', () => diffTabs()[0]);
      await waitFor('markers for the current text', () => a.prompts.markers(uri).length > 0);
      await new Promise((r) => setTimeout(r, 1000));
      assert.ok(diff.tab.isActive);
      assert.deepEqual(a.prompts.markedEditors(uri), [], 'no "differs from best" marker inside the diff editor (the only editor on the file)');
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      // The file's own editor is marked (so the check above is not empty by accident).
      await vscode.window.showTextDocument(doc);
      await waitFor('the marker in the plain editor', () => a.prompts.markedEditors(uri).length === 1);

      const title = await vscode.commands.executeCommand<string>('rolloutLab.comparePromptWithVersion', { agent: 'Supervisor', version: originalVersion });
      const { tab, input } = await waitFor('a diff editor against the stored version', () => diffTabs()[0]);
      assert.equal(tab.label, title);
      assert.match(tab.label, new RegExp(`^Supervisor ${originalVersion.slice(0, 7)} \\(\\d\\.\\d\\d( ± \\d\\.\\d\\d)?, n=${before}\\) ↔ current \\((\\d\\.\\d\\d|n/a), n=1\\)$`));
      assert.equal(input.modified.toString(), uri.toString(), 'the current prompt file on the right, editable');
      assert.equal((await vscode.workspace.openTextDocument(input.original)).getText(), original, 'the stored text on the left');

      // The title-bar button passes no version: the active diff editor says which.
      assert.ok(vscode.window.tabGroups.activeTabGroup.activeTab?.input instanceof vscode.TabInputTextDiff, 'the diff editor is active');
      await vscode.commands.executeCommand('rolloutLab.restorePromptVersion');
      assert.equal(doc.getText(), original);
      assert.equal(doc.isDirty, false, 'restored and saved');
      assert.equal(readFileSync(uri.fsPath, 'utf8'), original);
      await waitFor(`the lens to show the restored version's ${before} rollouts`, async () => countOf(await lensTitles(uri)) === before);

      // Undo brings the replaced text back.
      await vscode.window.showTextDocument(doc);
      await vscode.commands.executeCommand('undo');
      assert.match(doc.getText(), /Always name the single largest risk\./);
    } finally {
      if (doc.getText() !== original) {
        await replaceText(doc, original);
        await doc.save();
      }
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it('Show Rollouts of This Prompt Version lists the version\'s rollouts; picking one opens it in the Trace Explorer', async () => {
    const a = await promptApi();
    const version = promptHash(readFileSync(supervisorUri().fsPath, 'utf8'));
    const pending = vscode.commands.executeCommand<string | undefined>('rolloutLab.showPromptVersionRollouts', { agent: 'Supervisor', version });
    let settled = false;
    let picked: string | undefined;
    pending.then(
      (id) => {
        picked = id;
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    // The picker opens with the newest rollout active; Enter takes it.
    await waitFor('the picker to take a rollout', async () => {
      if (!settled) await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      return settled;
    });
    assert.match(picked ?? '', /^[0-9a-f]{32}$/, `the command returned ${picked}`);
    const host = await waitFor<PanelHostLike>('the Trace Explorer', () => a.panels.get('traceExplorer'));
    const t = (await host.handle('trace/get', { rolloutId: picked })) as { rollout: { agents: Array<{ agent: string; promptVersion: string | null }> } };
    assert.ok(
      t.rollout.agents.some((x) => x.agent === 'Supervisor' && x.promptVersion === version),
      `the picked rollout ran Supervisor version ${version}: ${JSON.stringify(t.rollout.agents)}`,
    );
    await assert.rejects(
      async () => vscode.commands.executeCommand('rolloutLab.showPromptVersionRollouts', { agent: 'Supervisor', version: 'not-a-hash' }),
      /version: a prompt version is 12 hex digits/,
    );
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Restore This Version puts an inline promptText back in lab.json, and Compare shows it against the current inline text', async () => {
    await promptApi();
    const labDoc = await vscode.workspace.openTextDocument(labUri());
    await vscode.window.showTextDocument(labDoc);
    const original = labDoc.getText();
    const first = 'You are the Geneticist (inline, version one). Cite the abstracts.';
    const version = promptHash(first);
    try {
      await setInlinePrompt(labDoc, 'Geneticist', first);
      await run(1);
      await setInlinePrompt(labDoc, 'Geneticist', 'You are the Geneticist (inline, version two).');

      const restored = await vscode.commands.executeCommand('rolloutLab.restorePromptVersion', { agent: 'Geneticist', version });
      assert.deepEqual(restored, { folder: workspaceDir(), agent: 'Geneticist', version });
      assert.equal(findInlinePrompts(labDoc.getText()).find((p) => p.agent === 'Geneticist')?.text, first);
      assert.equal(labDoc.isDirty, false, 'lab.json saved');
      assert.equal(findInlinePrompts(readFileSync(labUri().fsPath, 'utf8')).find((p) => p.agent === 'Geneticist')?.text, first);
      const line = labDoc.positionAt(findInlinePrompts(labDoc.getText()).find((p) => p.agent === 'Geneticist')!.keyOffset).line;
      await waitFor('the inline lens to show the restored version', async () => countOf(await lensTitles(labUri(), line)) === 1);

      const title = await vscode.commands.executeCommand<string>('rolloutLab.comparePromptWithVersion', { agent: 'Geneticist', version });
      assert.match(title, new RegExp(`^Geneticist ${version.slice(0, 7)} \\(.*n=1\\) ↔ current \\(.*n=1\\)$`));
      const { input } = await waitFor('a diff editor for the inline prompt', () => diffTabs().find((d) => d.tab.label === title));
      assert.equal(input.modified.scheme, SCHEME, 'an inline prompt is compared as its own text, not the whole lab.json');
      assert.equal((await vscode.workspace.openTextDocument(input.modified)).getText(), first);
    } finally {
      await replaceText(labDoc, original);
      await labDoc.save();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });
});
