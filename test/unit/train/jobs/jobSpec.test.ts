import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { z } from 'zod';
import { JobSpecSchema, jobSpecJsonSchemaText, type JobSpecInput } from '../../../../src/core/train/jobs/jobSpec';
import { checkHyperparameters, referenceHyperparameters, specYaml } from '../../../../src/core/train/jobs/jobBundle';
import { newJobId } from '../../../../src/core/train/jobs/jobDraft';
import { parseTrainerEvent, metricPoints, type TrainerEvent } from '../../../../src/core/train/jobs/trainerEvents';
import { parseSetOptions } from '../../../../src/cli/commands/train';

const SCHEMA_FILE = path.resolve(__dirname, '../../../../python-trainer/rollout_trainer/job_spec.schema.json');

const spec = (over: Partial<JobSpecInput> = {}): JobSpecInput => ({
  apiVersion: 'rollout-lab/v1',
  kind: 'TrainingJob',
  id: 'sft-juniors-20261124-163000-ab12',
  phase: { name: 'sft-juniors', kind: 'sft' },
  model: { base: 'Qwen/Qwen2.5-1.5B-Instruct' },
  data: { train: 'data/sft.jsonl' },
  output: {},
  resources: {},
  command: ['python3', '-m', 'rollout_trainer', 'sft', '--spec', 'job.yaml'],
  ...over,
});

test('python-trainer/rollout_trainer/job_spec.schema.json is generated from the zod schema', () => {
  assert.equal(readFileSync(SCHEMA_FILE, 'utf8'), jobSpecJsonSchemaText(), 'the job spec schema is stale — run: npm run schema');
});

test('the JSON Schema and the zod schema agree on good and bad specs', () => {
  const fromJson = z.fromJSONSchema(JSON.parse(jobSpecJsonSchemaText()) as z.core.JSONSchema.JSONSchema);
  const cases: Array<[string, JobSpecInput | Record<string, unknown>, boolean]> = [
    ['minimal', spec(), true],
    ['upper-case id', spec({ id: 'Sft_1' }), false],
    ['unknown phase kind', { ...spec(), phase: { name: 'x', kind: 'ppo' } }, false],
    ['extra field', { ...spec(), secrets: { HF_TOKEN: 'x' } }, false],
    ['empty command', spec({ command: [] }), false],
    ['bad env name', spec({ env: ['HF-TOKEN'] }), false],
    ['list hyper-parameter', spec({ hyperparameters: { target_modules: ['q_proj'], lora_r: 8 } }), true],
    ['a model built from a config', spec({ model: { base: 'qwen2-test', backend: 'transformers', config: { model_type: 'qwen2', hidden_size: 32 } } }), true],
    ['the removed tiny backend', { ...spec(), model: { base: 'tiny', backend: 'tiny' } }, false],
  ];
  for (const [name, value, ok] of cases) {
    assert.equal(JobSpecSchema.safeParse(value).success, ok, `zod: ${name}`);
    assert.equal(fromJson.safeParse(value).success, ok, `JSON Schema: ${name}`);
  }
});

test('a spec that names the removed tiny backend is told what to use instead', () => {
  const parsed = JobSpecSchema.safeParse({ ...spec(), model: { base: 'tiny', backend: 'tiny' } });
  assert.equal(parsed.success, false);
  assert.match(parsed.error!.issues[0]!.message, /^the tiny backend was removed — use backend "transformers" with training\.trainer\.modelConfig/);
});

test('paths in a spec stay inside the bundle', () => {
  assert.equal(JobSpecSchema.safeParse(spec({ data: { train: '../secrets.jsonl' } })).success, false);
  assert.equal(JobSpecSchema.safeParse(spec({ data: { train: '/etc/passwd' } })).success, false);
  assert.equal(JobSpecSchema.safeParse(spec({ model: { base: 'm', adapter: 'adapter/../..' } })).success, false);
});

