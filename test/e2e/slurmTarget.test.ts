import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DryRun } from '../../src/core/train/jobs/jobDraft';
import type { JobRecord } from '../../src/core/train/jobs/jobRecord';
import type { TrainResult } from '../../src/core/train/jobs/trainPhase';
import { regularFiles, slurmSkip, startSlurm, type SlurmCluster } from '../unit/train/launchers/slurmCluster';
import { cli, json, REPO, tempWorkspace, type RunDoc } from './cliHelpers';

/**
 * `rollout-lab train --target <a slurm target>` against a real one-node Slurm started here (scripts/startSlurm.sh),
 * CPU only, with the real trainer (a one-layer Qwen2 built from a config) from the trainer's venv: a phase launched, followed to its end and its
 * adapter fetched; a detached job cancelled with `jobs cancel` (scancel); one scancel'ed outside the lab, which a
 * reattach reports as such.
 */

const TRAINER_PYTHON = join(REPO, '.venv-trainer/bin/python');
const skipSlurm = slurmSkip('the Slurm target\'s CLI tests');
const noTrainer = !skipSlurm && spawnSync(TRAINER_PYTHON, ['-c', 'import torch, transformers, peft, tokenizers, yaml, jsonschema'], { encoding: 'utf8' }).status !== 0
  ? `${TRAINER_PYTHON} with torch, transformers, peft, yaml and jsonschema is needed (bash scripts/setupTrainerVenv.sh)`
  : false;
if (noTrainer && process.env.CI) throw new Error(noTrainer);
if (noTrainer) console.log(`# skipping the Slurm target's CLI tests: ${noTrainer}`);
const skip = skipSlurm || noTrainer;

const SECRET = 'hf_secret_value_never_written_slurm_81c3';
const JUNIORS = ['Geneticist', 'Pharmacologist', 'Neurologist'];
let ws = '';
let cluster: SlurmCluster | null = null;
let env: NodeJS.ProcessEnv = {};

before(() => {
  if (skip) return;
  cluster = startSlurm('slurm-cli');
  env = { ...cluster.env, HF_TOKEN: SECRET };
  ws = tempWorkspace();
  const tasks = join(ws, 'tasks.jsonl');
  const rows = [
    ['t1', 'Does APOE4 raise amyloid-beta in the ageing brain?', 'APOE4 carriers had higher amyloid-beta in 40 brains.', 'yes'],
    ['t2', 'Does GLP-1 signalling slow cognitive decline?', 'A GLP-1 agonist slowed decline in mice only.', 'maybe'],
  ];
  writeFileSync(tasks, rows.map(([id, goal, context, d]) => JSON.stringify({ id, goal, context, expected_decision: d })).join('\n') + '\n');
  assert.equal(cli(['init', '--workspace', ws, '--dataset', tasks]).code, 0);
  const file = join(ws, '.rollout-lab/lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8'));
  for (const [name, agent] of Object.entries<{ tools: string[]; prompt?: string }>(cfg.agents)) {
    agent.tools = [];
    writeFileSync(join(ws, '.rollout-lab', agent.prompt ?? `prompts/${name}.md`), `You are the ${name}. Reply with one JSON object.\n`);
  }
  cfg.training = {
    trainer: { backend: 'transformers', baseModel: 'qwen2-test', modelConfig: { model_type: 'qwen2', vocab_size: 512, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 2048, tie_word_embeddings: true }, secrets: ['HF_TOKEN'] },
    targets: {
      // No host: sbatch on this machine; the jobs run in their bundle folders (this machine is the cluster's node).
      hpc: { kind: 'slurm', partition: 'debug', timeLimit: '10', gpus: 0, cpus: 2, memoryGb: 1, python: TRAINER_PYTHON, setup: ['export OMP_NUM_THREADS=2'], pollSeconds: 1 },
    },
    phases: [
      { name: 'gather', kind: 'gather', samples: 2 },
      { name: 'sft-juniors', kind: 'sft', agents: JUNIORS, model: 'junior', minReward: 0, includeSimulated: true, hyperparameters: { max_steps: 2, batch_size: 1, grad_accum: 1, max_length: 2048 } },
    ],
  };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  const run = json<RunDoc>(cli(['run', '--workspace', ws, '--limit', '2', '--samples', '2', '--json']));
  assert.equal(run.succeeded, 4);
});

after(() => {
  if (ws) {
    for (const j of json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json'], env))) {
      if (['launching', 'running', 'fetching'].includes(j.state)) cli(['jobs', 'cancel', j.id, '--workspace', ws], env);
    }
  }
  cluster?.stop();
  if (ws) rmSync(ws, { recursive: true, force: true });
});

