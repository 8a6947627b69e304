import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { RolloutRecord, RunRecord } from '../../../src/core/store/types';
import { duration as formatDuration } from '../../../src/core/analysis/numberFormat';
import {
  escapeMarkdown,
  progressMessage,
  rolloutDescription,
  rolloutIcon,
  rolloutTooltipMarkdown,
  runDescription,
  runLabel,
  statusIcon,
  summariseRollouts,
} from '../../../src/extension/view/rolloutPresentation';

function rollout(p: Partial<RolloutRecord> = {}): RolloutRecord {
  return {
    id: 'a'.repeat(32),
    runId: 'run-1',
    taskId: 'pqa-1',
    split: 'train',
    sample: 0,
    status: 'succeeded',
    finalReward: 0.714,
    criteria: { novelty: 0.5 },
    judgeFailed: false,
    decision: 'GO',
    expectedDecision: 'yes',
    turns: 3,
    error: null,
    simulated: true,
    startTime: 1_000_000,
    endTime: 1_002_300,
    spanCount: 40,
    agents: [],
    ...p,
  };
}

const run: RunRecord = { id: 'run-1', startTime: 0, endTime: 1, status: 'done', params: {}, simulated: true, planned: 3 };

describe('rollout presentation', () => {
  it('formats durations for people', () => {
    assert.equal(formatDuration(850), '850 ms');
    assert.equal(formatDuration(2300), '2.3 s');
    assert.equal(formatDuration(245_000), '4 m 05 s');
  });

  it('describes a rollout as reward and duration', () => {
    assert.equal(rolloutDescription(rollout()), 'reward 0.71 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ sample: 2 })), '#3 · reward 0.71 · 2.3 s');
    // Several samples per task: every one numbered from #1, the first too.
    assert.equal(rolloutDescription(rollout({ sample: 0 }), 1_002_300, 2), '#1 · reward 0.71 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ sample: 1 }), 1_002_300, 2), '#2 · reward 0.71 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ sample: 0 }), 1_002_300, 1), 'reward 0.71 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ finalReward: null, status: 'failed' })), 'failed · 2.3 s', 'a record from before categories');
    assert.equal(rolloutDescription(rollout({ status: 'cancelled', failure: 'cancelled', finalReward: null })), 'cancelled · 2.3 s');
    assert.equal(rolloutDescription(rollout({ status: 'running', endTime: null }), 1_001_500), 'running · 1.5 s');
  });

  it('describes a run with its count, mean reward and SIMULATED', () => {
    const s = summariseRollouts([rollout({ finalReward: 0.5 }), rollout({ finalReward: 1 }), rollout({ finalReward: null })]);
    assert.deepEqual(s, { rollouts: 3, meanReward: 0.75 });
    assert.equal(runDescription(run, s), '3 rollouts · mean 0.75 · SIMULATED');
    assert.equal(runDescription({ ...run, simulated: false, status: 'interrupted' }, { rollouts: 1, meanReward: null }), '1 rollout · interrupted');
    const side = { ...run, id: 'run-20261121T120015-265cc9', params: { command: 'compare', comparison: { side: 'b', label: 'senior=trained' } } };
    assert.equal(runDescription(side, s), 'B: senior=trained · 3 rollouts · mean 0.75 · SIMULATED');
  });

  it('leads a failed rollout with why it failed, and shows its reward when it has one', () => {
    assert.equal(rolloutDescription(rollout({ status: 'failed', failure: 'no_output', finalReward: 0 })), 'no output · reward 0.00 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ status: 'failed', failure: 'truncated', finalReward: 0.1, sample: 1 })), '#2 · truncated · reward 0.10 · 2.3 s');
    assert.equal(rolloutDescription(rollout({ status: 'failed', failure: 'timeout', finalReward: null })), 'timeout · 2.3 s');
    const md = rolloutTooltipMarkdown(rollout({ status: 'failed', failure: 'no_output', finalReward: 0, error: 'the graph finished without a final output' }));
    assert.ok(md.includes('Status: failed \\(no output\\)'), md);
    assert.ok(md.includes('Reward: 0.00'));
    // Scored but failed: a warning, not the error icon of a rollout that threw.
    assert.deepEqual(rolloutIcon(rollout({ status: 'failed', failure: 'no_output', finalReward: 0 })), { icon: 'warning', color: 'testing.iconFailed' });
    assert.deepEqual(rolloutIcon(rollout({ status: 'failed', failure: 'timeout', finalReward: null })), statusIcon('failed'));
    assert.deepEqual(rolloutIcon(rollout()), statusIcon('succeeded'));
  });

  it('maps statuses to codicons with theme colours', () => {
    assert.deepEqual(statusIcon('succeeded'), { icon: 'pass', color: 'testing.iconPassed' });
    assert.deepEqual(statusIcon('failed'), { icon: 'error', color: 'testing.iconFailed' });
    assert.equal(statusIcon('running').icon, 'loading~spin');
    assert.equal(statusIcon('cancelled').icon, 'circle-slash');
  });

  it('escapes model and dataset text in tooltips', () => {
    const hostile = '<img src=x onerror=alert(1)> **bold** [link](http://x) `code` </script>';
    const escaped = escapeMarkdown(hostile);
    assert.ok(!/(^|[^\\])[<>*[\]`()]/.test(escaped), escaped);
    const md = rolloutTooltipMarkdown(rollout({ taskId: hostile, error: hostile, status: 'failed' }));
    assert.ok(!/(^|[^\\])<img/.test(md), md);
    assert.ok(md.includes('\\<img'));
    assert.ok(md.includes('Reward: 0.71'));
  });

  it('says done/total, mean reward and ETA while a run goes', () => {
    assert.equal(progressMessage({ done: 3, total: 10, meanReward: 0.7123, etaMs: 12_000 }), '3/10 · mean reward 0.712 · ETA 12.0 s');
    assert.equal(progressMessage({ done: 10, total: 10, meanReward: null, etaMs: 0 }), '10/10');
  });
});

it('a run label is short: its kind when not a plain run, and when it started', () => {
  const start = new Date(2026, 10, 21, 14, 5).getTime();
  const at = (params: Record<string, unknown>, now: number): string => runLabel({ startTime: start, params }, now);
  assert.equal(at({}, start + 60_000), '14:05', 'today: the time');
  assert.equal(at({ command: 'run' }, start + 3 * 86_400_000), 'Nov 21 14:05');
  assert.equal(at({ command: 'eval' }, start), 'eval · 14:05');
  assert.equal(at({ command: 'compare', comparison: { side: 'a', label: 'base' } }, start), 'compare A · 14:05');
  assert.equal(at({ command: 'pipeline', phase: 'gather' }, start), 'training · 14:05');
  assert.ok(at({ command: 'compare', comparison: { side: 'a' } }, start + 3 * 86_400_000).length <= 24);
});
