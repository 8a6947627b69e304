import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { JobRecord } from '../../src/core/train/jobs/jobRecord';
import type { DryRun } from '../../src/core/train/jobs/jobDraft';
import type { TrainResult } from '../../src/core/train/jobs/trainPhase';
import { cli, cliAsync, json, REPO, tempWorkspace, type RunDoc, type SpanDoc } from './cliHelpers';
import { FAKE_PYTHON_VERSION, fakePythons } from '../fakes/pythons';

// The trainer's venv (scripts/setupTrainerVenv.sh; .ci/run makes it): python-trainer's pinned stack.
const PYTHON = join(REPO, '.venv-trainer/bin/python');
const trainerRuns = spawnSync(PYTHON, ['-c', 'import torch, transformers, peft, tokenizers, yaml, jsonschema'], { encoding: 'utf8' }).status === 0;
const noTrainer = trainerRuns ? false : `${PYTHON} with torch, transformers, peft, yaml and jsonschema is needed for a real training job (bash scripts/setupTrainerVenv.sh)`;
if (noTrainer && process.env.CI) throw new Error(noTrainer);

const SECRET = 'hf_secret_value_never_written_5f2a';
const JUNIORS = ['Geneticist', 'Pharmacologist', 'Neurologist'];
const SENIORS = ['HypothesisRefiner', 'ProtocolDesigner'];

let ws: string;
/** A python without torch, as a machine without the trainer has. */
let noTorchPython: string;
before(() => {
  ws = tempWorkspace();
  noTorchPython = join(fakePythons(join(ws, 'pythons'), { python3: null }), 'python3');
  // Short tasks, one-line prompts and no tools keep every conversation within the small model's context,
  // so real training and serving on the CPU take seconds, not minutes.
  const tasks = join(ws, 'tasks.jsonl');
  const rows = [
    ['t1', 'Does APOE4 raise amyloid-beta in the ageing brain?', 'APOE4 carriers had higher amyloid-beta in 40 brains.', 'yes'],
    ['t2', 'Does GLP-1 signalling slow cognitive decline?', 'A GLP-1 agonist slowed decline in mice only.', 'maybe'],
    ['t3', 'Is TREM2 loss protective?', 'TREM2 loss raised plaque burden in two models.', 'no'],
  ];
  writeFileSync(tasks, rows.map(([id, goal, context, d]) => JSON.stringify({ id, goal, context, expected_decision: d })).join('\n') + '\n');
  assert.equal(cli(['init', '--workspace', ws, '--dataset', tasks]).code, 0);
  const file = join(ws, '.rollout-lab/lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  for (const [name, agent] of Object.entries<{ tools: string[]; prompt?: string }>(cfg.agents)) {
    agent.tools = [];
    writeFileSync(join(ws, '.rollout-lab', agent.prompt ?? `prompts/${name}.md`), `You are the ${name}. Reply with one JSON object.\n`);
  }
  // GRPO's pre-flight wants the behaviour policy's logprobs on the seniors' calls.
  cfg.models.senior.logprobs = true;
  // The served small model writes no protocol anyway: a few tokens per call keep the rollout against it short.
  cfg.models.senior.maxTokens = 8;
  cfg.training = {
    groupSize: 2,
    // A one-layer Qwen2 built from this config on the transformers backend, its tokenizer trained on the exported data: nothing is downloaded.
    trainer: { backend: 'transformers', baseModel: 'qwen2-test', modelConfig: { model_type: 'qwen2', vocab_size: 512, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 2048, tie_word_embeddings: true }, secrets: ['HF_TOKEN'] },
    targets: {
      cpu: { kind: 'local', python: PYTHON },
      bare: { kind: 'local', python: noTorchPython },
      box: { kind: 'ssh', host: 'trainer@gpu-box.example', port: 2222, identityFile: '/home/me/.ssh/id_ed25519', gpuType: 'A100' },
      cloud: { kind: 'skypilot', gpuType: 'H100', gpus: 1, useSpot: true },
      cluster: { kind: 'k8s', namespace: 'ml', gpus: 1 },
    },
    // The rollouts come from the simulated endpoint (and the served small model): the phases train on them on purpose.
    phases: [
      { name: 'gather', kind: 'gather', samples: 2 },
      { name: 'sft-juniors', kind: 'sft', agents: JUNIORS, model: 'junior', minReward: 0, includeSimulated: true, hyperparameters: { max_steps: 2, batch_size: 1, grad_accum: 1, max_length: 2048 } },
      {
        name: 'grpo-seniors',
        kind: 'grpo',
        agents: SENIORS,
        model: 'senior',
        includeSimulated: true,
        hyperparameters: { max_steps: 2, batch_size: 2, epochs: 1, max_prompt_length: 1536, max_response_length: 512 },
      },
      { name: 'sft-plain', kind: 'sft', agents: JUNIORS, model: 'junior', minReward: 0 },
    ],
  };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  const run = json<RunDoc>(cli(['run', '--workspace', ws, '--limit', '2', '--samples', '2', '--json']));
  assert.equal(run.succeeded, 4);
});
after(() => {
  // A failed assertion must not leave a served policy running.
  for (const j of json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json']))) {
    if (['launching', 'running', 'fetching'].includes(j.state)) cli(['jobs', 'cancel', j.id, '--workspace', ws]);
  }
  rmSync(ws, { recursive: true, force: true });
});

