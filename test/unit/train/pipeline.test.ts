import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { loadConfig } from '../../../src/core/config/loader';
import { rollbackModelVersion } from '../../../src/core/config/modelRegistry';
import { Lab } from '../../../src/core/lab/lab';
import { Attr } from '../../../src/core/trace/span';
import { emptyPhaseRecord, pipelineStateFile, readPipelineState, writePhaseRecord, type PhaseRecord } from '../../../src/core/train/phases/pipelineState';
import { HOST } from '../../../src/core/store/processLiveness';
import { startSimServer } from '../../../src/core/sim/simServer';
import { PhaseSchema } from '../../../src/core/config/trainingSchema';
import { findPhase, pipelineExample, pipelineExampleText } from '../../../src/core/train/phases/phases';
import { pipelineStatus } from '../../../src/core/train/pipeline/pipelineStatus';
import { registerTrainedModel } from '../../../src/core/train/phases/trainedModel';
import { runPhase } from '../../../src/core/train/pipeline/runPhase';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

async function workspace(t: { after: (fn: () => Promise<void> | void) => void }, opts: { dataset?: string } = {}): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-pipeline-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await initWorkspace(dir, opts);
  return dir;
}

function editLab(dir: string, edit: (cfg: any) => void): void {
  const file = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  edit(cfg);
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

async function withLab<T>(dir: string, fn: (lab: Lab) => Promise<T>, baseUrl?: string): Promise<T> {
  const lab = await Lab.open({ workspace: dir, env: {}, ...(baseUrl ? { baseUrl } : {}) });
  try {
    return await fn(lab);
  } finally {
    await lab.close();
  }
}

test('the reference pipeline: pending → running → done for gather, sft exports checked data, a failing pre-flight fails the phase', async (t) => {
  const dir = await workspace(t, { dataset: PUBMEDQA });
  // Every model on the test's own OpenAI-compatible server: rollouts a real endpoint answered, which the data phases use.
  const endpoint = await startSimServer();
  t.after(() => endpoint.close());
  await withLab(dir, async (lab) => {
    assert.equal(lab.simulated, false);
    const before = pipelineStatus(lab);
    assert.equal(before.declared, false);
    assert.deepEqual(before.phases.map((p) => [p.phase.name, p.phase.kind, p.record.state]), [
      ['gather', 'gather', 'pending'],
      ['sft-juniors', 'sft', 'pending'],
      ['grpo-seniors', 'grpo', 'pending'],
      ['bandit-supervisor', 'bandit', 'pending'],
    ]);
    assert.equal(before.phases[0]!.phase.samples, 8, 'gather takes training.groupSize samples');
    assert.deepEqual(before.phases[1]!.phase.agents, ['Geneticist', 'Pharmacologist', 'Neurologist']);
    assert.equal(before.phases[1]!.phase.model, 'junior');
    assert.equal(before.phases[1]!.phase.minReward, 0.7);
    assert.equal(before.phases[2]!.phase.model, 'senior');
    assert.deepEqual(before.models.map((m) => [m.name, m.active]), [['junior', null], ['supervisor', null], ['senior', null], ['strong', null]]);

    const seen: PhaseRecord[] = [];
    const gather = await runPhase(lab, 'gather', { limit: 3, samples: 2, onUpdate: (r) => seen.push(structuredClone(r)) });
    assert.equal(seen[0]!.state, 'running');
    assert.equal(seen[0]!.pid, process.pid);
    assert.ok(seen.some((r) => r.state === 'running' && r.runId === gather.runId && r.counts.rollouts === 3), 'progress is recorded while it runs');
    assert.equal(seen.at(-1)!.state, 'done');
    assert.equal(gather.state, 'done');
    assert.equal(gather.error, null);
    assert.equal(gather.pid, null);
    assert.ok(gather.endedAt! >= gather.startedAt!);
    assert.deepEqual(gather.produced, { kind: 'data', id: gather.runId });
    const rollouts = lab.store.listRollouts({ runId: gather.runId! }).rollouts;
    assert.equal(rollouts.length, 6);
    assert.equal(gather.counts.rollouts, 6);
    assert.equal(gather.counts.succeeded, rollouts.filter((r) => r.status === 'succeeded').length);
    assert.deepEqual(new Set(rollouts.map((r) => r.split)), new Set(['train']));
    assert.equal(lab.store.getRun(gather.runId!)!.params.phase, 'gather');
    assert.equal(gather.note, null, 'no simulated-endpoint note: a real endpoint answered');

    // GRPO needs groups of training.groupSize (8): two samples per task fail its pre-flight.
    const grpo = await runPhase(lab, 'grpo-seniors');
    assert.equal(grpo.state, 'failed');
    assert.match(grpo.error!, /^pre-flight failed: .*group size 8/);
    assert.ok(grpo.checks.some((c) => c.id === 'small-groups' && c.severity === 'error' && c.rollouts.length > 0));
    assert.deepEqual(grpo.files, []);
    assert.equal(grpo.produced, null);

    const sft = await runPhase(lab, 'sft-juniors');
    assert.equal(sft.state, 'done', sft.error ?? '');
    assert.deepEqual(sft.files, ['training/sft-juniors/sft.jsonl', 'training/sft-juniors/sft.jsonl.manifest.json']);
    const manifest = JSON.parse(readFileSync(join(dir, '.rollout-lab', sft.files[1]!), 'utf8'));
    assert.equal(manifest.format, 'sft');
    assert.equal(manifest.options.minReward, 0.7);
    assert.deepEqual(manifest.options.agents, ['Geneticist', 'Pharmacologist', 'Neurologist']);
    assert.equal(sft.counts.records, manifest.counts.records);
    assert.equal(sft.counts.rollouts, manifest.counts.rollouts);
    assert.equal(readFileSync(join(dir, '.rollout-lab', sft.files[0]!), 'utf8').trim().split('\n').length, manifest.counts.records);
    assert.deepEqual(sft.produced, { kind: 'data', id: manifest.sha256.slice(0, 12) });
    assert.match(sft.note!, /pipeline register junior --version V --phase sft-juniors/);

    // The state is on disk, where the CLI and the editor read it.
    const after = pipelineStatus(lab);
    assert.deepEqual(after.phases.map((p) => p.record.state), ['done', 'done', 'failed', 'pending']);
    assert.ok(existsSync(pipelineStateFile(lab.loaded)));

    // A registered model version is what the phase produced.
    registerTrainedModel(lab.loaded, 'junior', { version: 'sft-1', model: 'junior-sft-1', phase: 'sft-juniors', job: 'job-42' });
    const registered = pipelineStatus(lab);
    const phase = registered.phases.find((p) => p.phase.name === 'sft-juniors')!.record;
    assert.deepEqual(phase.produced, { kind: 'model', id: 'sft-1' });
    assert.equal(phase.job, 'job-42');
    assert.deepEqual(phase.files, sft.files, 'the exported data is still listed');
    const junior = registered.models.find((m) => m.name === 'junior')!;
    assert.equal(junior.active, 'sft-1');
    assert.deepEqual(junior.versions[0]!.producedBy, { phase: 'sft-juniors', at: junior.versions[0]!.producedBy!.at, job: 'job-42' });

    // A version registered over the failed GRPO phase: done, and its old failure is gone.
    registerTrainedModel(lab.loaded, 'senior', { version: 'grpo-1', phase: 'grpo-seniors' });
    const grpoDone = pipelineStatus(lab).phases.find((p) => p.phase.name === 'grpo-seniors')!.record;
    assert.equal(grpoDone.state, 'done');
    assert.equal(grpoDone.error, null);
    assert.deepEqual(grpoDone.checks, []);
    assert.throws(() => registerTrainedModel(lab.loaded, 'nope', { version: 'x' }), /model "nope" is not defined/);
    assert.throws(() => registerTrainedModel(lab.loaded, 'junior', { version: 'x', phase: 'nope' }), /no pipeline phase "nope"/);
  }, endpoint.url);
});

test('a phase that throws fails with the message and runs again once fixed; interrupted and running elsewhere; cancel', async (t) => {
  const dir = await workspace(t);
  editLab(dir, (cfg) => {
    cfg.training = { phases: [{ name: 'collect', kind: 'gather', limit: 2, samples: 2 }] };
    cfg.runner.concurrency = 1;
    // No dataset at all (init gave it the bundled sample): the phase has nothing to run on.
    cfg.datasets = {};
    delete cfg.runner.dataset;
  });
  await withLab(dir, async (lab) => {
    assert.equal(pipelineStatus(lab).declared, true);
    await assert.rejects(runPhase(lab, 'gather'), /no pipeline phase "gather" — the phases are collect/);
    const failed = await runPhase(lab, 'collect');
    assert.equal(failed.state, 'failed');
    assert.match(failed.error!, /no dataset given/);
    assert.equal(pipelineStatus(lab).phases[0]!.record.state, 'failed');
  });

  // Fixed: the workspace gets a dataset; the phase runs again from scratch.
  mkdirSync(join(dir, 'data'), { recursive: true });
  const rows = JSON.parse(readFileSync(PUBMEDQA, 'utf8')) as Record<string, { QUESTION: string; CONTEXTS: string[]; final_decision: string }>;
  const jsonl = Object.entries(rows)
    .slice(0, 10)
    .map(([id, r]) => JSON.stringify({ id, goal: r.QUESTION, context: r.CONTEXTS, expected_decision: r.final_decision }))
    .join('\n');
  writeFileSync(join(dir, 'data', 'tasks.jsonl'), jsonl + '\n');
  editLab(dir, (cfg) => {
    cfg.datasets = { tasks: { path: 'data/tasks.jsonl' } };
  });
  await withLab(dir, async (lab) => {
    const done = await runPhase(lab, 'collect', { samples: 1 });
    assert.equal(done.state, 'done', done.error ?? '');
    assert.equal(done.error, null);
    assert.equal(done.counts.rollouts, 2);

    // A 'running' record whose process is gone reads as failed "interrupted", and the phase can run again.
    const file = pipelineStateFile(lab.loaded);
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    writePhaseRecord(file, { ...emptyPhaseRecord('collect', 'gather'), state: 'running', startedAt: Date.now(), pid: dead, host: HOST });
    const interrupted = pipelineStatus(lab).phases[0]!.record;
    assert.equal(interrupted.state, 'failed');
    assert.match(interrupted.error!, /^interrupted/);
    // This process's own pid, but nothing here runs it: interrupted too.
    writePhaseRecord(file, { ...emptyPhaseRecord('collect', 'gather'), state: 'running', startedAt: Date.now(), pid: process.pid, host: HOST });
    assert.equal(pipelineStatus(lab).phases[0]!.record.state, 'failed');

    // A live process running it: refused.
    writePhaseRecord(file, { ...emptyPhaseRecord('collect', 'gather'), state: 'running', startedAt: Date.now(), pid: process.ppid, host: HOST });
    assert.equal(pipelineStatus(lab).phases[0]!.record.state, 'running');
    await assert.rejects(runPhase(lab, 'collect'), /already running \(pid \d+/);

    // Cancelled after the first rollout: the phase says cancelled (not failed), the run kept.
    writePhaseRecord(file, emptyPhaseRecord('collect', 'gather'));
    const controller = new AbortController();
    const cancelled = await runPhase(lab, 'collect', {
      signal: controller.signal,
      onUpdate: (r) => {
        if ((r.counts.rollouts ?? 0) >= 1) controller.abort();
      },
    });
    assert.equal(cancelled.state, 'cancelled');
    assert.equal(cancelled.error, 'cancelled');
    assert.equal(readPipelineState(pipelineStateFile(lab.loaded)).phases.collect!.state, 'cancelled');
    assert.ok(cancelled.runId);
    assert.equal(lab.store.getRun(cancelled.runId!)!.status, 'cancelled');
    assert.ok(lab.store.listRollouts({ runId: cancelled.runId! }).rollouts.length < 4);
  });
});

test('a registered model version is recorded by the next rollouts; rollback gives the previous one back', async (t) => {
  const dir = await workspace(t, { dataset: PUBMEDQA });
  editLab(dir, (cfg) => {
    cfg.training = { phases: [{ name: 'gather', kind: 'gather', limit: 1, samples: 1 }, { name: 'sft', kind: 'sft', agents: ['Geneticist'], model: 'junior' }] };
  });
  /** Runs the gather phase in a freshly opened lab and returns the model versions the rollout recorded. */
  const versionsOfNextRollout = async (): Promise<{ junior: string | null; senior: string | null; span: unknown; others: Array<string | null> }> =>
    withLab(dir, async (lab) => {
      const rec = await runPhase(lab, 'gather');
      assert.equal(rec.state, 'done', rec.error ?? '');
      const [r] = lab.store.listRollouts({ runId: rec.runId! }).rollouts;
      const agent = (name: string): string | null => r!.agents.find((a) => a.agent === name)!.modelVersion;
      const span = lab.store.getSpans(r!.id).find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Geneticist');
      // The phase trains the Geneticist only: the other juniors on "junior" keep what they ran.
      const others = ['Pharmacologist', 'Neurologist'].map(agent);
      return { junior: agent('Geneticist'), senior: agent('HypothesisRefiner'), span: span?.attributes[Attr.modelVersion], others };
    });

  assert.deepEqual(await versionsOfNextRollout(), { junior: null, senior: null, span: undefined, others: [null, null] });
  const loaded = await loadConfig(dir);
  registerTrainedModel(loaded, 'junior', { version: 'sft-1', phase: 'sft' });
  assert.deepEqual(await versionsOfNextRollout(), { junior: 'sft-1', senior: null, span: 'sft-1', others: [null, null] });
  registerTrainedModel(loaded, 'junior', { version: 'sft-2', phase: 'sft' });
  assert.deepEqual(await versionsOfNextRollout(), { junior: 'sft-2', senior: null, span: 'sft-2', others: [null, null] });

  assert.equal(rollbackModelVersion(loaded.labDir, 'junior').active, 'sft-1');
  assert.deepEqual(await versionsOfNextRollout(), { junior: 'sft-1', senior: null, span: 'sft-1', others: [null, null] });
  assert.equal(rollbackModelVersion(loaded.labDir, 'junior').active, null);
  assert.deepEqual(await versionsOfNextRollout(), { junior: null, senior: null, span: undefined, others: [null, null] });
});

test('against the simulated endpoint gather is a demo: the data phases leave its rollouts out and say how many, unless a phase (or the caller) includes them', async (t) => {
  const dir = await workspace(t, { dataset: PUBMEDQA });
  editLab(dir, (cfg) => {
    cfg.training = {
      groupSize: 2,
      phases: [
        { name: 'gather', kind: 'gather', limit: 1, samples: 2 },
        { name: 'sft', kind: 'sft', agents: ['Geneticist'], minReward: 0 },
        { name: 'sft-demo', kind: 'sft', agents: ['Geneticist'], minReward: 0, includeSimulated: true },
      ],
    };
  });
  await withLab(dir, async (lab) => {
    assert.equal(lab.simulated, true);
    const gather = await runPhase(lab, 'gather');
    assert.equal(gather.state, 'done', gather.error ?? '');
    assert.match(gather.note!, /^SIMULATED endpoint: these rollouts are a demo of the pipeline, not training data; the data phases leave them out unless they set "includeSimulated": true/);

    const sft = await runPhase(lab, 'sft');
    assert.equal(sft.state, 'failed');
    assert.match(sft.error!, /^pre-flight failed: all 2 rollouts \(train split\) are simulated, so nothing is left to train on: 2 simulated rollouts left out \(set "includeSimulated": true on the phase \(or pass --include-simulated\) to use them\)/);
    assert.equal(sft.counts.simulated, 2);
    assert.deepEqual(sft.files, []);

    const demo = await runPhase(lab, 'sft-demo');
    assert.equal(demo.state, 'done', demo.error ?? '');
    const manifest = JSON.parse(readFileSync(join(dir, '.rollout-lab', demo.files[1]!), 'utf8'));
    assert.equal(manifest.options.includeSimulated, true);
    assert.ok(manifest.counts.records > 0);
    assert.ok(demo.checks.some((c) => c.id === 'simulated-rollouts' && c.severity === 'warning'), 'included, they are still flagged');

    // The caller's flag does what the phase setting does.
    const flagged = await runPhase(lab, 'sft', { includeSimulated: true });
    assert.equal(flagged.state, 'done', flagged.error ?? '');
  });
});

test('a module graph has no reference pipeline: the status shows a ready-to-paste one built from its own agents and models; running an undeclared phase says the same', async (t) => {
  const dir = await workspace(t);
  editLab(dir, (cfg) => {
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.models.small = { model: 'qwen2.5:1.5b-instruct' };
    cfg.agents = {
      SqlWriter: { model: 'small', promptText: 'Write SQL.' },
      Checker: { model: 'strong', promptText: 'Check it.' },
      Rewriter: { model: 'small', promptText: 'Rewrite it.' },
    };
    cfg.bandit = { mode: 'off' };
  });
  const loaded = await loadConfig(dir);
  const status = pipelineStatus({ loaded });
  assert.equal(status.declared, false);
  assert.deepEqual(status.phases, []);
  assert.deepEqual(status.example, [
    { name: 'gather', kind: 'gather', samples: 8 },
    { name: 'sft-small', kind: 'sft', agents: ['SqlWriter', 'Rewriter'], model: 'small', minReward: 0.7 },
    { name: 'sft-strong', kind: 'sft', agents: ['Checker'], model: 'strong', minReward: 0.7 },
    { name: 'grpo-small', kind: 'grpo', agents: ['SqlWriter', 'Rewriter'], model: 'small' },
    { name: 'grpo-strong', kind: 'grpo', agents: ['Checker'], model: 'strong' },
  ]);
  // What it says to paste is valid lab.json.
  const pasted = JSON.parse(`{${pipelineExampleText(status.example!)}}`) as { training: { phases: unknown[] } };
  for (const p of pasted.training.phases) assert.ok(PhaseSchema.safeParse(p).success, JSON.stringify(p));
  assert.deepEqual(pasted.training.phases, status.example);
  assert.throws(() => findPhase(loaded.config, 'sft-juniors'), (e: unknown) => {
    assert.match((e as Error).message, /^no pipeline phase "sft-juniors": this lab runs its own graph \(graph\.kind "module"\) and lab\.json declares no training\.phases — add them to \.rollout-lab\/lab\.json, e\.g\. "training": \{"phases":\[\{"name":"gather"/);
    assert.equal((e as Error).message.split('\n').length, 1);
    return true;
  });
  // One model for the agents marked trainable: plain phase names.
  editLab(dir, (cfg) => {
    cfg.agents.SqlWriter.trainable = true;
    cfg.agents.Rewriter.trainable = true;
  });
  const marked = pipelineExample((await loadConfig(dir)).config);
  assert.deepEqual(marked.map((p) => [p.name, p.agents ?? null, p.model ?? null]), [
    ['gather', null, null],
    ['sft', ['SqlWriter', 'Rewriter'], 'small'],
    ['grpo', ['SqlWriter', 'Rewriter'], 'small'],
  ]);
  // A research-lab lab keeps its reference pipeline and needs no example.
  const research = pipelineStatus({ loaded: await loadConfig(await workspace(t)) });
  assert.equal(research.example, null);
  assert.deepEqual(research.phases.map((p) => p.phase.name), ['gather', 'sft-juniors', 'grpo-seniors', 'bandit-supervisor']);
});

test('a phase registers its model for the agents it trained: the Supervisor has its own model, a shared model keeps its other agents\' route, --agents is checked', async (t) => {
  const dir = await workspace(t, { dataset: PUBMEDQA });
  const fresh = await loadConfig(dir);
  assert.equal(fresh.config.agents.Supervisor!.model, 'supervisor', 'the default lab gives the Supervisor its own model');
  assert.deepEqual([fresh.config.models.junior!.logprobs, fresh.config.models.junior!.tokenIds, fresh.config.models.senior!.logprobs, fresh.config.models.senior!.tokenIds], [true, true, true, true]);
  registerTrainedModel(fresh, 'junior', { version: 'sft-1', phase: 'sft-juniors' });
  const routes = (name: string): Record<string, string | null> =>
    Object.fromEntries(pipelineStatus({ loaded: fresh }).models.find((m) => m.name === name)!.routes.map((r) => [r.agent, r.version]));
  assert.deepEqual(routes('junior'), { Geneticist: 'sft-1', Pharmacologist: 'sft-1', Neurologist: 'sft-1' });
  assert.deepEqual(routes('supervisor'), { Supervisor: null });
  assert.equal(pipelineStatus({ loaded: fresh }).models.find((m) => m.name === 'junior')!.versions[0]!.agents, undefined, 'the phase trained every agent of "junior": the version serves the model');

  // Two agent groups declared on one shared model: two versions, each routed to its group.
  editLab(dir, (cfg) => {
    cfg.agents.Supervisor.model = 'junior';
    cfg.training = {
      phases: [
        { name: 'sft-gp', kind: 'sft', agents: ['Geneticist', 'Pharmacologist'], model: 'junior' },
        { name: 'sft-n', kind: 'sft', agents: ['Neurologist'], model: 'junior' },
      ],
    };
  });
  const shared = await loadConfig(dir);
  registerTrainedModel(shared, 'junior', { version: 'gp-1', phase: 'sft-gp' });
  registerTrainedModel(shared, 'junior', { version: 'n-1', phase: 'sft-n' });
  const status = pipelineStatus({ loaded: await loadConfig(dir) });
  const junior = status.models.find((m) => m.name === 'junior')!;
  assert.deepEqual(junior.versions.map((v) => [v.version, v.agents]), [['sft-1', undefined], ['gp-1', ['Geneticist', 'Pharmacologist']], ['n-1', ['Neurologist']]]);
  assert.deepEqual(Object.fromEntries(junior.routes.map((r) => [r.agent, r.version])), { Geneticist: 'gp-1', Pharmacologist: 'gp-1', Neurologist: 'n-1', Supervisor: 'sft-1' });
  assert.match(status.phases.find((p) => p.phase.name === 'sft-n')!.record.note!, /version n-1 registered and active for Neurologist \(the model's other agents keep their version\)/);

  // Named agents: only the model's own, with the key to change otherwise.
  registerTrainedModel(shared, 'junior', { version: 'sup-1', agents: ['Supervisor'] });
  assert.deepEqual(Object.fromEntries(pipelineStatus({ loaded: await loadConfig(dir) }).models.find((m) => m.name === 'junior')!.routes.map((r) => [r.agent, r.version])), {
    Geneticist: 'gp-1',
    Pharmacologist: 'gp-1',
    Neurologist: 'n-1',
    Supervisor: 'sup-1',
  });
  assert.throws(
    () => registerTrainedModel(shared, 'junior', { version: 'x', agents: ['HypothesisRefiner', 'Nobody'] }),
    /"HypothesisRefiner" runs on model "senior"; "Nobody" is not an agent of lab\.json — a version of model "junior" can serve only its agents \(Geneticist, Pharmacologist, Neurologist, Supervisor\); name those, or set agents\.<Agent>\.model to "junior"/,
  );
});

test('the reference pipeline on a lab whose every model is simulated uses the simulated rollouts and says so; once a model has an endpoint they are left out again', async (t) => {
  const dir = await workspace(t, { dataset: PUBMEDQA });
  editLab(dir, (cfg) => {
    cfg.training = { groupSize: 2 };
  });
  await withLab(dir, async (lab) => {
    assert.equal(lab.simulated, true);
    const gather = await runPhase(lab, 'gather', { limit: 1, samples: 2 });
    assert.equal(gather.state, 'done', gather.error ?? '');
    assert.match(gather.note!, /^SIMULATED endpoint: .*while every model is simulated the reference pipeline's data phases use them/);
    const lines: string[] = [];
    const sft = await runPhase(lab, 'sft-juniors', { log: (l) => lines.push(l) });
    assert.equal(sft.state, 'done', sft.error ?? '');
    assert.match(sft.note!, /^SIMULATED: every model of the lab is on the simulated endpoint, so the reference pipeline uses its simulated rollouts/);
    assert.ok(lines.some((l) => /^phase sft-juniors: SIMULATED: every model/.test(l)), lines.join('\n'));
    const manifest = JSON.parse(readFileSync(join(dir, '.rollout-lab', sft.files[1]!), 'utf8'));
    assert.equal(manifest.options.includeSimulated, true);
  });
  // One model on a real endpoint: simulated rollouts are no longer the only data there is.
  const endpoint = await startSimServer();
  t.after(() => endpoint.close());
  editLab(dir, (cfg) => {
    cfg.models.strong.baseUrl = endpoint.url;
  });
  await withLab(dir, async (lab) => {
    const sft = await runPhase(lab, 'sft-juniors');
    assert.equal(sft.state, 'failed');
    assert.match(sft.error!, /^pre-flight failed: all 2 rollouts \(train split\) are simulated, so nothing is left to train on.* — fix: /);
  });
});
