import assert from 'node:assert/strict';
import { join } from 'node:path';
import { applyEdits, modify } from 'jsonc-parser';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { promptHash } from '../../../src/core/config/loader';
import { findInlinePrompts } from '../../../src/extension/promptHistory/inlinePrompt';
import { api, waitFor, workspaceDir, type RunSummaryLike } from './helpers';

async function lensTitles(uri: vscode.Uri, line?: number): Promise<string[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)) ?? [];
  return lenses
    .filter((l) => line === undefined || l.range.start.line === line)
    .map((l) => l.command?.title ?? '')
    .filter((t) => t !== '');
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

/** Makes an agent's prompt inline in lab.json (its "prompt" file setting removed) and saves, as a user would. */
async function setInlinePrompt(labDoc: vscode.TextDocument, agent: string, prompt: string): Promise<void> {
  const fmt = { formattingOptions: { insertSpaces: true, tabSize: 2 } };
  let text = labDoc.getText();
  text = applyEdits(text, modify(text, ['agents', agent, 'prompt'], undefined, fmt));
  text = applyEdits(text, modify(text, ['agents', agent, 'promptText'], prompt, fmt));
  await replaceText(labDoc, text);
  assert.ok(await labDoc.save(), 'lab.json saved');
}

/** The line of an agent's `"promptText"` key in the editor's lab.json. */
function promptTextLine(labDoc: vscode.TextDocument, agent: string): number {
  const p = findInlinePrompts(labDoc.getText()).find((x) => x.agent === agent);
  assert.ok(p, `agents.${agent}.promptText in lab.json`);
  return labDoc.positionAt(p.keyOffset).line;
}

/** The rollout count the first lens shows (0 for "no rollouts yet"), or undefined while there is no lens. */
function countOf(titles: string[]): number | undefined {
  const first = titles.find((t) => /rollouts? · reward|no rollouts yet/.test(t));
  if (!first) return undefined;
  const m = /^(\d+) rollouts? · reward/.exec(first);
  return m ? Number(m[1]) : 0;
}

