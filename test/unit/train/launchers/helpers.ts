import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TargetSchema, type TargetConfig } from '../../../../src/core/config/trainingSchema';
import { writeBundle } from '../../../../src/core/train/jobs/jobBundle';
import type { JobSpecInput } from '../../../../src/core/train/jobs/jobSpec';
import type { PreparedJob } from '../../../../src/core/train/jobs/launcher';

export const FIXTURES = path.resolve(__dirname, '../../../fixtures/launchers');
export const SECRET_NAME = 'ROLLOUT_TEST_SECRET';
export const SECRET = 'hf_s3cr3t-value_never_in_files_7c1d';
export const SECRET_SHA256 = createHash('sha256').update(SECRET).digest('hex');
/** The Python the test jobs run with: Debian's when there, else whatever python3 is on PATH. */
/** A one-layer Qwen2 built from a config on the transformers backend (its tokenizer trained on the job's data): the real trainer on a CPU, nothing downloaded. */
export const QWEN2_MODEL = {
  base: 'qwen2-test',
  backend: 'transformers',
  config: {
    model_type: 'qwen2', vocab_size: 512, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1,
    num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 1024, tie_word_embeddings: true,
  },
} as const;
/** What a job on QWEN2_MODEL trains: LoRA on the attention, few steps. */
export const QWEN2_HYPERPARAMETERS = { max_steps: 2, batch_size: 1, grad_accum: 1, max_length: 1024, lora_r: 4, lora_alpha: 8, target_modules: ['q_proj', 'v_proj'] };
/** The python modules the real trainer needs for QWEN2_MODEL. */
export const TRAINER_IMPORTS = 'import torch, transformers, peft, tokenizers, yaml, jsonschema';

export const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `rollout-lab-${prefix}-`));
}

export interface JobOptions {
  id?: string;
  target: Record<string, unknown>;
  command?: string[];
  secrets?: Record<string, string>;
  serve?: boolean;
  resources?: JobSpecInput['resources'];
  /** Bundle-relative path → file on this machine (default: the test job script). */
  files?: Record<string, string>;
  spec?: Partial<JobSpecInput>;
}

/** A real bundle (writeBundle: job.yaml, python-trainer/, the files) and an empty job folder. */
export function makeJob(root: string, o: JobOptions): PreparedJob {
  const id = o.id ?? `job-${Math.random().toString(16).slice(2, 8)}`;
  const jobDir = path.join(root, 'jobs', id);
  const bundleDir = path.join(jobDir, 'bundle');
  const secrets = o.secrets ?? {};
  const spec = writeBundle(bundleDir, {
    spec: {
      apiVersion: 'rollout-lab/v1',
      kind: 'TrainingJob',
      id,
      phase: { name: 'test', kind: o.serve ? 'serve' : 'sft' },
      model: { base: 'stub', backend: 'transformers' },
      data: { train: o.serve ? null : 'job.py' },
      output: {},
      resources: o.resources ?? {},
      ...(o.serve ? { serve: { host: '0.0.0.0', port: 8000 } } : {}),
      env: Object.keys(secrets).sort(),
      command: o.command ?? ['python3', 'job.py', '0'],
      ...o.spec,
    },
    files: o.files ?? { 'job.py': path.join(FIXTURES, 'job.py') },
  });
  const target: TargetConfig = TargetSchema.parse(o.target);
  return { spec, bundleDir, jobDir, targetName: target.kind, target, secrets };
}

/** Every file under the folders (recursively). */
export function allFiles(...dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    if (!existsSync(d)) return;
    for (const name of readdirSync(d)) {
      const p = path.join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  dirs.forEach(walk);
  return out;
}

export function assertNotInFiles(secret: string, ...dirs: string[]): void {
  const files = allFiles(...dirs);
  assert.ok(files.length > 0, `there are files under ${dirs.join(', ')}`);
  for (const f of files) assert.ok(!readFileSync(f).includes(secret), `the secret is in ${f}`);
}

/** The command lines of every process on this machine (Linux /proc), to check a secret is in none. */
export function allCommandLines(): string[] {
  if (!existsSync('/proc')) return [];
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      out.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' '));
    } catch {
      // The process ended meanwhile.
    }
  }
  return out;
}

/** The real executable of `name` on PATH (before any test shims). */
export function which(name: string, pathVar = process.env.PATH ?? ''): string | null {
  for (const dir of pathVar.split(path.delimiter)) {
    const p = path.join(dir, name);
    if (dir && existsSync(p)) return p;
  }
  return null;
}

/** Resolves when `pred` holds for a line seen so far (checked on each new line). */
export class Lines {
  readonly all: string[] = [];
  private waiters: Array<{ pred: (l: string) => boolean; resolve: () => void }> = [];

  readonly push = (line: string): void => {
    this.all.push(line);
    this.waiters = this.waiters.filter((w) => (w.pred(line) ? (w.resolve(), false) : true));
  };

  waitFor(pred: (l: string) => boolean): Promise<void> {
    if (this.all.some(pred)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }
}
