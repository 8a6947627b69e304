import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { ensureRun } from './helpers';

interface ReportLike {
  phase: string;
  ok: boolean;
  checks: Array<{ id: string; severity: string; count: number; rollouts: string[] }>;
  counts: Record<string, number>;
}

describe('preflight', () => {
  it('Run Pre-flight Checks with an argument object returns the report of the stored rollouts', async () => {
    const run = await ensureRun();
    // The run's rollouts come from the simulated endpoint: left out and counted by default.
    const realOnly = await vscode.commands.executeCommand<ReportLike>('rolloutLab.runPreflight', { phase: 'sft', minReward: 0 });
    assert.ok(realOnly.counts.simulated! >= run.succeeded, `counts: ${JSON.stringify(realOnly.counts)}`);
    assert.ok(realOnly.checks.some((c) => c.id === 'simulated-rollouts'));
    const sft = await vscode.commands.executeCommand<ReportLike>('rolloutLab.runPreflight', { phase: 'sft', minReward: 0, includeSimulated: true });
    assert.equal(sft.phase, 'sft');
    assert.ok(sft.counts.usable! >= run.succeeded);
    assert.equal(sft.ok, true);
    const grpo = await vscode.commands.executeCommand<ReportLike>('rolloutLab.runPreflight', { phase: 'grpo', includeSimulated: true });
    assert.equal(grpo.ok, false, 'one sample per task: no complete group of 8');
    assert.equal(grpo.checks.find((c) => c.id === 'small-groups')!.severity, 'error');
  });

  it('rejects a bad argument with a clear message', async () => {
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.runPreflight', { phase: 'ppo' })), /phase/);
  });
});