const env = { HF_TOKEN: SECRET };

test('train --dry-run: the spec and the exact commands for each kind of target, no secret anywhere, nothing launched', () => {
  const expectFirst: Record<string, RegExp> = { cpu: /\/\.venv-trainer\/bin\/python$/, box: /^(ssh|scp|tar)$/, cloud: /^sky$/, cluster: /^kubectl$/ };
  for (const target of ['cpu', 'box', 'cloud', 'cluster']) {
    const r = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', target, '--dry-run', '--json'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), `${target}: the secret's value is never shown`);
    const dry = JSON.parse(r.stdout) as DryRun;
    assert.equal(dry.spec.phase.name, 'sft-juniors');
    assert.equal(dry.spec.phase.kind, 'sft');
    assert.deepEqual(dry.spec.env, ['HF_TOKEN']);
    assert.equal(dry.spec.hyperparameters.max_steps, 2);
    assert.ok(dry.data.records! > 0, 'the exported data is counted');
    assert.ok(dry.plan.steps.length > 0);
    const all = dry.plan.steps.flatMap((s) => s.argv);
    assert.match(dry.plan.steps.find((s) => expectFirst[target]!.test(s.argv[0]!))?.argv[0] ?? '', expectFirst[target]!, `${target}: ${JSON.stringify(dry.plan.steps.map((s) => s.argv[0]))}`);
    assert.ok(all.some((a) => a.includes('rollout_trainer') || a.includes('task.yaml') || a.includes('k8s.yaml') || a.endsWith('.yaml')), `${target}: the trainer or its manifest is in the plan`);
  }
  // Nothing was launched: no job records.
  const jobs = json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json']));
  assert.deepEqual(jobs, []);
  const text = cli(['train', '--workspace', ws, '--phase', 'grpo', '--target', 'cloud', '--dry-run'], env);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /^DRY RUN — nothing is launched\. Job grpo-seniors-/);
  assert.match(text.stdout, /job\.yaml:\n {2}# Rollout Lab training job/);
  // --backend names the trainer's backend for this job: transformers, the only one; the removed tiny one says what to use instead.
  const b = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'cpu', '--backend', 'transformers', '--dry-run', '--json'], env);
  assert.equal(b.code, 0, b.stderr);
  const dry = JSON.parse(b.stdout) as DryRun;
  assert.equal(dry.spec.model.backend, 'transformers');
  assert.equal(dry.spec.model.config?.model_type, 'qwen2', 'the model is built from training.trainer.modelConfig');
  const bad = cli(['train', '--workspace', ws, '--phase', 'sft', '--backend', 'jax', '--dry-run'], env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--backend takes transformers .*, the only backend, not "jax"/);
  const tiny = cli(['train', '--workspace', ws, '--phase', 'sft', '--backend', 'tiny', '--dry-run'], env);
  assert.equal(tiny.code, 2);
  assert.match(tiny.stderr, /--backend: the tiny backend was removed — use backend "transformers" with training\.trainer\.modelConfig/);
});

test('train --dry-run needs no torch: on a local python without it the plan runs that python and says only Dry Run works; a launch refuses it', () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'bare', '--dry-run', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  const dry = JSON.parse(r.stdout) as DryRun;
  assert.equal(dry.python?.torch, null);
  assert.equal(dry.python?.version, FAKE_PYTHON_VERSION);
  assert.equal(dry.plan.steps[0]!.argv[0], noTorchPython, 'the plan runs the python the target names');
  assert.ok(dry.data.records! > 0, 'the pre-flight and export ran');
  const text = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'bare', '--dry-run'], env);
  assert.equal(text.code, 0, text.stderr);
  const [head, python] = text.stdout.split('\n');
  assert.match(head!, /^DRY RUN — nothing is launched\. /);
  assert.equal(python, `python: ${noTorchPython} ${FAKE_PYTHON_VERSION} (training.targets.bare.python) without torch: only Dry Run works here; install python-trainer's stack (${noTorchPython} -m pip install -r python-trainer/requirements.txt; or bash scripts/setupTrainerVenv.sh in a clone of Rollout Lab makes .venv-trainer, which the local target uses first) or pick a remote target`);
  const launch = cli(['train', '--workspace', ws, '--phase', 'sft-plain', '--target', 'bare', '--no-serve'], env);
  assert.equal(launch.code, 2, launch.stdout + launch.stderr);
  assert.match(launch.stderr, /training\.targets\.bare\.python is .*python3, which cannot import torch \(ModuleNotFoundError: No module named 'torch'\)/);
  assert.deepEqual(json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json'])), [], 'nothing was launched');
});

test('train: a phase that does not include simulated rollouts refuses them and says how many; --include-simulated takes them', () => {
  const plain = cli(['train', '--workspace', ws, '--phase', 'sft-plain', '--target', 'cpu', '--dry-run'], env);
  assert.equal(plain.code, 2, plain.stdout + plain.stderr);
  assert.match(plain.stderr, /phase sft-plain: pre-flight failed: all 4 rollouts \(train split\) are simulated, so nothing is left to train on: 4 simulated rollouts left out \(set "includeSimulated": true on the phase \(or pass --include-simulated\) to use them\)/);
  const flagged = cli(['train', '--workspace', ws, '--phase', 'sft-plain', '--target', 'cpu', '--dry-run', '--include-simulated', '--json'], env);
  assert.equal(flagged.code, 0, flagged.stderr);
  assert.ok((JSON.parse(flagged.stdout) as DryRun).data.records! > 0);
});

test('train: bad targets, phases and hyper-parameters are usage errors that say what to do', () => {
  const nope = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'nowhere']);
  assert.equal(nope.code, 2);
  assert.match(nope.stderr, /no target "nowhere" — use local, ssh, skypilot, k8s or slurm, or one of training\.targets \(cpu, bare, box, cloud, cluster\)/);
  const hp = cli(['train', '--workspace', ws, '--phase', 'sft', '--set', 'lora_rank=8', '--dry-run']);
  assert.equal(hp.code, 2);
  assert.match(hp.stderr, /unknown sft hyper-parameter "lora_rank" — known: learning_rate/);
  const phase = cli(['train', '--workspace', ws, '--phase', 'ppo']);
  assert.equal(phase.code, 2);
  assert.match(phase.stderr, /no pipeline phase "ppo"/);
  const none = cli(['train', '--workspace', ws]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /name the phase/);
});

