import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import * as vscode from 'vscode';
import { recordingProxy } from '../../fakes/recordingProxy';
import { answerEveryPicker, api, ensureRun, runInTree, waitFor, workspaceDir, type RunSummaryLike } from './helpers';

interface EndpointLike {
  url: string;
}

/** The URL the Start Simulated Endpoint command reports, whichever shape it returns it in. */
function endpointUrl(r: unknown): string {
  const url = typeof r === 'string' ? r : (r as EndpointLike | undefined)?.url;
  assert.equal(typeof url, 'string', `rolloutLab.startSimulatedEndpoint returned ${JSON.stringify(r)}, not { url }`);
  return url!.replace(/\/+$/, '');
}

describe('commands', () => {
  it('Run Rollouts with { limit: 3 } runs three rollouts on the simulated endpoint, and sets rolloutLab.hasRollouts (the walkthrough\'s step)', async () => {
    assert.notEqual((await api()).contextKey('rolloutLab.hasRollouts'), true, 'no rollout is stored yet');
    const r = await ensureRun();
    await waitFor('rolloutLab.hasRollouts once rollouts are stored', async () => (await api()).contextKey('rolloutLab.hasRollouts'));
    assert.equal(r.rollouts, 3);
    assert.equal(r.succeeded, 3);
    assert.equal(r.failed, 0);
    assert.equal(r.simulated, true, 'no model has a baseUrl in a fresh lab: the simulated endpoint answers');
    assert.match(r.runId, /\S/);
  });

  it('Evaluate on Validation Set returns metrics', async () => {
    const r = await vscode.commands.executeCommand<{ metrics?: Record<string, unknown> } & Record<string, unknown>>('rolloutLab.evaluate', { limit: 2 });
    assert.ok(r, 'rolloutLab.evaluate returned nothing');
    const m = (r.metrics ?? r) as { rollouts: number; succeeded: number; averageFinalReward: number | null; executionSuccessRate: number; decisionAlignment: number | null };
    assert.equal(m.rollouts, 2);
    assert.equal(m.succeeded, 2);
    assert.equal(typeof m.averageFinalReward, 'number');
    assert.equal(m.executionSuccessRate, 100);
    assert.equal((await api()).contextKey('rolloutLab.evaluated'), true, "the walkthrough's Evaluate step ticks off");
    assert.ok(m.decisionAlignment === null || (m.decisionAlignment >= 0 && m.decisionAlignment <= 100));
  });

  it('Start Simulated Endpoint serves /v1/models and Stop Simulated Endpoint stops it', async () => {
    const url = endpointUrl(await vscode.commands.executeCommand('rolloutLab.startSimulatedEndpoint'));
    const models = (await (await fetch(`${url}/models`)).json()) as { data: Array<{ id: string }> };
    assert.ok(Array.isArray(models.data) && models.data.length > 0, 'GET /v1/models lists models');
    await vscode.commands.executeCommand('rolloutLab.stopSimulatedEndpoint');
    await assert.rejects(fetch(`${url}/models`), 'the endpoint still answers after Stop');
  });

  it('Set API Key keeps the key in SecretStorage and the models send it', async () => {
    const dir = workspaceDir();
    const labFile = join(dir, '.rollout-lab', 'lab.json');
    const original = readFileSync(labFile, 'utf8');
    const envVar = 'ROLLOUT_LAB_TEST_KEY';
    const secret = `sk-test-${Math.random().toString(36).slice(2)}`;
    assert.equal(process.env[envVar], undefined);
    const sim = endpointUrl(await vscode.commands.executeCommand('rolloutLab.startSimulatedEndpoint'));
    const proxy = await recordingProxy(sim);
    const service = (await api()).service as { invalidate(folder?: string): void };
    try {
      await vscode.commands.executeCommand('rolloutLab.setApiKey', { envVar, value: secret });
      // Every model now goes through the proxy and names the key's variable; nothing else provides it.
      const config = JSON.parse(original) as { models: Record<string, Record<string, unknown>> };
      for (const m of Object.values(config.models)) Object.assign(m, { baseUrl: `${proxy.url}/v1`, apiKeyEnv: envVar });
      writeFileSync(labFile, JSON.stringify(config, null, 2));
      service.invalidate(dir);
      const r = await vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', { limit: 1 });
      assert.equal(r?.simulated, false, 'every model has a baseUrl: nothing is simulated');
      assert.equal(r?.succeeded, 1);
      const chat = proxy.headers.filter((h) => h.authorization);
      assert.ok(chat.length > 0, 'the models called the endpoint');
      for (const h of chat) assert.equal(h.authorization, `Bearer ${secret}`);
      assert.ok(!readFileSync(labFile, 'utf8').includes(secret), 'the key is never written to lab.json');
    } finally {
      writeFileSync(labFile, original);
      service.invalidate(dir);
      await vscode.commands.executeCommand('rolloutLab.setApiKey', { envVar, value: '' });
      await proxy.close();
      await vscode.commands.executeCommand('rolloutLab.stopSimulatedEndpoint');
    }
  });

  it('Run Rollouts on Workers splits the run over worker processes of the bundled CLI and follows them to the end', async function () {
    this.timeout(180_000);
    const r = await vscode.commands.executeCommand<RunSummaryLike & { done: boolean; workers: Array<{ shard: string; state: string }> }>('rolloutLab.runOnWorkers', { limit: 4, workers: 2, on: 'local' });
    assert.equal(r?.done, true, JSON.stringify(r));
    assert.deepEqual(r.workers.map((w) => [w.shard, w.state]), [['0/2', 'succeeded'], ['1/2', 'succeeded']]);
    assert.equal(r.succeeded, 4);
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.runOnWorkers', { limit: 2, workers: 2, on: 'mars' })), /on:/);
  });

  it('Run Rollouts rejects a malformed argument with a message', async () => {
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.runRollouts', { limit: -1 })), /limit/);
  });

  describe('from the Rollouts view, with a row selected (VS Code passes the focused row to title-bar and row commands)', () => {
    it('Run Rollouts proposes the selected run\'s options: Enter on every picker runs it again', async function () {
      this.timeout(120_000);
      const run = await ensureRun();
      const a = await api();
      const { run: runNode, rollouts } = await waitFor('the run in the view', () => runInTree(a.rolloutsTree, run.runId));
      // lab.json changed since the view listed the row (another test, the user): the lab the row came from is retired.
      (a.service as { invalidate(folder?: string): void }).invalidate(workspaceDir());
      // The row VS Code focused is one of the run's rollouts: the command gets the view's own element.
      const again = await answerEveryPicker(() => vscode.commands.executeCommand<RunSummaryLike>('rolloutLab.runRollouts', rollouts[0]));
      assert.ok(again, 'Run Rollouts with a rollout selected asked and ran (it failed on the row as its argument before)');
      assert.equal(again.rollouts, run.rollouts, 'the same options as the selected run: limit 3, its samples');
      assert.notEqual(again.runId, run.runId);
      // The run row itself works the same way.
      assert.equal((runNode as { kind: string }).kind, 'run');
    });

    it('Evaluate proposes the selected evaluation run\'s options', async function () {
      this.timeout(120_000);
      const first = await vscode.commands.executeCommand<{ runId: string; rollouts: number }>('rolloutLab.evaluate', { limit: 2 });
      const a = await api();
      const { run: evalRun } = await waitFor('the evaluation run in the view', () => runInTree(a.rolloutsTree, first.runId));
      const again = await answerEveryPicker(() => vscode.commands.executeCommand<{ runId: string; rollouts: number }>('rolloutLab.evaluate', evalRun));
      assert.ok(again, 'Evaluate with a run selected asked and ran');
      assert.equal(again.rollouts, 2, 'its limit of 2 validation tasks was proposed');
    });

    it('Filter Rollouts asks (the selected row is not a filter); an options object is still checked', async () => {
      const run = await ensureRun();
      const a = await api();
      const { rollouts } = await waitFor('the run in the view', () => runInTree(a.rolloutsTree, run.runId));
      try {
        const f = await answerEveryPicker(() => vscode.commands.executeCommand<Record<string, unknown>>('rolloutLab.filterRollouts', rollouts[0]));
        assert.ok(f, 'the three pickers were shown and answered');
        assert.equal(f.status, undefined, 'every status kept');
        assert.equal(f.split, undefined);
        assert.equal((await runInTree(a.rolloutsTree, run.runId))?.rollouts.length, run.rollouts);
      } finally {
        await vscode.commands.executeCommand('rolloutLab.clearRolloutFilters');
      }
      await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.filterRollouts', { kinds: ['failed'] })), /unknown key "kinds"/);
      await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.runRollouts', { folder: 'x' })), /Unrecognized key/);
    });

    it("Open Evaluation Report shows the selected rollout's run", async () => {
      const run = await ensureRun();
      const a = await api();
      const { rollouts } = await waitFor('the run in the view', () => runInTree(a.rolloutsTree, run.runId));
      const shown = await vscode.commands.executeCommand<{ runId: string | null } | undefined>('rolloutLab.openEvaluationReport', rollouts[0]);
      assert.equal(shown?.runId, run.runId);
    });
  });
});

