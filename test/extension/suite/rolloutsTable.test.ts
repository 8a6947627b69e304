import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, ensureRun, waitFor, workspaceDir } from './helpers';

interface TableHostLike {
  handle(method: string, params: unknown): Promise<unknown>;
  onReady: Promise<void>;
}

interface TablePageLike {
  total: number;
  rows: Array<{ id: string; runId: string; taskId: string; reward: number | null; spans: number; inputTokens: number | null; agents: Array<{ agent: string; promptVersion: string | null }> }>;
}

async function tableHost(): Promise<TableHostLike> {
  const a = await api();
  const get = a.panels.get as unknown as (kind: string) => TableHostLike | undefined;
  return waitFor('the rollouts table panel host', () => get.call(a.panels, 'rolloutsTable'));
}

describe('rollouts table', () => {
  it('Open Rollouts Table opens the panel on the real store; its queries filter, sort and search the spans', async () => {
    const run = await ensureRun();
    await vscode.commands.executeCommand('rolloutLab.openRolloutsTable');
    const host = await tableHost();
    await host.onReady;

    const page = (await host.handle('table/query', { runIds: [run.runId], sort: 'reward', order: 'desc' })) as TablePageLike;
    assert.equal(page.total, run.rollouts, 'every rollout of the run');
    assert.ok(page.rows.every((r) => r.runId === run.runId));
    const rewards = page.rows.map((r) => r.reward).filter((x): x is number => x !== null);
    assert.deepEqual(rewards, [...rewards].sort((a, b) => b - a), 'sorted by reward, highest first');
    assert.ok(page.rows.every((r) => r.spans > 0 && (r.inputTokens ?? 0) > 0 && r.agents.length > 0), 'spans, tokens and the versions each agent ran');

    const facets = (await host.handle('table/facets', {})) as { criteria: string[]; agents: string[]; runs: Array<{ id: string }> };
    assert.ok(facets.criteria.length > 0, 'one column per judge criterion of lab.json');
    assert.ok(facets.runs.some((r) => r.id === run.runId));

    // Every rollout has a span named after an agent that ran: the full-text index finds it.
    const agent = page.rows[0]!.agents[0]!.agent;
    const found = (await host.handle('table/query', { runIds: [run.runId], text: agent })) as TablePageLike;
    assert.ok(found.total > 0, `searching "${agent}" finds the run's rollouts`);
    const none = (await host.handle('table/query', { runIds: [run.runId], text: 'zzqqxxnotaword' })) as TablePageLike;
    assert.equal(none.total, 0);
    await assert.rejects(host.handle('table/query', { sort: 'nonsense' }), /bad parameters for table\/query/);
  });

  it('Add to dataset appends the selected rollouts’ tasks once, and Export writes their records', async () => {
    const run = await ensureRun();
    const host = await tableHost();
    const page = (await host.handle('table/query', { runIds: [run.runId] })) as TablePageLike;
    const ids = page.rows.map((r) => r.id);
    const file = join(workspaceDir(), 'datasets', 'table-selection.jsonl');
    rmSync(file, { force: true });

    const first = await vscode.commands.executeCommand<{ added: number; duplicates: number; missing: number }>('rolloutLab.rolloutsTable.addToDataset', { rolloutIds: ids, file });
    const tasks = new Set(page.rows.map((r) => r.taskId));
    assert.deepEqual(first, { added: tasks.size, duplicates: ids.length - tasks.size, missing: 0 });
    const rows = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: string; goal: string; context: string });
    assert.deepEqual(new Set(rows.map((r) => r.id)), tasks);
    assert.ok(rows.every((r) => typeof r.goal === 'string' && r.goal.length > 0 && typeof r.context === 'string'), 'in the lab’s task format');
    const again = await vscode.commands.executeCommand<{ added: number; duplicates: number }>('rolloutLab.rolloutsTable.addToDataset', { rolloutIds: ids, file });
    assert.equal(again.added, 0, 'tasks already in the file are skipped');
    assert.equal(readFileSync(file, 'utf8').trim().split('\n').length, tasks.size);
    rmSync(file, { force: true });

    const out = join(workspaceDir(), 'exports', 'table-selection.jsonl');
    const written = await vscode.commands.executeCommand<string | null>('rolloutLab.rolloutsTable.export', { rolloutIds: ids.slice(0, 2), format: 'bandit', out });
    assert.equal(written, out);
    assert.ok(existsSync(out) && existsSync(`${out}.manifest.json`));
    const manifest = JSON.parse(readFileSync(`${out}.manifest.json`, 'utf8')) as { sourceRollouts: string[] };
    assert.ok(manifest.sourceRollouts.every((id) => ids.slice(0, 2).includes(id)), 'only the selected rollouts');
    rmSync(out, { force: true });
    rmSync(`${out}.manifest.json`, { force: true });
  });
});
