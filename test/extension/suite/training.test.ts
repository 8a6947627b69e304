import assert from 'node:assert/strict';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { api, cli, waitFor, workspaceDir, type RunSummaryLike, type SnapshotItem } from './helpers';


interface PhaseRecordLike {
  name: string;
  state: string;
  runId: string | null;
  counts: Record<string, number>;
  error: string | null;
}

interface LabLike {
  loaded: { config: { models: Record<string, { version?: string }> } };
  store: { listRollouts(q: { runId: string }): { rollouts: Array<{ agents: Array<{ agent: string; modelVersion: string | null }> }> } };
}

async function snapshot(): Promise<SnapshotItem[]> {
  const s = await vscode.commands.executeCommand<SnapshotItem[]>('rolloutLab.refreshTraining');
  assert.ok(Array.isArray(s), 'rolloutLab.refreshTraining returns the view as data');
  return s;
}

function child(items: SnapshotItem[] | undefined, label: string): SnapshotItem | undefined {
  return items?.find((i) => i.label === label);
}


async function lab(): Promise<LabLike> {
  const service = (await api()).service as { lab(folder?: string): Promise<LabLike> };
  return service.lab();
}

/** The model version the Geneticist (a junior) recorded in the rollouts of a run made now by Run Rollouts. */
async function juniorVersionOfNextRun(): Promise<string | null> {
  const run = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 1 });
  assert.equal(run.rollouts, 1);
  const [r] = (await lab()).store.listRollouts({ runId: run.runId }).rollouts;
  return r!.agents.find((a) => a.agent === 'Geneticist')!.modelVersion;
}

