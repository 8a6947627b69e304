import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PANEL_CATALOGUE, panelAnswers, panelRuns } from '../../../src/shared/panelCatalogue';
import { parsePanelState } from '../../../src/shared/panelState';
import { CommandArgs, PanelKind, RequestParams, type CommandName, type RequestMethod } from '../../../src/shared/protocol';

describe('panel catalogue', () => {
  it('gives every request and command of the message catalogue to some panel, and every panel only known ones', () => {
    const requests = new Set<string>(Object.values(PANEL_CATALOGUE).flatMap((p) => p.requests));
    const commands = new Set<string>(Object.values(PANEL_CATALOGUE).flatMap((p) => p.commands));
    assert.deepEqual([...requests].sort(), Object.keys(RequestParams).sort());
    assert.deepEqual([...commands].sort(), Object.keys(CommandArgs).sort());
    assert.deepEqual(Object.keys(PANEL_CATALOGUE).sort(), [...PanelKind.options].sort());
  });

  it('scopes methods to their panels', () => {
    assert.ok(panelAnswers('traceExplorer', 'trace/get'));
    assert.ok(!panelAnswers('traceExplorer', 'weights/get' as RequestMethod));
    assert.ok(panelAnswers('rewardWeights', 'runs/list') && panelAnswers('graphView', 'runs/list'));
    assert.ok(panelRuns('trainingCurves', 'job/showLog'));
    assert.ok(!panelRuns('traceExplorer', 'job/showLog' as CommandName));
  });
});

describe('panel state', () => {
  it('is {} for nothing saved', () => {
    assert.deepEqual(parsePanelState('evalReport', undefined), {});
    assert.deepEqual(parsePanelState('evalReport', null), {});
    assert.deepEqual(parsePanelState('evalReport', ['runId']), {});
  });

  it('keeps the fields that fit, drops those that do not and those of no panel', () => {
    const rollout = 'a'.repeat(32);
    assert.deepEqual(parsePanelState('traceExplorer', { rolloutId: rollout, node: 'Supervisor', collapsed: ['x', 'y'], search: 7, other: 1, intents: { 'trace/show': 'k1' } }), {
      rolloutId: rollout,
      node: 'Supervisor',
      collapsed: ['x', 'y'],
      intents: { 'trace/show': 'k1' },
    });
    assert.deepEqual(parsePanelState('traceExplorer', { rolloutId: '<img>' }), {});
    assert.deepEqual(parsePanelState('rewardCurve', { window: 0, view: 'versions', table: 'yes', criteria: ['a'] }), { view: 'versions', criteria: ['a'] });
    assert.deepEqual(parsePanelState('trainingCurves', { jobId: 'sft-1', folder: '/w' }), { jobId: 'sft-1', folder: '/w' });
    assert.deepEqual(parsePanelState('rewardWeights', { draft: { criteria: [{ key: 'k', name: 'n' }], air: [] } }), {});
  });
});
