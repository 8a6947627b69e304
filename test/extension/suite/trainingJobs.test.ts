import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'mocha';
import * as vscode from 'vscode';
import { FAKE_PYTHON_VERSION, fakePythons } from '../../fakes/pythons';
import { api, cli, ensureRun, REPO, waitFor, workspaceDir, type SnapshotItem } from './helpers';

/** The part of the DryRun Launch Training Phase returns with `dryRun: true` that these tests read. */
interface DryRunLike {
  spec: { id: string; phase: { name: string; kind: string }; model: { base: string; backend: string }; hyperparameters: Record<string, unknown>; env: string[]; command: string[] };
  plan: { target: string; steps: Array<{ title: string; argv: string[]; cwd?: string; env?: string[] }> };
  data: Record<string, number>;
}

interface JobRecordLike {
  id: string;
  kind: string;
  phase: string;
  state: string;
  targetName: string;
  targetKind: string;
  error: string | null;
  registered: unknown;
  serveJob: string | null;
  result: { status?: string; adapter?: string } | null;
}


interface TrainingJobsApiLike {
  isFollowing(folder: string, id: string): boolean;
  launchSummary(): string[] | undefined;
  curves(folder: string, id: string): { notified: Array<{ type: string; params: { points?: unknown[] } }>; isReady: boolean } | undefined;
}

// A real training job needs the trainer's CPU path: Debian's python3 with torch, PyYAML and jsonschema.
// The trainer's venv (scripts/setupTrainerVenv.sh; .ci/run makes it): python-trainer's pinned stack.
const PYTHON = join(REPO, '.venv-trainer', 'bin', 'python');
const trainerRuns = spawnSync(PYTHON, ['-c', 'import torch, transformers, peft, tokenizers, yaml, jsonschema'], { encoding: 'utf8' }).status === 0;
const JUNIORS = ['Geneticist', 'Pharmacologist', 'Neurologist'];
const SECRET_NAME = 'ROLLOUT_LAB_TEST_TRAINER_TOKEN';
const SECRET = `hf_test_${Math.random().toString(36).slice(2)}`;


async function snapshot(): Promise<SnapshotItem[]> {
  return vscode.commands.executeCommand<SnapshotItem[]>('rolloutLab.refreshTraining');
}