describe('training view', () => {
  it('shows the reference pipeline and the models, runs the gather phase, follows a version registered by the CLI, and rolls it back', async function () {
    this.timeout(120_000);
    await api();
    const before = await snapshot();
    assert.deepEqual(before.map((s) => s.label), ['Pipeline', 'Models', 'Learning Curve']);
    const phases = child(before, 'Pipeline')!.children!;
    assert.deepEqual(phases.map((p) => p.label), ['gather', 'sft-juniors', 'grpo-seniors', 'bandit-supervisor']);
    assert.deepEqual(child(before, 'Models')!.children!.map((m) => m.label), ['junior', 'supervisor', 'senior', 'strong']);

    // Run the gather phase through the command: 1 task × 2 samples on the simulated endpoint.
    const rec = await vscode.commands.executeCommand<PhaseRecordLike>('rolloutLab.runTrainingPhase', { phase: 'gather', limit: 1, samples: 2 });
    assert.equal(rec.state, 'done', rec.error ?? '');
    assert.equal(rec.counts.rollouts, 2);
    assert.ok(rec.runId);
    const after = await snapshot();
    const gather = child(child(after, 'Pipeline')!.children, 'gather')!;
    assert.equal(gather.icon, 'check');
    assert.match(gather.description!, /^gather · done · rollouts 2, succeeded \d/);
    assert.equal(gather.contextValue, 'rolloutLab.training.phase.done');
    assert.ok(child(gather.children, `run ${rec.runId}`), 'the run is a child of the phase');
    assert.equal(child(child(after, 'Pipeline')!.children, 'sft-juniors')!.icon, 'circle-outline');

    // A version registered by the CLI in another process shows up, and the next rollouts use it.
    const ws = workspaceDir();
    const reg = await cli(['pipeline', 'register', 'junior', '--workspace', ws, '--version', 'sft-test', '--phase', 'sft-juniors']);
    assert.equal(reg.code, 0, reg.stderr);
    const junior = await waitFor('junior on version sft-test in the view', async () => {
      const m = child(child(await snapshot(), 'Models')!.children, 'junior');
      return m?.description === 'runs version sft-test' ? m : undefined;
    });
    assert.equal(junior.contextValue, 'rolloutLab.training.model.versioned');
    assert.deepEqual(junior.children!.map((c) => [c.label, c.icon]), [['sft-test', 'pass-filled'], ['lab.json settings', 'circle-outline']]);
    assert.match(child(junior.children, 'sft-test')!.description!, /^in use · trained by sft-juniors/);
    const sft = child(child(await snapshot(), 'Pipeline')!.children, 'sft-juniors')!;
    assert.match(sft.description!, /model sft-test/);
    await waitFor('the lab reopened with the registered version', async () => (await lab()).loaded.config.models.junior?.version === 'sft-test');
    assert.equal(await juniorVersionOfNextRun(), 'sft-test');

    // Roll back through the command: lab.json's own settings again, in the view and in the next rollouts.
    const entry = await vscode.commands.executeCommand<{ active: string | null; history: string[] }>('rolloutLab.rollbackModelVersion', { model: 'junior', confirm: true });
    assert.equal(entry.active, null);
    const back = child(child(await snapshot(), 'Models')!.children, 'junior')!;
    assert.equal(back.description, "runs lab.json's settings");
    // Says plainly what lab.json routes the model to (it read "lab.json  active · qwen…").
    assert.match(child(back.children, 'lab.json settings')!.description!, /^in use · \S+ (on the simulated endpoint|at \S+)$/);
    assert.deepEqual(back.children!.map((c) => [c.label, c.icon]), [['sft-test', 'circle-outline'], ['lab.json settings', 'pass-filled']]);
    assert.equal(await juniorVersionOfNextRun(), null);
  });

  it('shows the learning curve: validation reward per junior version with its interval and the paired change, and opens it in the Reward Curve', async function () {
    this.timeout(120_000);
    const ws = workspaceDir();
    const curve = async (): Promise<SnapshotItem[]> => child(await snapshot(), 'Learning Curve')!.children ?? [];
    // The first test rolled the junior back to lab.json's settings: evaluate it, then the registered version again.
    const base = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.evaluate', { limit: 3 });
    assert.equal(base.rollouts, 3);
    const reg = await cli(['pipeline', 'register', 'junior', '--workspace', ws, '--version', 'sft-test', '--phase', 'sft-juniors']);
    assert.equal(reg.code, 0, reg.stderr);
    await waitFor('the lab reopened with the registered version', async () => (await lab()).loaded.config.models.junior?.version === 'sft-test');
    const trained = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.evaluate', { limit: 3 });
    assert.equal(trained.rollouts, 3);

    const series = await waitFor('the junior versions on the learning curve', async () => {
      const s = child(await curve(), 'Geneticist, Pharmacologist, Neurologist');
      return s?.children?.length === 2 && s.children[1]!.description?.includes('n 3') ? s : undefined;
    });
    assert.match(series.description!, /^model junior · validation reward per version/);
    const [b, v] = series.children!;
    assert.deepEqual([b!.label, v!.label, v!.icon], ['base', 'junior@sft-test', 'pass-filled']);
    // Base also counts the validation rollouts earlier suites ran in this workspace with the junior on lab.json's settings.
    const baseN = Number(/ · n (\d+) SIMULATED$/.exec(b!.description!)?.[1]);
    assert.match(b!.description!, /^\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\] [·━●]{12} · n \d+ SIMULATED$/);
    assert.ok(baseN >= 3, b!.description);
    assert.match(v!.description!, / · n 3 SIMULATED · [+-]\d\.\d{3}.*\(\d+ pairs\) vs base$/);
    assert.equal(v!.contextValue, 'rolloutLab.training.curvePoint');

    await vscode.commands.executeCommand('rolloutLab.showLearningCurve');
    const a = (await api()) as unknown as { panels: { get(kind: 'rewardCurve'): { notified: Array<{ type: string }>; handle(m: string, p: unknown): Promise<unknown> } | undefined } };
    const host = await waitFor('the reward curve panel', () => a.panels.get('rewardCurve'));
    assert.ok(host.notified.some((n) => n.type === 'rewards/showLearningCurve'), 'the panel is told to show validation per model version');
    const answered = (await host.handle('rewards/learningCurve', {})) as { series: Array<{ model: string; points: Array<{ label: string; rollouts: number }> }> };
    assert.deepEqual(answered.series.find((x) => x.model === 'junior')!.points.map((p) => [p.label, p.rollouts]), [['base', baseN], ['junior@sft-test', 3]]);
  });
});
