import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { ensureRun } from './helpers';

interface ManifestLike {
  format: string;
  file: string;
  counts: { rollouts: number; records: number; skipped: Record<string, number> };
  sourceRollouts: string[];
  sha256: string;
}

interface ApoResultLike {
  agent: string;
  baseline: { version: string; score: number | null };
  rounds: Array<{ round: number; critique: string; candidates: Array<{ version: string; score: number | null; runId: string | null }> }>;
  best: { version: string; score: number | null; round: number };
}

describe('training data and prompt optimisation', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rollout-lab-export-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('Export Training Data with an argument object writes the JSONL and its manifest from the stored rollouts', async () => {
    const run = await ensureRun();
    const out = join(dir, 'sft.jsonl');
    // No reward reaches 2: an export that would write 0 rows is an error that counts what it dropped and why, and writes no file.
    // (Other suites leave rollouts of their own in this store, some not simulated: a reason every rollout has is used.)
    await assert.rejects(
      Promise.resolve(vscode.commands.executeCommand('rolloutLab.exportTrainingData', { format: 'sft', out, minReward: 2, includeSimulated: true })),
      /no training rows: the sft export .* has 0 rows to train on; dropped: .*below the minimum reward 2: \d+ rollouts?/,
    );
    assert.equal(existsSync(out), false);
    const m = await vscode.commands.executeCommand<ManifestLike>('rolloutLab.exportTrainingData', { format: 'sft', out, minReward: 0, includeSimulated: true });
    assert.equal(m.format, 'sft');
    assert.ok(m.counts.rollouts >= run.succeeded, `rollouts exported: ${m.counts.rollouts}`);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    assert.equal(lines.length, m.counts.records);
    const first = JSON.parse(lines[0]!) as { messages: Array<{ role: string }> };
    assert.equal(first.messages.at(-1)!.role, 'assistant', 'each example ends with the completion');
    assert.ok(existsSync(`${out}.manifest.json`));
    assert.deepEqual(JSON.parse(readFileSync(`${out}.manifest.json`, 'utf8')).sha256, m.sha256);
  });

  it('rejects an export argument it does not know with a clear message, writing nothing', async () => {
    const out = join(dir, 'bad.jsonl');
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.exportTrainingData', { format: 'parquet', out })), /format/);
    assert.equal(existsSync(out), false);
  });

  it('Optimize Prompt with an argument object critiques, rewrites and scores candidates on validation tasks without applying', async () => {
    await ensureRun();
    const prompt = join(vscode.workspace.workspaceFolders![0]!.uri.fsPath, '.rollout-lab', 'prompts', 'Supervisor.md');
    const before = readFileSync(prompt, 'utf8');
    const r = await vscode.commands.executeCommand<ApoResultLike>('rolloutLab.optimizePrompt', { agent: 'Supervisor', rounds: 1, beam: 1, candidates: 1, validationTasks: 2, includeSimulated: true });
    assert.equal(r.agent, 'Supervisor');
    assert.equal(r.rounds.length, 1);
    assert.ok(r.rounds[0]!.critique.length > 0, 'the critic answered');
    assert.equal(typeof r.baseline.score, 'number');
    assert.ok(r.best.score! >= r.baseline.score!, 'the winner is at least as good as the baseline it competed with');
    assert.equal(readFileSync(prompt, 'utf8'), before, 'nothing is applied without apply: true');
  });

  it('Train Supervisor Bandit trains a policy version from the stored Supervisor decisions; Show Bandit Policy lists it as active', async () => {
    const run = await ensureRun();
    const info = await vscode.commands.executeCommand<{ version: string; records: number; file: string }>('rolloutLab.trainBandit', { includeSimulated: true });
    assert.match(info.version, /^bandit-\d{4}-[0-9a-f]{8}$/);
    assert.ok(info.records >= run.succeeded, `decisions learned from: ${info.records}`);
    assert.ok(existsSync(info.file));
    const shown = await vscode.commands.executeCommand<{ active: string | null; versions: Array<{ version: string }> }>('rolloutLab.showBanditPolicy', {});
    assert.equal(shown.active, info.version);
    assert.ok(shown.versions.some((v) => v.version === info.version));
  });
});
