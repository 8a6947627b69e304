import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { extension, waitFor, workspaceDir } from './helpers';
import { recordMetric } from './results';

/** Every command the extension contributes; the palette titles are checked by the UI tests. */
export const COMMANDS = [
  'rolloutLab.initialize',
  'rolloutLab.runRollouts',
  'rolloutLab.evaluate',
  'rolloutLab.runOnWorkers',
  'rolloutLab.openTraceExplorer',
  'rolloutLab.openGraphView',
  'rolloutLab.openRewardCurve',
  'rolloutLab.startSimulatedEndpoint',
  'rolloutLab.stopSimulatedEndpoint',
  'rolloutLab.setApiKey',
  'rolloutLab.refreshRollouts',
  'rolloutLab.filterRollouts',
  'rolloutLab.clearRolloutFilters',
];

describe('activation', () => {
  it('activates by itself in a workspace that has .rollout-lab/lab.json', async () => {
    const ext = extension();
    // No command runs first: workspaceContains:.rollout-lab/lab.json must be what activates it.
    await waitFor('the extension to activate on workspaceContains', () => ext.isActive);
    const exports = ext.exports;
    assert.ok(exports, 'activate() must return the RolloutLabApi');
    assert.equal(typeof exports.activationMs, 'number', 'RolloutLabApi.activationMs');
    recordMetric('activationMs', Math.round(exports.activationMs * 10) / 10);
  });

  it('sets rolloutLab.hasLab on activation, so the palette offers the commands that need a lab', async () => {
    await waitFor('rolloutLab.hasLab', () => extension().exports.contextKey('rolloutLab.hasLab'));
  });

  it('does not open the lab (store, graph runner) while activating', () => {
    const service = extension().exports.service as { openedStore?(folder: string): unknown };
    assert.equal(typeof service?.openedStore, 'function', 'RolloutLabApi.service.openedStore(folder)');
    // Nothing has asked for rollouts yet (the view is not shown): the lab, its store and sql.js stay unloaded.
    assert.equal(service.openedStore!(workspaceDir()), undefined, 'the lab was opened during activation');
  });

  it('registers every command', async () => {
    const all = new Set(await vscode.commands.getCommands(true));
    const missing = COMMANDS.filter((c) => !all.has(c));
    assert.deepEqual(missing, [], `commands not registered: ${missing.join(', ')}`);
  });

  it('contributes the Rollout Lab view container and the rollouts view', () => {
    const pkg = extension().packageJSON as {
      contributes?: { viewsContainers?: { activitybar?: Array<{ id: string }> }; views?: Record<string, Array<{ id: string }>> };
    };
    assert.ok(pkg.contributes?.viewsContainers?.activitybar?.some((c) => c.id === 'rolloutLab'), 'activity bar container "rolloutLab"');
    assert.ok(pkg.contributes?.views?.rolloutLab?.some((v) => v.id === 'rolloutLab.rollouts'), 'view "rolloutLab.rollouts" in it');
  });
});