test('train on this machine: SFT of the juniors on a one-layer Qwen2 built from a config, then GRPO of the seniors served and used by the next rollouts', { skip: noTrainer }, () => {
  const sft = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'cpu', '--no-serve', '--json'], env);
  assert.equal(sft.code, 0, sft.stderr.slice(-3000));
  const s = JSON.parse(sft.stdout) as TrainResult;
  assert.equal(s.job!.state, 'succeeded', s.job!.error ?? '');
  assert.equal(s.job!.registered, null, '--no-serve registers nothing');
  assert.equal(s.phase.state, 'done');
  assert.match(s.phase.note!, /serve it to use it: rollout-lab jobs serve /);
  const sftDir = join(ws, '.rollout-lab/training/jobs', s.job!.id);
  const result = JSON.parse(readFileSync(join(sftDir, 'out/result.json'), 'utf8'));
  assert.equal(result.status, 'succeeded');
  assert.ok(existsSync(join(sftDir, String(result.adapter))), 'the adapter came back');
  const log = readFileSync(join(sftDir, 'job.log'), 'utf8');
  assert.match(log, /^@rollout-trainer \{"event":\s*"metrics"/m);
  assert.ok(!log.includes(SECRET));
  const spec = parse(readFileSync(join(sftDir, 'bundle/job.yaml'), 'utf8'));
  assert.deepEqual(spec.env, ['HF_TOKEN']);
  assert.ok(!readFileSync(join(sftDir, 'bundle/job.yaml'), 'utf8').includes(SECRET));

  const grpo = cli(['train', '--workspace', ws, '--phase', 'grpo-seniors', '--target', 'cpu', '--json'], env);
  assert.equal(grpo.code, 0, grpo.stderr.slice(-3000));
  const g = JSON.parse(grpo.stdout) as TrainResult;
  assert.equal(g.job!.state, 'succeeded', g.job!.error ?? '');
  assert.deepEqual(g.job!.registered, { model: 'senior', version: g.job!.id });
  assert.ok(g.serve?.serveUrl?.startsWith('http://127.0.0.1:'), 'the result is served on this machine');
  assert.equal(g.phase.state, 'done');
  assert.deepEqual(g.phase.produced, { kind: 'model', id: g.job!.id });
  const status = json<{ models: Array<{ name: string; active: string | null }> }>(cli(['pipeline', 'status', '--workspace', ws, '--json']));
  assert.equal(status.models.find((m) => m.name === 'senior')!.active, g.job!.id);

  try {
    // The next rollout's senior agents call the served policy (the small model's text is no protocol: the graph records that and goes on).
    const next = json<RunDoc>(cli(['run', '--workspace', ws, '--limit', '1', '--json']));
    assert.equal(next.rollouts, 1);
    const traces = json<{ rollouts: Array<{ id: string; runId: string }> }>(cli(['traces', '--workspace', ws, '--run', next.runId, '--json']));
    const spans = json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', traces.rollouts[0]!.id, '--json'])).spans;
    const seniorCalls = spans.filter((sp) => sp.kind === 'llm' && SENIORS.includes(String(sp.attributes['gen_ai.agent.name'])));
    assert.ok(seniorCalls.length > 0);
    for (const c of seniorCalls) assert.equal(c.attributes['rollout_lab.model.version'], g.job!.id);
    const answered = seniorCalls.filter((c) => c.status === 'ok');
    assert.ok(answered.length > 0, `the served policy answered: ${JSON.stringify(seniorCalls.map((c) => c.attributes['error.type']))}`);
    for (const c of answered) assert.equal(c.attributes['server.address'], g.serve!.serveUrl);
  } finally {
    const cancel = cli(['jobs', 'cancel', g.serve!.id, '--workspace', ws]);
    assert.equal(cancel.code, 0, cancel.stderr);
    // Cancelling the served version's job takes the model back to what it was before.
    assert.equal(cancel.stdout.trim(), `job ${g.serve!.id}: cancelled; model "senior" rolled back to lab.json's settings`);
  }
  assert.equal(seniorActive(), null);
  const jobs = json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json']));
  assert.deepEqual(jobs.map((j) => [j.kind, j.state]), [['serve', 'cancelled'], ['grpo', 'succeeded'], ['sft', 'succeeded']]);
});

