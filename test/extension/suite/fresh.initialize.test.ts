import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { answerEveryPicker, extension, waitFor, workspaceDir, type RunSummaryLike } from './helpers';
import { recordMetric } from './results';

/** The palette's when clause of each contributed command (package.json's menus.commandPalette), for the commands that need a lab. */
function labOnlyCommands(): string[] {
  const pkg = extension().packageJSON as { contributes: { menus: { commandPalette: Array<{ command: string; when?: string }> } } };
  return pkg.contributes.menus.commandPalette.filter((e) => (e.when ?? '').split('&&').some((t) => t.trim() === 'rolloutLab.hasLab')).map((e) => e.command);
}

describe('first use in an empty folder', () => {
  it('stays inactive until a command needs it', () => {
    assert.equal(extension().isActive, false, 'nothing in an empty folder should activate Rollout Lab');
  });

  it('Get Started opens the walkthrough; the palette hides the lab\'s commands while no lab exists', async () => {
    // The commands that need a lab are behind rolloutLab.hasLab, which nothing has set yet (the extension is not even active).
    assert.ok(labOnlyCommands().includes('rolloutLab.runRollouts'));
    await vscode.commands.executeCommand('rolloutLab.openWalkthrough');
    const exports = extension().exports;
    assert.equal(exports.contextKey('rolloutLab.hasLab'), false, 'activated in a folder without lab.json: hasLab is false');
    assert.equal(exports.contextKey('rolloutLab.hasRollouts'), undefined);
    const tab = await waitFor('the walkthrough in an editor', () => {
      const t = vscode.window.tabGroups.activeTabGroup.activeTab;
      return t && /welcome|walkthrough|get started/i.test(t.label) ? t : undefined;
    });
    assert.ok(tab.label);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Initialize Lab creates lab.json, the prompts and the tool tables', async () => {
    const dir = workspaceDir();
    assert.equal(existsSync(join(dir, '.rollout-lab')), false);
    await vscode.commands.executeCommand('rolloutLab.initialize');
    const lab = join(dir, '.rollout-lab');
    const config = JSON.parse(readFileSync(join(lab, 'lab.json'), 'utf8')) as { version: number; agents: Record<string, unknown>; datasets: Record<string, { path: string }> };
    assert.equal(config.version, 1);
    assert.ok(Object.keys(config.agents).length >= 9, 'the research-lab agents');
    const prompts = readdirSync(join(lab, 'prompts')).filter((f) => f.endsWith('.md'));
    assert.equal(prompts.length, Object.keys(config.agents).length, 'one prompt file per agent');
    for (const f of ['data/proteins.json', 'data/gene_ontology.json', '.gitignore']) assert.ok(existsSync(join(lab, f)), f);
    // Nothing beside the folder: the lab gets the bundled PubMedQA sample, copied into it.
    assert.deepEqual(Object.keys(config.datasets), ['pubmedqa-sample']);
    assert.ok(existsSync(join(dir, config.datasets['pubmedqa-sample']!.path)), 'the sample is in the lab');
    const ext = extension();
    assert.equal(ext.isActive, true);
    assert.equal(ext.exports.contextKey('rolloutLab.hasLab'), true, 'the palette now offers the lab\'s commands');
    if (typeof ext.exports?.activationMs === 'number') recordMetric('activationMs (first command, empty folder)', Math.round(ext.exports.activationMs * 10) / 10);
    // The command opens lab.json for editing.
    await waitFor('lab.json to open in an editor', () => vscode.window.activeTextEditor?.document.uri.fsPath.endsWith(join('.rollout-lab', 'lab.json')));
  });

  it('Run Rollouts offers the sample first: Enter on every picker runs 10 training rollouts on it', async function () {
    this.timeout(180_000);
    // Before the sample, the only item was Browse… (a file dialog): Enter would have run nothing.
    const r = await answerEveryPicker(() => vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts'));
    assert.ok(r, 'Run Rollouts asked and ran');
    assert.equal(r.rollouts, 10);
    assert.equal(r.succeeded, 10);
  });
});
