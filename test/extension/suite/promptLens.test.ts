import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, waitFor, workspaceDir, type RunSummaryLike } from './helpers';

async function lensTitles(uri: vscode.Uri): Promise<string[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri)) ?? [];
  return lenses.map((l) => l.command?.title ?? '').filter((t) => t !== '');
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
});
