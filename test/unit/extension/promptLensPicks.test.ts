import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PromptVersionStats } from '../../../src/core/analysis/promptStats';
import type { RolloutRecord } from '../../../src/core/store/types';
import { decisionText, rolloutPickRows, versionPickRows } from '../../../src/extension/promptHistory/pickItems';
import { versionReportMarkdown } from '../../../src/extension/view/promptLens';

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

function rollout(p: Partial<RolloutRecord>): RolloutRecord {
  const startTime = p.startTime ?? NOW - 60_000;
  return {
    id: 'a'.repeat(32),
    runId: 'run1',
    taskId: '12345',
    split: 'train',
    sample: 0,
    status: 'succeeded',
    finalReward: 0.5,
    criteria: null,
    judgeFailed: false,
    decision: 'GO',
    expectedDecision: 'yes',
    turns: 3,
    error: null,
    simulated: true,
    startTime,
    endTime: startTime + 2_300,
    spanCount: 10,
    agents: [],
    ...p,
  };
}

function stats(p: Partial<PromptVersionStats>): PromptVersionStats {
  return {
    agent: 'Supervisor',
    version: '111111111111',
    text: 'You are the Supervisor.\nDecide.',
    firstSeen: NOW - 3 * 86_400_000,
    rollouts: 12,
    meanReward: 0.714,
    ci: [0.664, 0.764],
    decisionAlignment: 75,
    criteria: { rigor: 0.8 },
    lastRun: NOW - 5 * 60_000,
    sparkline: '▁▅',
    rewards: [0.6, 0.8],
    rewardBasis: 'current',
    rescored: 0,
    rewardDefinitions: [],
    ...p,
  };
}

describe('prompt history pickers', () => {
  it('says the decision against the expert label', () => {
    assert.equal(decisionText({ decision: 'GO', expectedDecision: 'yes' }), 'GO · expected yes, aligned');
    assert.equal(decisionText({ decision: 'NO-GO', expectedDecision: 'yes' }), 'NO-GO · expected yes, misaligned');
    assert.equal(decisionText({ decision: 'GO', expectedDecision: 'maybe' }), 'GO · expected maybe');
    assert.equal(decisionText({ decision: null, expectedDecision: null }), 'no decision');
  });

  it('lists rollouts newest first with the best and worst marked', () => {
    const rows = rolloutPickRows(
      [
        rollout({ id: '1'.repeat(32), startTime: NOW - 300_000, finalReward: 0.9 }),
        rollout({ id: '2'.repeat(32), startTime: NOW - 100_000, finalReward: 0.2, decision: 'NO-GO', sample: 1 }),
        rollout({ id: '3'.repeat(32), startTime: NOW - 200_000, finalReward: 0.5 }),
        rollout({ id: '4'.repeat(32), startTime: NOW - 50_000, finalReward: null, status: 'failed' }),
      ],
      NOW,
    );

    assert.deepEqual(rows.map((r) => r.rolloutId[0]), ['4', '2', '3', '1']);
    assert.deepEqual(rows.map((r) => r.mark), [null, 'worst', null, 'best']);
    assert.equal(rows[3]!.label, '$(pass) reward 0.90  $(arrow-up) best');
    assert.equal(rows[1]!.label, '$(pass) reward 0.20  $(arrow-down) worst');
    assert.equal(rows[1]!.description, 'NO-GO · expected yes, misaligned');
    assert.equal(rows[1]!.detail, 'task 12345 #1 · succeeded · 2.3 s · 2 min ago');
    assert.match(rows[0]!.label, /^\$\(error\) reward n\/a$/);
  });

  it('says why a rollout failed', () => {
    const [row] = rolloutPickRows([rollout({ id: '5'.repeat(32), finalReward: 0, status: 'failed', failure: 'no_output' })], NOW);
    assert.match(row!.detail, /· failed \(no output\) ·/);
  });

  it('marks no rollout when all rewards are equal', () => {
    const rows = rolloutPickRows([rollout({ id: '1'.repeat(32) })], NOW);
    assert.equal(rows[0]!.mark, null);
  });

  it('lists versions newest first with their statistics, the best and the current one marked', () => {
    const rows = versionPickRows(
      [stats({}), stats({ version: '222222222222', firstSeen: NOW - 86_400_000, rollouts: 0, meanReward: null, ci: null, decisionAlignment: null, lastRun: null, text: '' })],
      '111111111111',
      '222222222222',
      NOW,
    );
    assert.deepEqual(rows.map((r) => r.version), ['222222222222', '111111111111']);
    assert.equal(rows[0]!.label, '2222222  (current)');
    assert.equal(rows[0]!.description, 'no rollouts');
    assert.equal(rows[0]!.detail, 'first seen 24 h ago');
    assert.equal(rows[1]!.label, '1111111  $(star-full) best');
    assert.equal(rows[1]!.description, '0.71 ± 0.05, n=12 · alignment 75%');
    assert.equal(rows[1]!.detail, 'first seen 3 days ago · last run 5 min ago · You are the Supervisor.');
  });

  it('for Compare and Restore, the current version goes last (it would be an empty diff), so the default is the previous one', () => {
    const rows = versionPickRows(
      [
        stats({ version: '111111111111', firstSeen: NOW - 3 * 86_400_000 }),
        stats({ version: '222222222222', firstSeen: NOW - 2 * 86_400_000 }),
        stats({ version: '333333333333', firstSeen: NOW - 86_400_000 }),
      ],
      '333333333333',
      '333333333333',
      NOW,
      { currentLast: true },
    );
    assert.deepEqual(rows.map((r) => r.version), ['222222222222', '111111111111', '333333333333']);
    assert.equal(rows[2]!.label, '3333333  $(star-full) best (current — the same text)');
  });

  it('writes a version\'s statistics page with its comparison to the previous version', () => {
    const md = versionReportMarkdown(stats({}), { version: '111111111111', previous: '000000000000', delta: 0.05, pValue: 0.03, significant: true, notComparable: null }, true, NOW);
    assert.match(md, /\*\*Supervisor\*\* prompt version `1111111` — 12 rollouts/);
    assert.match(md, /The best-scoring version/);
    assert.match(md, /Decision alignment: 75%/);
    assert.match(md, /Against previous version `0000000`: Δ \+0\.05 \(Welch's t-test, p=0\.03, significant\)/);
    assert.match(md, /Version hash: `111111111111`/);
  });
});