function scontrolState(jobId: string): string {
  const r = spawnSync('scontrol', ['-o', 'show', 'job', jobId], { encoding: 'utf8', env: { ...process.env, ...cluster!.env } });
  return /JobState=(\S+)/.exec(r.stdout)?.[1] ?? `none (${r.stderr.trim()})`;
}

function slurmJobId(rec: JobRecord): string {
  assert.equal(rec.handle?.target, 'slurm');
  return (rec.handle as { jobId: string }).jobId;
}

test('train --target hpc --dry-run: the sbatch script and the submit command, no secret, nothing launched', { skip }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'hpc', '--dry-run', '--json'], env);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET));
  const dry = JSON.parse(r.stdout) as DryRun;
  assert.equal(dry.plan.target, 'slurm');
  const script = dry.plan.files.find((f) => f.path.endsWith('rollout-lab.sbatch'))!.content;
  for (const line of ['#SBATCH --partition=debug', '#SBATCH --time=10', '#SBATCH --cpus-per-task=2', '#SBATCH --mem=1024M', 'export OMP_NUM_THREADS=2']) assert.ok(script.split('\n').includes(line), `${line} in\n${script}`);
  assert.ok(!script.includes('--gres'), 'no GPU asked for');
  assert.ok(script.includes(`'${TRAINER_PYTHON}' '-m' 'rollout_trainer' 'sft' '--spec' 'job.yaml'`));
  assert.equal(dry.plan.steps.at(-1)!.stdin, 'HF_TOKEN=***\n');
  assert.deepEqual(json<JobRecord[]>(cli(['jobs', '--workspace', ws, '--json'], env)), [], 'nothing was launched');
});

test('train --target hpc: the SFT phase runs as a Slurm job with the real trainer; its log and adapter come back; the phase is done', { skip }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'hpc', '--no-serve', '--json'], env);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  const t = JSON.parse(r.stdout) as TrainResult;
  assert.equal(t.job!.state, 'succeeded', t.job!.error ?? '');
  assert.equal(t.job!.targetKind, 'slurm');
  assert.equal(t.phase.state, 'done');
  assert.equal(scontrolState(slurmJobId(t.job!)), 'COMPLETED');
  const dir = join(ws, '.rollout-lab/training/jobs', t.job!.id);
  const result = JSON.parse(readFileSync(join(dir, 'out/result.json'), 'utf8'));
  assert.equal(result.status, 'succeeded');
  assert.ok(existsSync(join(dir, String(result.adapter))), 'the adapter came back');
  const log = readFileSync(join(dir, 'job.log'), 'utf8');
  assert.match(log, /^@rollout-trainer \{"event":\s*"metrics"/m);
  assert.match(log, new RegExp(`^\\[slurm\\] job ${slurmJobId(t.job!)}: RUNNING on ${cluster!.node}$`, 'm'));
  for (const f of regularFiles(dir, cluster!.dir)) assert.ok(!readFileSync(f).includes(SECRET), `the secret is in ${f}`);
});

test('train --detach then jobs cancel: scancel stops the Slurm job and the record says cancelled', { skip }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'hpc', '--no-serve', '--detach', '--json'], env);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  const rec = JSON.parse(r.stdout) as JobRecord;
  assert.equal(rec.state, 'running');
  const cancel = cli(['jobs', 'cancel', rec.id, '--workspace', ws, '--json'], env);
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.equal((JSON.parse(cancel.stdout) as JobRecord).state, 'cancelled');
  assert.equal(scontrolState(slurmJobId(rec)), 'CANCELLED');
});

test('train --detach, scancel outside the lab: a reattach ends the job failed, cancelled outside Rollout Lab', { skip }, () => {
  const r = cli(['train', '--workspace', ws, '--phase', 'sft-juniors', '--target', 'hpc', '--no-serve', '--detach', '--json'], env);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  const rec = JSON.parse(r.stdout) as JobRecord;
  const id = slurmJobId(rec);
  const s = spawnSync('scancel', [id], { encoding: 'utf8', env: { ...process.env, ...cluster!.env } });
  assert.equal(s.status, 0, s.stderr);
  const attach = cli(['jobs', 'attach', rec.id, '--workspace', ws, '--json'], env);
  assert.equal(attach.code, 1, attach.stderr.slice(-2000));
  const end = JSON.parse(attach.stdout) as JobRecord;
  assert.equal(end.state, 'failed');
  assert.equal(end.error, `Slurm ended the job: cancelled outside Rollout Lab (scancel) (job ${id})`);
  const phase = json<{ phases: Array<{ phase: { name: string }; record: { state: string; error: string | null } }> }>(cli(['pipeline', 'status', '--workspace', ws, '--json'], env)).phases.find((p) => p.phase.name === 'sft-juniors');
  assert.equal(phase?.record.state, 'failed');
  assert.match(phase?.record.error ?? '', /cancelled outside Rollout Lab/);
});