function seniorActive(): string | null {
  const status = json<{ models: Array<{ name: string; active: string | null }> }>(cli(['pipeline', 'status', '--workspace', ws, '--json']));
  return status.models.find((m) => m.name === 'senior')!.active;
}

function seniorVersion(grpoId: string): { baseUrl?: string } | undefined {
  const reg = JSON.parse(readFileSync(join(ws, '.rollout-lab/registry.json'), 'utf8'));
  return reg.models.senior.versions.find((v: { version: string }) => v.version === grpoId);
}

test('serving recovers: jobs serve re-serves a version served before; a dead server fails calls at once with the fix, and its follower rolls the model back', { skip: noTrainer }, () => {
  const grpoId = json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json'])).find((j) => j.kind === 'grpo' && j.state === 'succeeded')!.id;
  const first = seniorVersion(grpoId)!.baseUrl;
  const again = cli(['jobs', 'serve', grpoId, '--workspace', ws, '--json']);
  assert.equal(again.code, 0, again.stderr.slice(-3000));
  const served = JSON.parse(again.stdout) as JobRecord;
  assert.deepEqual(served.registered, { model: 'senior', version: grpoId });
  assert.equal(seniorActive(), grpoId);
  assert.equal(seniorVersion(grpoId)!.baseUrl, served.serveUrl, 'the registry has the new endpoint');
  assert.notEqual(served.serveUrl, first);
  assert.match(again.stderr, /python: \S+ \(torch [^)]+\), from training\.targets\.cpu\.python in \.rollout-lab\/lab\.json/, 'the log says which python serves');

  // The server dies with nobody following it: the registry still points at it.
  process.kill(-(served.handle as { pid: number }).pid, 'SIGKILL');
  const refused = cli(['jobs', 'serve', grpoId, '--workspace', ws]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, new RegExp(`job ${served.id} still serves ${grpoId} at .* — use it, or stop it first: rollout-lab jobs cancel ${served.id}`));

  // A rollout's calls to it fail at once (no retry loop), saying what fixes it.
  const next = json<RunDoc>(cli(['run', '--workspace', ws, '--limit', '1', '--json']));
  const traces = json<{ rollouts: Array<{ id: string }> }>(cli(['traces', '--workspace', ws, '--run', next.runId, '--json']));
  const spans = json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', traces.rollouts[0]!.id, '--json'])).spans;
  const seniorCalls = spans.filter((sp) => sp.kind === 'llm' && SENIORS.includes(String(sp.attributes['gen_ai.agent.name'])));
  assert.ok(seniorCalls.length > 0);
  for (const c of seniorCalls) {
    assert.equal(c.status, 'error');
    assert.equal(c.attributes['rollout_lab.retries'] ?? 0, 0);
    assert.match(JSON.stringify(c), new RegExp(`connection failed \\(ECONNREFUSED\\) — nothing serves version ${grpoId} of model 'senior' there any more — serve it again with \`rollout-lab jobs serve ${grpoId}\`, or go back to the version before it with \`rollout-lab pipeline rollback senior\``));
  }

  // A follower sees the server gone: the job failed, saying why, and the model is rolled back.
  const attach = cli(['jobs', 'attach', served.id, '--workspace', ws, '--json']);
  assert.equal(attach.code, 1, attach.stderr.slice(-2000));
  const dead = JSON.parse(attach.stdout) as JobRecord;
  assert.equal(dead.state, 'failed');
  assert.match(dead.error!, /^stopped serving: the process ended without an exit status \(killed\?\) .*; model "senior" rolled back to lab\.json's settings$/);
  assert.equal(seniorActive(), null);

  // Served once more over the failed job, then cancelled: rolled back again.
  const third = cli(['jobs', 'serve', grpoId, '--workspace', ws, '--json']);
  assert.equal(third.code, 0, third.stderr.slice(-3000));
  assert.equal(seniorActive(), grpoId);
  const cancel = cli(['jobs', 'cancel', served.id, '--workspace', ws]);
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.match(cancel.stdout, /cancelled; model "senior" rolled back to lab\.json's settings/);
  assert.equal(seniorActive(), null);
});

test('jobs serve whose endpoint cannot be registered stops the server and fails instead of hanging', { skip: noTrainer }, async () => {
  const grpoId = json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json'])).find((j) => j.kind === 'grpo' && j.state === 'succeeded')!.id;
  const serveDir = join(ws, '.rollout-lab/training/jobs', `${grpoId}-serve`);
  const registry = join(ws, '.rollout-lab/registry.json');
  const good = readFileSync(registry, 'utf8');
  const before = existsSync(join(serveDir, 'job.json')) ? readFileSync(join(serveDir, 'job.json'), 'utf8') : '';
  const { done } = cliAsync(['jobs', 'serve', grpoId, '--workspace', ws]);
  try {
    // Once the new serve job is launched (the lab and its registry were read), the registry breaks before the server answers.
    for (let i = 0; i < 3000; i++) {
      const now = existsSync(join(serveDir, 'job.json')) ? readFileSync(join(serveDir, 'job.json'), 'utf8') : '';
      if (now !== before && /"state": "(launching|running)"/.test(now)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    writeFileSync(registry, '{ not json');
    const r = await done;
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`serving failed: job ${grpoId}-serve was stopped because it serves, but forwarding or registering http://127\\.0\\.0\\.1:\\d+/v1 failed: the model registry .* is not valid JSON`));
  } finally {
    writeFileSync(registry, good);
  }
  const rec = JSON.parse(readFileSync(join(serveDir, 'job.json'), 'utf8')) as JobRecord;
  assert.equal(rec.state, 'failed');
  assert.match(rec.error!, /^stopped: it serves, but forwarding or registering/);
  const pid = (rec.handle as { pid: number }).pid;
  assert.throws(() => process.kill(-pid, 0), 'the server was stopped');
});

test('the online loop: rollouts against the served policy, their groups sent to its control API, the version it serves next registered', { skip: noTrainer }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'grpo', '--online', '--rounds', '2', '--tasks', '2', '--samples', '2', '--target', 'cpu', '--json'], env);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  const online = JSON.parse(r.stdout) as { serveJob: string; serveUrl: string; serving: boolean; note: string; rounds: Array<{ round: number; runId: string; rollouts: number; records: number; version: string; updated: boolean }> };
  {
    assert.deepEqual(online.rounds.map((x) => [x.round, x.rollouts]), [[1, 4], [2, 4]]);
    assert.ok(online.rounds.every((x) => x.records > 0), 'each round sent the seniors\' calls');
    const status = json<{ models: Array<{ name: string; versions: Array<{ version: string }> }> }>(cli(['pipeline', 'status', '--workspace', ws, '--json']));
    const senior = status.models.find((m) => m.name === 'senior')!;
    for (const x of online.rounds) assert.ok(senior.versions.some((v) => v.version === x.version), `version ${x.version} stays registered`);
    for (const x of online.rounds.filter((y) => y.updated)) assert.match(x.version, new RegExp(`^${online.serveJob}-v\\d+$`));
    // Round 2's rollouts called the version round 1 produced.
    const traces = json<{ rollouts: Array<{ id: string }> }>(cli(['traces', '--workspace', ws, '--run', online.rounds[1]!.runId, '--json']));
    const spans = json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', traces.rollouts[0]!.id, '--json'])).spans;
    const versions = new Set(spans.filter((sp) => sp.kind === 'llm' && SENIORS.includes(String(sp.attributes['gen_ai.agent.name']))).map((sp) => sp.attributes['rollout_lab.model.version']));
    assert.deepEqual([...versions], [online.rounds[0]!.version]);
    // Without --keep-serving the loop stops the server it started, and a stopped server serves nothing: the model goes back to what it ran before the loop.
    assert.equal(online.serving, false);
    assert.match(online.note, /is stopped; model "senior" rolled back to .*; the weights of version .* are saved in /);
    assert.equal(json<{ state: string }>(cli(['jobs', 'show', online.serveJob, '--workspace', ws, '--json'])).state, 'cancelled');
    assert.ok(!String(seniorActive()).startsWith(online.serveJob), `rolled back past the loop's versions: ${seniorActive()}`);
    const last = online.rounds.at(-1)!.version;
    const registry = JSON.parse(readFileSync(join(ws, '.rollout-lab', 'registry.json'), 'utf8')) as { models: Record<string, { versions: Array<{ version: string; adapter?: string }> }> };
    const adapter = registry.models.senior!.versions.find((v) => v.version === last)?.adapter;
    assert.ok(adapter && existsSync(join(ws, '.rollout-lab', adapter, 'adapter_model.safetensors')) && existsSync(join(ws, '.rollout-lab', adapter, 'base', 'config.json')), `the adapter of ${last} is saved, with the model it was trained on: ${adapter}`);
  }
});