describe('prompt reward annotations', () => {
  it('a prompt file shows a CodeLens with its version\'s rollouts and reward, and "no rollouts yet" once edited', async () => {
    await api();
    const uri = vscode.Uri.file(join(workspaceDir(), '.rollout-lab', 'prompts', 'Supervisor.md'));
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const before = await waitFor('a reward lens on Supervisor.md', async () => countOf(await lensTitles(uri)));

    const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 2 });
    assert.equal(r.succeeded, 2, `the run failed: ${JSON.stringify(r)}`);
    const expected = before + 2;
    const titles = await waitFor(`a lens saying "${expected} rollouts"`, async () => {
      const t = await lensTitles(uri);
      return countOf(t) === expected ? t : undefined;
    });
    const main = titles.find((t) => t.startsWith(`${expected} rollouts`))!;
    assert.match(main, /reward \d\.\d\d/);
    assert.match(main, /last run /);

    const hover = (await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, new vscode.Position(0, 0))) ?? [];
    const hoverText = hover.flatMap((h) => h.contents.map((c) => (typeof c === 'string' ? c : c.value))).join('\n');
    assert.match(hoverText, /prompt version `[0-9a-f]{7}`/);

    const original = doc.getText();
    try {
      const edit = new vscode.WorkspaceEdit();
      edit.insert(uri, new vscode.Position(0, 0), 'An unsaved edit for the prompt-lens test.\n');
      assert.ok(await vscode.workspace.applyEdit(edit));
      const edited = await waitFor('the lens of the edited text', async () => {
        const t = await lensTitles(uri);
        return t.some((x) => x.includes('no rollouts yet')) ? t : undefined;
      });
      assert.ok(edited.some((x) => x.startsWith('new version: no rollouts yet')), edited.join(' | '));
    } finally {
      const undo = new vscode.WorkspaceEdit();
      undo.replace(uri, new vscode.Range(0, 0, doc.lineCount, 0), original);
      await vscode.workspace.applyEdit(undo);
      await vscode.commands.executeCommand('workbench.action.files.revert');
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
    }
  });

  it('an inline promptText in lab.json gets the same lens and hover above it, updated as it is typed', async () => {
    await api();
    const labUri = vscode.Uri.file(join(workspaceDir(), '.rollout-lab', 'lab.json'));
    const labDoc = await vscode.workspace.openTextDocument(labUri);
    await vscode.window.showTextDocument(labDoc);
    const original = labDoc.getText();
    const prompt = 'You are the Geneticist of a research lab (inline prompt of the lens test).\nAnswer with evidence from the abstracts.';
    const version = promptHash(prompt);
    try {
      await setInlinePrompt(labDoc, 'Geneticist', prompt);
      const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 2 });
      assert.equal(r.succeeded, 2, `the run failed: ${JSON.stringify(r)}`);

      const line = promptTextLine(labDoc, 'Geneticist');
      const titles = await waitFor('a lens saying "2 rollouts" above "promptText"', async () => {
        const t = await lensTitles(labUri, line);
        return countOf(t) === 2 ? t : undefined;
      });
      assert.match(titles.find((t) => t.startsWith('2 rollouts'))!, /^2 rollouts · reward (\d\.\d\d|n\/a).* · last run /);
      const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', labUri)) ?? [];
      const main = lenses.find((l) => l.range.start.line === line && l.command?.title.startsWith('2 rollouts'))!;
      assert.equal(main.command?.command, 'rolloutLab.showPromptVersionRollouts');
      assert.deepEqual(main.command?.arguments, [{ folder: workspaceDir(), agent: 'Geneticist', version }]);
      assert.equal(lenses.filter((l) => l.range.start.line !== line).length, 0, 'no lens away from the inline prompt');

      const hover = await hoverText(labUri, new vscode.Position(line, 6));
      assert.match(hover, new RegExp(`\\*\\*Geneticist\\*\\* prompt version \`${version.slice(0, 7)}\` — 2 rollouts`));
      assert.match(hover, /command:rolloutLab\.showPromptVersionRollouts\?/);

      // Typing in the inline prompt (unsaved) makes it a new version at once.
      const p = findInlinePrompts(labDoc.getText()).find((x) => x.agent === 'Geneticist')!;
      const edit = new vscode.WorkspaceEdit();
      edit.insert(labUri, labDoc.positionAt(p.valueOffset + 1), 'Be brief. ');
      assert.ok(await vscode.workspace.applyEdit(edit));
      await waitFor('the lens of the edited inline prompt', async () => (await lensTitles(labUri, line)).some((t) => t.startsWith('new version: no rollouts yet')));
    } finally {
      await replaceText(labDoc, original);
      await labDoc.save();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it("draws the hover's reward sparkline in the colours of the active theme, dark and light", async function () {
    this.timeout(120_000);
    await api();
    const uri = vscode.Uri.file(join(workspaceDir(), '.rollout-lab', 'prompts', 'Supervisor.md'));
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 1 });
    assert.equal(r.succeeded, 1);
    const workbench = vscode.workspace.getConfiguration('workbench');
    const original = workbench.inspect<string>('colorTheme')?.globalValue;
    /** The sparkline image's stroke and dot colours, read from the SVG in the hover. */
    const sparkColours = async (): Promise<{ line: string; dot: string }> =>
      waitFor('a sparkline image in the hover', async () => {
        const m = /\(data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)\)/.exec(await hoverText(uri, new vscode.Position(0, 0)));
        if (!m) return undefined;
        const svg = Buffer.from(m[1]!, 'base64').toString('utf8');
        return { line: /<polyline[^>]*stroke="(#[0-9a-f]{6})"/.exec(svg)![1]!, dot: /<circle[^>]*fill="(#[0-9a-f]{6})"/.exec(svg)![1]! };
      });
    try {
      const seen: Record<string, { line: string; dot: string }> = {};
      for (const [theme, kind] of [
        ['Default Dark Modern', vscode.ColorThemeKind.Dark],
        ['Default Light Modern', vscode.ColorThemeKind.Light],
      ] as const) {
        await workbench.update('colorTheme', theme, vscode.ConfigurationTarget.Global);
        await waitFor(`the ${theme} theme`, () => vscode.window.activeColorTheme.kind === kind);
        seen[theme] = await sparkColours();
      }
      const dark = seen['Default Dark Modern']!;
      const light = seen['Default Light Modern']!;
      assert.notDeepEqual(dark, light, 'the colours follow the theme');
      // Light ink on the dark hover (#202020), dark ink on the light one (#f8f8f8).
      const luminance = (hex: string): number => [1, 3, 5].reduce((sum, i, k) => sum + [0.2126, 0.7152, 0.0722][k]! * (parseInt(hex.slice(i, i + 2), 16) / 255), 0);
      assert.ok(luminance(dark.dot) > 0.6 && luminance(dark.line) > 0.45, `dark theme: ${JSON.stringify(dark)}`);
      assert.ok(luminance(light.dot) < 0.3 && luminance(light.line) < 0.45, `light theme: ${JSON.stringify(light)}`);
    } finally {
      await workbench.update('colorTheme', original, vscode.ConfigurationTarget.Global);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });
});
