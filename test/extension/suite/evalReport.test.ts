import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, runInTree, waitFor, type PanelHostLike } from './helpers';

interface ReportLike {
  run: { id: string; simulated: boolean; command: string | null; counts: { total: number; succeeded: number } };
  table: { metrics: { rollouts: number; averageFinalReward: number | null }; finalReward: { mean: number | null; ci: [number, number] | null } };
  criteria: Array<{ name: string; share: number | null }>;
  agents: Array<{ agent: string }>;
}

type ReportHost = PanelHostLike & { notified?: Array<{ type: string; params: unknown }> };

async function reportHost(): Promise<ReportHost> {
  const a = await api();
  const get = a.panels.get as unknown as (kind: string) => ReportHost | undefined;
  return waitFor('the evalReport panel host', () => get.call(a.panels, 'evalReport'));
}

describe('evaluation report', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-ext-report-'));
  let runId = '';
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('Evaluate opens the report panel on its run, and the panel answers report/get and report/runs for it', async () => {
    const r = await vscode.commands.executeCommand<{ runId: string; rollouts: number; averageFinalReward: number | null }>('rolloutLab.evaluate', { limit: 2 });
    assert.ok(r && typeof r.runId === 'string', 'rolloutLab.evaluate returns the run id');
    runId = r.runId;
    const host = await reportHost();
    assert.ok(
      host.notified?.some((n) => n.type === 'report/show' && (n.params as { runId?: string }).runId === runId),
      `the panel was told to show ${runId}: ${JSON.stringify(host.notified)}`,
    );
    const report = (await host.handle('report/get', {})) as ReportLike;
    assert.equal(report.run.id, runId, 'by default: the newest evaluation run');
    assert.equal(report.run.command, 'eval');
    assert.equal(report.run.simulated, true);
    assert.equal(report.table.metrics.rollouts, r.rollouts);
    assert.equal(report.table.metrics.averageFinalReward, r.averageFinalReward, 'the same number as the command returned');
    assert.ok(report.criteria.length > 0 && report.agents.length > 0);
    const explicit = (await host.handle('report/get', { runId })) as Record<string, unknown>;
    assert.deepEqual({ ...explicit, generatedAt: 0 }, { ...(report as unknown as Record<string, unknown>), generatedAt: 0 }, 'asking for the run by id gives the same report');
    const runs = (await host.handle('report/runs', {})) as { runs: Array<{ id: string; command: string | null; rollouts: number }>; defaultRunId: string };
    assert.equal(runs.defaultRunId, runId);
    const listed = runs.runs.find((x) => x.id === runId);
    assert.deepEqual([listed?.command, listed?.rollouts], ['eval', r.rollouts]);
    await assert.rejects(host.handle('report/get', { runId: 'run-nope' }), /run "run-nope" is not in the trace store/);
    await assert.rejects(host.handle('report/get', { runId: 5 }), /bad parameters/);
    await assert.rejects(host.handle('report/export', { runId, format: 'pdf' }), /bad parameters/);
  });

  it('Export Evaluation Report with { format, path } writes Markdown and HTML without a dialog', async () => {
    assert.ok(runId, 'the previous test made a run');
    const md = join(dir, 'report.md');
    const r = await vscode.commands.executeCommand<{ saved: boolean; path: string }>('rolloutLab.exportEvaluationReport', { runId, format: 'md', path: md });
    assert.deepEqual(r, { saved: true, path: md });
    const text = readFileSync(md, 'utf8');
    assert.match(text, new RegExp(`^# Evaluation report: ${runId}\\n`));
    assert.match(text, /SIMULATED endpoint/);
    assert.match(text, /## Failure categories/);
    const html = join(dir, 'nested', 'report.html');
    const h = await vscode.commands.executeCommand<{ saved: boolean; path: string }>('rolloutLab.exportEvaluationReport', { runId, path: html });
    assert.deepEqual(h, { saved: true, path: html }, 'the format follows the extension');
    assert.match(readFileSync(html, 'utf8'), /^<!DOCTYPE html>/);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.exportEvaluationReport', { runId, format: 'pdf', path: md })), /invalid argument/);
  });

  it('Open Evaluation Report takes a run id or a run of the Rollouts view; an unknown run is one clear error', async () => {
    assert.ok(runId, 'the first test made a run');
    const byId = await vscode.commands.executeCommand<{ runId: string }>('rolloutLab.openEvaluationReport', runId);
    assert.deepEqual(byId, { runId });
    const a = await api();
    const found = await waitFor(`run ${runId} in the rollouts view`, () => runInTree(a.rolloutsTree, runId));
    const host = await reportHost();
    const shows = (): unknown[] => (host.notified ?? []).filter((n) => n.type === 'report/show').map((n) => n.params);
    host.notified?.splice(0);
    const byNode = await vscode.commands.executeCommand<{ runId: string }>('rolloutLab.openEvaluationReport', found.run);
    assert.deepEqual(byNode, { runId });
    assert.deepEqual(shows(), [{ runId }], 'the panel was told to show the run of the node');
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.openEvaluationReport', 'run-nope')), /run "run-nope" is not in the trace store/);
  });
});
