import { z } from 'zod';
import { TrainerBackend } from '../../config/trainingSchema';

/**
 * The job spec: one YAML file per training job, written by the extension or
 * the CLI into the job bundle and read by python-trainer. The same schema is
 * checked on both sides: here with zod, there with jsonschema against
 * python-trainer/rollout_trainer/job_spec.schema.json, which is generated from
 * this file (`npm run schema`). Secrets are never in a spec: `env` names the
 * variables a job reads, and the launchers hand their values over out of band.
 */

export const JOB_KINDS = ['sft', 'grpo', 'serve'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_API_VERSION = 'rollout-lab/v1';

/** Lower-case letters, digits and '-': valid as a file name, a SkyPilot cluster and a Kubernetes object name. */
export const JOB_ID = z
  .string()
  .min(1)
  .max(52)
  .regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, 'lower-case letters, digits and "-", starting and ending with a letter or digit');

const relPath = z
  .string()
  .min(1)
  .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'a path relative to the job bundle, without ".."');

export const ENV_NAME = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as HF_TOKEN');

export const HyperparameterValue = z.union([z.number(), z.string(), z.boolean(), z.array(z.string())]);

export const JobSpecSchema = z
  .strictObject({
    apiVersion: z.literal(JOB_API_VERSION),
    kind: z.literal('TrainingJob'),
    id: JOB_ID.describe('Job id: names the bundle, the cluster or Kubernetes objects, and the model version it produces.'),
    phase: z.strictObject({
      name: z.string().min(1).describe('The pipeline phase this job trains for (lab.json training.phases).'),
      kind: z.enum(JOB_KINDS).describe('sft: LoRA fine-tuning on conversations; grpo: a policy-gradient update on rollout groups; serve: an OpenAI-compatible endpoint for the policy with a control API.'),
    }),
    model: z.strictObject({
      base: z.string().min(1).describe('Base model: a Hugging Face id or a local directory with weights.'),
      backend: TrainerBackend.default('transformers').describe('transformers (+ peft): a checkpoint, or a model built from `config`.'),
      config: z.record(z.string(), z.unknown()).nullable().default(null).describe('Build the model from this config instead of loading weights (transformers needs "model_type"; its tokenizer is trained on the job\'s data where model.base has none).'),
      adapter: relPath.nullable().default(null).describe('Start from this adapter (a previous version), relative to the bundle.'),
      dtype: z.enum(['auto', 'float32', 'bfloat16', 'float16']).default('auto'),
      servedName: z.string().min(1).nullable().default(null).describe('The model name the served policy answers to (default: the job id).'),
    }),
    hyperparameters: z.record(z.string(), HyperparameterValue).default({}).describe('Trainer settings; python-trainer fills in the reference defaults and rejects unknown names.'),
    data: z.strictObject({
      train: relPath.nullable().describe('Training data (JSONL from `rollout-lab export`), relative to the bundle; null for serve.'),
      manifest: relPath.nullable().default(null),
    }),
    output: z.strictObject({ dir: relPath.default('out').describe('Where the trainer writes events, metrics, the adapter and result.json.') }),
    resources: z.strictObject({
      gpus: z.number().int().min(0).default(1),
      gpuType: z.string().min(1).nullable().default(null).describe('e.g. H100, A100-80GB, L4; null: any.'),
      cpus: z.number().int().positive().nullable().default(null),
      memoryGb: z.number().positive().nullable().default(null),
    }),
    serve: z
      .strictObject({
        host: z.string().min(1).default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(8000).describe('0: any free port (the serving event says which).'),
      })
      .nullable()
      .default(null),
    env: z.array(ENV_NAME).default([]).describe('Environment variables the job reads (their values are never in the spec).'),
    command: z.array(z.string().min(1)).min(1).describe('What runs in the bundle directory, as an argument array.'),
  })
  .describe('A python-trainer job, written by Rollout Lab.');

export type JobSpec = z.output<typeof JobSpecSchema>;
export type JobSpecInput = z.input<typeof JobSpecSchema>;

/** JSON Schema (draft 2020-12) of a job spec as written: python-trainer validates against it. */
export function jobSpecJsonSchemaText(): string {
  const generated = z.toJSONSchema(JobSpecSchema, { io: 'input' }) as Record<string, unknown>;
  const { $schema, ...rest } = generated;
  return `${JSON.stringify({ $schema, title: 'Rollout Lab training job', ...rest }, null, 2)}\n`;
}