describe('training jobs', () => {
  const dir = workspaceDir();
  const labFile = join(dir, '.rollout-lab', 'lab.json');
  let original = '';

  before(async function () {
    this.timeout(120_000);
    await ensureRun();
    original = readFileSync(labFile, 'utf8');
    // The trainer on this machine, on a one-layer Qwen2 built from a config (its tokenizer trained on the exported data, nothing downloaded);
    // an SFT phase that takes every succeeded rollout (the simulated rewards are modest).
    const config = JSON.parse(original) as Record<string, unknown>;
    config.training = {
      ...(config.training as object | undefined),
      trainer: {
        backend: 'transformers',
        baseModel: 'qwen2-test',
        modelConfig: { model_type: 'qwen2', vocab_size: 512, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 8192, tie_word_embeddings: true },
        secrets: [SECRET_NAME],
      },
      targets: { local: { kind: 'local', python: PYTHON } },
      phases: [
        { name: 'sft-juniors', kind: 'sft', agents: JUNIORS, model: 'junior', minReward: 0, includeSimulated: true, hyperparameters: { batch_size: 1, grad_accum: 1, max_length: 8192 } },
        // No "model": a job of this phase is never served, whoever follows it.
        { name: 'sft-plain', kind: 'sft', agents: JUNIORS, minReward: 0, includeSimulated: true, hyperparameters: { batch_size: 1, grad_accum: 1, max_length: 8192 } },
      ],
    };
    writeFileSync(labFile, JSON.stringify(config, null, 2));
    ((await api()).service as { invalidate(folder?: string): void }).invalidate(dir);
    await vscode.commands.executeCommand('rolloutLab.setApiKey', { envVar: SECRET_NAME, value: SECRET });
  });

  after(async () => {
    writeFileSync(labFile, original);
    ((await api()).service as { invalidate(folder?: string): void }).invalidate(dir);
    await vscode.commands.executeCommand('rolloutLab.setApiKey', { envVar: SECRET_NAME, value: '' });
  });

  it('Launch Training Phase with dryRun exports the data and returns the spec and the exact command, launching nothing', async function () {
    this.timeout(120_000);
    const dry = await vscode.commands.executeCommand<DryRunLike>('rolloutLab.launchTrainingPhase', { phase: 'sft', target: 'local', dryRun: true });
    assert.equal(dry.spec.phase.name, 'sft-juniors');
    assert.equal(dry.spec.phase.kind, 'sft');
    assert.equal(dry.spec.model.base, 'qwen2-test');
    assert.equal(dry.spec.model.backend, 'transformers');
    assert.ok(dry.data.records! > 0, `exported records: ${JSON.stringify(dry.data)}`);
    assert.equal(dry.plan.target, 'local');
    assert.equal(dry.plan.steps.length, 1);
    assert.deepEqual(dry.plan.steps[0]!.argv, [PYTHON, '-m', 'rollout_trainer', 'sft', '--spec', 'job.yaml']);
    // The key from SecretStorage reaches the job by name only.
    assert.deepEqual(dry.spec.env, [SECRET_NAME]);
    assert.ok(dry.plan.steps[0]!.env?.includes(SECRET_NAME), `env names: ${dry.plan.steps[0]!.env?.join(', ')}`);
    assert.ok(!JSON.stringify(dry).includes(SECRET), 'the value of a secret is never in the plan');
    // Nothing was launched: no Jobs section.
    assert.ok(!(await snapshot()).some((s) => s.label === 'Jobs'), 'a dry run launches no job');
  });

  it('rejects a hyper-parameter the trainer does not know, before anything is launched', async () => {
    await assert.rejects(
      Promise.resolve(vscode.commands.executeCommand('rolloutLab.launchTrainingPhase', { phase: 'sft', target: 'local', hyperparameters: { lora_rank: 8 }, dryRun: true })),
      /unknown sft hyper-parameter "lora_rank"/,
    );
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.launchTrainingPhase', { phase: 'sft', serve: 'yes' })), /serve/);
  });

  it('launches an SFT job of a one-layer Qwen2 built from a config on this machine, follows it to success, and the Jobs section and the curves show it', async function () {
    if (!trainerRuns) {
      console.log(`SKIPPED: ${PYTHON} with torch, transformers, peft, yaml and jsonschema is needed for a real training job (bash scripts/setupTrainerVenv.sh)`);
      this.skip();
    }
    this.timeout(420_000);
    const rec = await vscode.commands.executeCommand<JobRecordLike>('rolloutLab.launchTrainingPhase', { phase: 'sft', target: 'local', hyperparameters: { max_steps: 2 }, serve: false });
    assert.equal(rec.state, 'succeeded', rec.error ?? '');
    assert.equal(rec.kind, 'sft');
    assert.equal(rec.phase, 'sft-juniors');
    assert.equal(rec.targetName, 'local');
    assert.equal(rec.registered, null, 'serve: false registers nothing');
    assert.equal(rec.serveJob, null);
    assert.equal(rec.result?.status, 'succeeded');
    const jobs = (await api()) as unknown as { trainingJobs: TrainingJobsApiLike };
    assert.equal(jobs.trainingJobs.isFollowing(dir, rec.id), false, 'the follower let go of the finished job');

    const jobDir = join(dir, '.rollout-lab', 'training', 'jobs', rec.id);
    const log = readFileSync(join(jobDir, 'job.log'), 'utf8');
    assert.match(log, /^@rollout-trainer \{"event":\s*"metrics"/m);
    assert.ok(existsSync(join(jobDir, String(rec.result?.adapter ?? 'out/adapter'))), 'the adapter came back');
    for (const f of ['job.log', 'job.json', join('bundle', 'job.yaml')]) assert.ok(!readFileSync(join(jobDir, f), 'utf8').includes(SECRET), `no secret in ${f}`);

    const section = await waitFor('the Jobs section with the job', async () => {
      const s = (await snapshot()).find((i) => i.label === 'Jobs');
      return s?.children?.some((c) => c.jobId === rec.id) ? s : undefined;
    });
    const item = section.children!.find((c) => c.jobId === rec.id)!;
    assert.match(item.label, /^sft-juniors · (\w{3} \d{1,2} )?\d\d:\d\d/, 'the phase and start time tell jobs apart (ids share their start)');
    assert.equal(item.icon, 'pass');
    assert.equal(item.contextValue, 'rolloutLab.training.job.sft.succeeded');
    assert.match(item.description!, /^sft · succeeded · local · \d+ (s|min)/);
    const loss = item.children?.find((c) => c.label === 'loss');
    assert.ok(loss, `a loss child: ${JSON.stringify(item.children)}`);
    assert.match(loss.description!, /^\S+ {2}[▁▂▃▄▅▆▇█]{2} {2}step 2$/);
    assert.ok(item.children!.some((c) => c.label === 'Open Log'), 'an Open Log child');
    const phases = (await snapshot()).find((i) => i.label === 'Pipeline')!.children!;
    assert.match(phases.find((p) => p.label === 'sft-juniors')!.contextValue!, /^rolloutLab\.training\.phase\.done\.sft$/);

    // The curves panel gets the job's two metrics events.
    await vscode.commands.executeCommand('rolloutLab.openTrainingCurves', { id: rec.id });
    const panel = await waitFor('the curves panel', () => jobs.trainingJobs.curves(dir, rec.id));
    const reset = await waitFor('the points sent to the panel', () => panel.notified.find((m) => m.type === 'curves/reset'));
    assert.equal(reset.params.points!.length, 2);
    await waitFor('the curves webview to be ready', () => panel.isReady);

    assert.equal(await vscode.commands.executeCommand<string>('rolloutLab.showTrainingJobLog', { id: rec.id }), join(jobDir, 'job.log'));
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.cancelTrainingJob', { id: rec.id, confirm: true })), /not running/);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Launch Training Phase… shows what will run to confirm (rows after pre-flight, target, backend…); Dry Run starts nothing', async function () {
    this.timeout(180_000);
    const jobs = (await api()) as unknown as { trainingJobs: TrainingJobsApiLike };
    const jobsDir = join(dir, '.rollout-lab', 'training', 'jobs');
    const before = existsSync(jobsDir) ? readdirSync(jobsDir).sort() : [];
    let done = false;
    const launching = Promise.resolve(vscode.commands.executeCommand<DryRunLike | undefined>('rolloutLab.launchTrainingPhase')).finally(() => (done = true));
    // Each picker's default (Enter) until the summary shows: phase, target, hyper-parameters, serve (one backend and a model built from a config: neither is asked).
    let summary: string[] | undefined;
    for (let i = 0; !done && i < 400; i++) {
      summary = jobs.trainingJobs.launchSummary();
      if (summary) break;
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(summary, 'the summary to confirm was shown');
    const line = (label: string): string => summary!.find((l) => l.startsWith(`${label}: `)) ?? '';
    assert.equal(line('Phase'), 'Phase: sft-juniors (sft)');
    assert.equal(line('Agents'), `Agents: ${JUNIORS.join(', ')}`);
    assert.match(line('Model'), /^Model: junior · base qwen2-test/);
    assert.match(line('Rows'), /^Rows: [1-9]\d* examples from [1-9]\d* rollouts? after pre-flight/);
    // The target says which python runs the job here and what that means (this machine may or may not have torch).
    assert.match(line('Target'), /^Target: local · CPU · \S+\/\.venv-trainer\/bin\/python \d+\.\d+\.\d+ (with torch \S+ \(training\.targets\.local\.python\)$|\(training\.targets\.local\.python\) without torch: only Dry Run works here)/);
    assert.match(line('Backend'), /^Backend: transformers — needs transformers, peft and TRL on the target/);
    assert.match(line('Hyper-parameters'), /^Hyper-parameters: lr /);
    // Launch, then Dry Run: the second choice.
    await vscode.commands.executeCommand('workbench.action.quickOpenSelectNext');
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    const dry = await launching;
    assert.ok(dry && dry.spec, 'Dry Run returns what would run');
    assert.equal(dry.spec.model.backend, 'transformers');
    assert.ok(dry.plan.steps.length > 0);
    assert.equal(jobs.trainingJobs.launchSummary(), undefined);
    assert.deepEqual(existsSync(jobsDir) ? readdirSync(jobsDir).sort() : [], before, 'no job was launched');
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
  });

  it('Launch Training Phase… on a machine whose python has no torch still shows the summary, says only Dry Run works, and Dry Run starts nothing', async function () {
    this.timeout(180_000);
    const jobs = (await api()) as unknown as { trainingJobs: TrainingJobsApiLike };
    const pythons = join(dir, '.rollout-lab', 'test-pythons');
    const bare = join(fakePythons(pythons, { python3: null }), 'python3');
    const config = JSON.parse(readFileSync(labFile, 'utf8')) as { training: { targets: Record<string, unknown> } };
    const withTorchTarget = readFileSync(labFile, 'utf8');
    config.training.targets = { local: { kind: 'local', python: bare } };
    writeFileSync(labFile, JSON.stringify(config, null, 2));
    ((await api()).service as { invalidate(folder?: string): void }).invalidate(dir);
    const jobsDir = join(dir, '.rollout-lab', 'training', 'jobs');
    const before = existsSync(jobsDir) ? readdirSync(jobsDir).sort() : [];
    try {
      let done = false;
      const launching = Promise.resolve(vscode.commands.executeCommand<DryRunLike | undefined>('rolloutLab.launchTrainingPhase')).finally(() => (done = true));
      let summary: string[] | undefined;
      for (let i = 0; !done && i < 400; i++) {
        summary = jobs.trainingJobs.launchSummary();
        if (summary) break;
        await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.ok(summary, `the summary was shown, not an error (the command ${done ? 'ended' : 'still asks'})`);
      const target = summary.find((l) => l.startsWith('Target: ')) ?? '';
      assert.equal(target, `Target: local · CPU · ${bare} ${FAKE_PYTHON_VERSION} (training.targets.local.python) without torch: only Dry Run works here; install python-trainer's stack (${bare} -m pip install -r python-trainer/requirements.txt; or bash scripts/setupTrainerVenv.sh in a clone of Rollout Lab makes .venv-trainer, which the local target uses first) or pick a remote target`);
      assert.match(summary.find((l) => l.startsWith('Rows: ')) ?? '', /^Rows: [1-9]\d* examples/, 'the pre-flight and export ran');
      await vscode.commands.executeCommand('workbench.action.quickOpenSelectNext');
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      const dry = (await launching) as (DryRunLike & { python?: { torch: string | null } }) | undefined;
      assert.ok(dry?.spec, 'Dry Run returns what would run');
      assert.equal(dry.python?.torch, null);
      assert.equal(dry.plan.steps[0]!.argv[0], bare, 'the plan runs the python the target names');
      assert.equal((await api()).contextKey('rolloutLab.dryRunShown'), true, "the walkthrough's Train (dry run) step ticks off");
      assert.deepEqual(existsSync(jobsDir) ? readdirSync(jobsDir).sort() : [], before, 'no job was launched');
      // Launch itself still needs torch, and says so.
      await assert.rejects(
        Promise.resolve(vscode.commands.executeCommand('rolloutLab.launchTrainingPhase', { phase: 'sft-plain', serve: false })),
        /training\.targets\.local\.python is .*python3, which cannot import torch/,
      );
    } finally {
      writeFileSync(labFile, withTorchTarget);
      rmSync(pythons, { recursive: true, force: true });
      ((await api()).service as { invalidate(folder?: string): void }).invalidate(dir);
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  it('Launch Training Phase takes a backend: the spec of the dry run has it', async function () {
    this.timeout(120_000);
    const dry = await vscode.commands.executeCommand<DryRunLike>('rolloutLab.launchTrainingPhase', { phase: 'sft-juniors', backend: 'transformers', dryRun: true, serve: false });
    assert.equal(dry.spec.model.backend, 'transformers');
  });

  it('Launch Training Phase… from the palette takes each picker\'s default and launches; Cancel Job stops it and the job stays cancelled', async function () {
    if (!trainerRuns) {
      console.log(`SKIPPED: ${PYTHON} with torch, transformers, peft, yaml and jsonschema is needed to launch a training job`);
      this.skip();
    }
    this.timeout(180_000);
    // No argument: phase, target, base model, hyper-parameters, serve — each answered with its default (Enter).
    let done = false;
    const launching = Promise.resolve(vscode.commands.executeCommand<JobRecordLike>('rolloutLab.launchTrainingPhase')).finally(() => (done = true));
    for (let i = 0; !done && i < 400; i++) {
      await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
      await new Promise((r) => setTimeout(r, 250));
    }
    const rec = await launching;
    assert.ok(rec, 'the pickers were answered and the job launched');
    assert.equal(rec.state, 'running', rec.error ?? '');
    assert.equal(rec.phase, 'sft-juniors');
    assert.equal(rec.targetName, 'local');
    const jobs = (await api()) as unknown as { trainingJobs: TrainingJobsApiLike };
    assert.equal(jobs.trainingJobs.isFollowing(dir, rec.id), true, 'the window follows the job it launched');

    const cancelled = await vscode.commands.executeCommand<JobRecordLike>('rolloutLab.cancelTrainingJob', { id: rec.id, confirm: true });
    assert.equal(cancelled.state, 'cancelled');
    await waitFor('the follower to let go', () => !jobs.trainingJobs.isFollowing(dir, rec.id));
    // The follower stopped before the kill, so nothing records the killed process as a failure afterwards.
    await new Promise((r) => setTimeout(r, 1500));
    const record = JSON.parse(readFileSync(join(dir, '.rollout-lab', 'training', 'jobs', rec.id, 'job.json'), 'utf8')) as JobRecordLike;
    assert.equal(record.state, 'cancelled');
    const item = await waitFor('the cancelled job in the view', async () =>
      (await snapshot()).find((i) => i.label === 'Jobs')?.children?.find((c) => c.jobId === rec.id && c.icon === 'circle-slash'),
    );
    assert.equal(item.contextValue, 'rolloutLab.training.job.sft.cancelled');
    // Its phase says cancelled too, not failed.
    const phase = await waitFor('the phase marked cancelled', async () =>
      (await snapshot()).find((i) => i.label === 'Pipeline')?.children?.find((c) => c.label === 'sft-juniors' && /cancelled/.test(c.description ?? '')),
    );
    assert.match(phase.description ?? '', /^sft · cancelled/);
    assert.doesNotMatch(phase.description ?? '', /failed/);
    assert.equal(phase.icon, 'circle-slash');
  });

  it('a job the CLI launched detached shows in the Jobs section, and Reattach follows it to its end', async function () {
    if (!trainerRuns) {
      console.log(`SKIPPED: ${PYTHON} with torch, transformers, peft, yaml and jsonschema is needed to launch a training job`);
      this.skip();
    }
    this.timeout(240_000);
    const r = await cli(['train', '--workspace', dir, '--phase', 'sft-plain', '--target', 'local', '--set', 'max_steps=2', '--detach', '--json']);
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const launched = JSON.parse(r.stdout) as JobRecordLike;
    assert.equal(launched.state, 'running');
    await waitFor('the CLI job in the view', async () => (await snapshot()).find((i) => i.label === 'Jobs')?.children?.some((c) => c.jobId === launched.id));
    const jobs = (await api()) as unknown as { trainingJobs: TrainingJobsApiLike };
    assert.equal(jobs.trainingJobs.isFollowing(dir, launched.id), false, 'nobody follows a detached job');

    const rec = await vscode.commands.executeCommand<JobRecordLike>('rolloutLab.reattachTrainingJob', { id: launched.id });
    assert.equal(rec.id, launched.id);
    // Only a follower fetches the outputs and records the end: succeeded means this window's follower finished it.
    const file = join(dir, '.rollout-lab', 'training', 'jobs', launched.id, 'job.json');
    const done = await waitFor('the reattached job to succeed', () => {
      const j = JSON.parse(readFileSync(file, 'utf8')) as JobRecordLike;
      return j.state === 'succeeded' || j.state === 'failed' ? j : undefined;
    }, 180_000);
    assert.equal(done.state, 'succeeded', done.error ?? '');
    assert.equal(done.serveJob, null, 'a phase without a model is not served');
    await waitFor('the follower to let go', () => !jobs.trainingJobs.isFollowing(dir, launched.id));
  });

  it('Start Online Training… checks its argument and names the phases there are', async () => {
    await assert.rejects(
      Promise.resolve(vscode.commands.executeCommand('rolloutLab.startOnlineTraining', { phase: 'nope', target: 'local', rounds: 1 })),
      /no pipeline phase "nope"/,
    );
    await assert.rejects(Promise.resolve(vscode.commands.executeCommand('rolloutLab.startOnlineTraining', { rounds: 0 })), /rounds/);
  });
});