test('the transformers backend on a python without peft: the job and the phase say how to install it', { skip: noTrainer }, () => {
  const file = join(ws, '.rollout-lab/lab.json');
  const text = readFileSync(file, 'utf8');
  // A peft that does not import, first on the job's PYTHONPATH: this python, as one without peft.
  const noPeft = join(ws, 'no-peft');
  mkdirSync(join(noPeft, 'peft'), { recursive: true });
  writeFileSync(join(noPeft, 'peft', '__init__.py'), 'raise ImportError("No module named \'peft\'")\n');
  try {
    const r = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'cpu', '--no-serve', '--json'], { ...env, PYTHONPATH: noPeft });
    assert.equal(r.code, 1, r.stderr.slice(-2000));
    const t = JSON.parse(r.stdout) as TrainResult;
    assert.equal(t.phase.state, 'failed');
    for (const error of [t.job!.error!, t.phase.error!]) {
      assert.match(error, /model\.backend: transformers needs peft in this python \(.*\.venv-trainer\/bin\/python\)/);
      assert.match(error, /pip install -r python-trainer\/requirements\.txt \(in a clone of Rollout Lab, bash scripts\/setupTrainerVenv\.sh makes \.venv-trainer/);
    }
  } finally {
    writeFileSync(file, text);
    rmSync(noPeft, { recursive: true, force: true });
  }
});

test('a trainer that fails leaves the job and its phase failed, with the trainer\'s reason', { skip: noTrainer }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'cpu', '--set', 'max_steps=0', '--set', 'epochs=0', '--json'], env);
  assert.equal(r.code, 1, r.stderr.slice(-2000));
  const t = JSON.parse(r.stdout) as TrainResult;
  assert.equal(t.job!.state, 'failed');
  assert.ok(t.job!.error && t.job!.error.length > 0);
  assert.equal(t.phase.state, 'failed');
  assert.equal(t.phase.job, t.job!.id);
});