test('the YAML a bundle holds reads back as the same spec, defaults filled in', () => {
  const full = JobSpecSchema.parse(spec({ env: ['HF_TOKEN'] }));
  const text = specYaml(full);
  assert.match(text, /^# Rollout Lab training job/);
  assert.deepEqual(JobSpecSchema.parse(parse(text)), full);
  assert.equal(full.model.backend, 'transformers');
  assert.equal(full.output.dir, 'out');
  assert.equal(full.resources.gpus, 1);
});

test('hyper-parameters: the reference defaults, and clear errors for unknown names and wrong types', () => {
  const grpo = referenceHyperparameters('grpo');
  assert.equal(grpo.learning_rate, 1e-6);
  assert.equal(grpo.group_size, 8);
  assert.equal(grpo.kl_coef, 0.001);
  assert.equal(referenceHyperparameters('sft').lora_r, 16);
  assert.equal(referenceHyperparameters('serve').kl_coef, 0.001, 'serve trains online with the grpo settings');
  checkHyperparameters('grpo', { learning_rate: 5e-7, target_modules: 'q_proj,v_proj' });
  assert.throws(() => checkHyperparameters('grpo', { learnin_rate: 1 }), /unknown grpo hyper-parameter "learnin_rate" — known: learning_rate/);
  assert.throws(() => checkHyperparameters('sft', { lora_r: 'big' }), /"lora_r" must be a number like 16/);
});

test('--set values: numbers, booleans, lists and words', () => {
  assert.deepEqual(parseSetOptions(['learning_rate=5e-7', 'merge=true', 'target_modules=["q_proj","v_proj"]', 'loss_agg=token-mean']), {
    learning_rate: 5e-7,
    merge: true,
    target_modules: ['q_proj', 'v_proj'],
    loss_agg: 'token-mean',
  });
  assert.throws(() => parseSetOptions(['lr']), /--set takes NAME=VALUE/);
  assert.throws(() => parseSetOptions(['x={"a":1}']), /must be a number, true\/false, text or a list/);
});

test('job ids are valid as file names, SkyPilot clusters and Kubernetes names', () => {
  const id = newJobId('GRPO seniors/Phase_2', new Date('2026-11-24T16:30:05Z'));
  assert.match(id, /^grpo-seniors-phase-2-20261124-163005-[0-9a-f]{4}$/);
  assert.equal(JobSpecSchema.shape.id.safeParse(id).success, true);
  assert.ok(newJobId('x'.repeat(80)).length <= 52);
});

test('trainer events: parsed from prefixed lines; ordinary and malformed lines stay log text', () => {
  const lines = [
    'Loading model...',
    '@rollout-trainer {"event":"start","job":"j","phase":"grpo","backend":"transformers","device":"cpu","examples":12,"steps":3}',
    '@rollout-trainer {"event":"metrics","step":1,"epoch":0,"loss":0.5,"kl":0.001,"note":"x"}',
    '@rollout-trainer {"event":"metrics","step":2,"loss":0.25}',
    '@rollout-trainer {not json',
    '@rollout-trainer {"event":"metrics","loss":1}',
    '@rollout-trainer {"event":"serving","url":"http://127.0.0.1:8000/v1","model":"m","version":"v1"}',
    '@rollout-trainer {"event":"done","result":{"status":"succeeded"}}',
  ];
  const events = lines.map(parseTrainerEvent);
  assert.equal(events[0], null);
  assert.equal(events[4], null);
  assert.equal(events[5], null, 'a metrics event without a step is not a point');
  assert.deepEqual(events[1], { event: 'start', backend: 'transformers', device: 'cpu', examples: 12, steps: 3, raw: JSON.parse(lines[1]!.slice(17)) });
  assert.deepEqual(metricPoints(events.filter((e): e is TrainerEvent => e !== null)), [
    { step: 1, values: { epoch: 0, loss: 0.5, kl: 0.001 } },
    { step: 2, values: { loss: 0.25 } },
  ]);
  assert.deepEqual(events[6], { event: 'serving', url: 'http://127.0.0.1:8000/v1', model: 'm', version: 'v1' });
  assert.deepEqual(events[7], { event: 'done', result: { status: 'succeeded' } });
});
