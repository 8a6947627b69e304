import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chatCompletion } from '../src/core/llm/client';
import type { ResolvedModel } from '../src/core/llm/routing';
import { writeBundle } from '../src/core/train/jobs/jobBundle';
import { JOB_API_VERSION } from '../src/core/train/jobs/jobSpec';
import { LineSplitter } from '../src/core/train/jobs/launchers/exec';
import { findLocalPython } from '../src/core/train/jobs/launchers/localPython';
import { parseTrainerEvent } from '../src/core/train/jobs/trainerEvents';
import { median, result, type Bench, type BenchResult } from './harness';

/**
 * serve.decode: tokens per second of python-trainer's served transformers policy (a small Qwen2 with a LoRA adapter)
 * (`python -m rollout_trainer serve`, called over HTTP at /v1/chat/completions
 * with the lab's own client) on a ~1,000-token prompt, greedy, NEW_TOKENS new
 * tokens, with its KV cache (`kv_cache: true`, the default) against the same
 * model (same config and seed, so the same weights and the same tokens) with
 * `kv_cache: false`, which recomputes the whole sequence for every token.
 * Both servers run in this benchmark, one after the other. The figure is the
 * whole request's rate (prompt included), as a rollout sees it.
 */

// A small Qwen2 built from this config (transformers + peft, a LoRA adapter on it), its tokenizer trained on the chat
// template's own words (no data): the prompt comes out near a token per byte.
const MODEL = {
  model_type: 'qwen2', vocab_size: 512, hidden_size: 128, intermediate_size: 256, num_hidden_layers: 4,
  num_attention_heads: 4, num_key_value_heads: 2, max_position_embeddings: 4096,
};
const NEW_TOKENS = 32;
const CACHED_RUNS = 3;
// ~1,000 byte tokens once rendered with the chat template.
const PROMPT = 'Summarise the protocol in one sentence. ' + 'The assay measures amyloid-beta in plasma samples from each cohort. '.repeat(14);

interface Server {
  url: string;
  child: ChildProcess;
}

async function startServer(python: string, dir: string, kvCache: boolean): Promise<Server> {
  const bundle = path.join(dir, kvCache ? 'cached' : 'uncached');
  writeBundle(bundle, {
    spec: {
      apiVersion: JOB_API_VERSION,
      kind: 'TrainingJob',
      id: 'bench-serve-decode',
      phase: { name: 'bench', kind: 'serve' },
      model: { base: 'qwen2-bench', backend: 'transformers', config: MODEL, adapter: null, dtype: 'float32', servedName: 'policy' },
      hyperparameters: { kv_cache: kvCache, max_new_tokens: NEW_TOKENS },
      data: { train: null, manifest: null },
      output: { dir: 'out' },
      resources: { gpus: 0, gpuType: null, cpus: null, memoryGb: null },
      serve: { host: '127.0.0.1', port: 0 },
      env: [],
      command: [python, '-m', 'rollout_trainer', 'serve', '--spec', 'job.yaml'],
    },
    files: {},
  });
  const child = spawn(python, ['-m', 'rollout_trainer', 'serve', '--spec', 'job.yaml'], {
    cwd: bundle,
    env: { ...process.env, PYTHONPATH: path.join(bundle, 'python-trainer'), PYTHONUNBUFFERED: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const url = await new Promise<string>((resolve, reject) => {
    const lines = new LineSplitter((line) => {
      const ev = parseTrainerEvent(line);
      if (ev?.event === 'serving') resolve(ev.url);
    });
    child.stdout!.on('data', (d: Buffer) => lines.push(d));
    child.once('exit', (code) => reject(new Error(`the ${kvCache ? 'cached' : 'uncached'} server exited (${code}) before serving: ${stderr}`)));
  });
  return { url, child };
}

async function stopServer(s: Server): Promise<void> {
  if (s.child.exitCode !== null) return;
  const gone = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await gone;
}

/** tokens/s of one greedy completion of NEW_TOKENS tokens (prompt processing included), and the tokens it gave. */
async function decode(url: string): Promise<{ rate: number; tokens: string }> {
  const model: ResolvedModel = {
    logical: 'policy',
    baseUrl: url,
    model: 'policy',
    apiKey: 'not-needed',
    timeoutMs: 600_000,
    maxRetries: 0,
    logprobs: false,
    tokenIds: true,
    version: null,
    simulated: false,
  };
  const started = performance.now();
  const r = await chatCompletion(model, { messages: [{ role: 'user', content: PROMPT }], temperature: 0, max_tokens: NEW_TOKENS, seed: 0 });
  const seconds = (performance.now() - started) / 1000;
  const usage = r.completion.usage;
  if (!usage || usage.prompt_tokens < 900) throw new Error(`the prompt should be ~1,000 tokens, the server counted ${usage?.prompt_tokens}`);
  const ids = (r.completion.choices[0] as unknown as { token_ids?: number[] }).token_ids ?? [];
  if (!ids.length) throw new Error('the server returned no token_ids to compare the cached and the uncached decoding');
  return { rate: usage.completion_tokens / seconds, tokens: JSON.stringify(ids) };
}

export const bench: Bench = {
  names: ['serve.decode'],
  async run(): Promise<BenchResult[]> {
    const { python } = await findLocalPython('local', process.env.ROLLOUT_LAB_BENCH_PYTHON);
    const dir = mkdtempSync(path.join(tmpdir(), 'rollout-lab-serve-decode-'));
    try {
      const cachedServer = await startServer(python, dir, true);
      let cached: Array<{ rate: number; tokens: string }>;
      try {
        await decode(cachedServer.url); // warm-up
        cached = [];
        for (let i = 0; i < CACHED_RUNS; i++) cached.push(await decode(cachedServer.url));
      } finally {
        await stopServer(cachedServer);
      }
      const uncachedServer = await startServer(python, dir, false);
      let uncached: { rate: number; tokens: string };
      try {
        uncached = await decode(uncachedServer.url);
      } finally {
        await stopServer(uncachedServer);
      }
      if (cached.some((c) => c.tokens !== uncached.tokens)) throw new Error(`the cached and the uncached server decoded different tokens: ${cached[0]!.tokens} vs ${uncached.tokens}`);
      return [
        result(
          'serve.decode',
          'tokens/s',
          median(cached.map((c) => c.rate)),
          uncached.rate,
          `served Qwen2 (4 layers, built from a config) + LoRA on transformers, ~1,000-token prompt, ${NEW_TOKENS} greedy tokens, KV cache vs none (same weights, same tokens); target ratio >= 5`,
        ),
      ];
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
