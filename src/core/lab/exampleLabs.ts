import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../errors';
import type { LabConfigInput } from '../config/schema';

/**
 * The example labs `rollout-lab init --example NAME` writes: the example's
 * own files (graph, reward, data, simulator answers) copied into the
 * workspace, and a lab.json ready to run its training pipeline.
 */

export interface ExampleLab {
  name: string;
  /** One line: what the lab is. */
  summary: string;
  /** Files of the example folder to copy, relative to it. */
  files: string[];
  config: LabConfigInput;
  /** The prompt per agent written to .rollout-lab/prompts/ when no graph module of the example gives them. */
  prompts?: Record<string, string>;
}

export const EXAMPLE_NAMES = ['ticket-routing', 'command-agents'] as const;

/** The repository's examples folder, from here (src/core/config) or from the bundle (dist). */
export function examplesDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'examples');
    if (existsSync(path.join(candidate, 'ticket-routing', 'graph.ts'))) return candidate;
    if (path.dirname(dir) === dir) throw new UsageError(`the example labs are not installed beside Rollout Lab (no examples/ folder above ${__dirname})`);
  }
}

/** The ticket-routing student's LoRA adapter: every linear layer of the small Qwen2, no dropout (GRPO's ratios stay exact). */
const LORA = { lora_r: 16, lora_alpha: 32, lora_dropout: 0, target_modules: ['all-linear'] };

/** The ticket-routing lab: a Router (the trained student) and a Responder; SFT and GRPO phases on a small Qwen2 built from a config (transformers + peft). */
function ticketRouting(): ExampleLab {
  return {
    name: 'ticket-routing',
    summary: 'a Router agent (trained from scratch on this CPU) names the queue of a short support ticket; a Responder acknowledges it',
    files: ['graph.ts', 'reward.ts', 'tickets.ts', 'sim/teacher.ts', 'data/tickets.jsonl', 'README.md'],
    config: {
      version: 1,
      models: {
        // The policy under training: the small Qwen2 python-trainer serves once a phase registers it; the simulated teacher until then.
        student: { model: 'qwen2-router', temperature: 1, maxTokens: 8, logprobs: true, tokenIds: true, timeoutMs: 60_000, maxRetries: 1 },
        // Keeps its model: the simulated endpoint's canned answers (sim/teacher.ts).
        helper: { model: 'canned-helper', temperature: 0, maxTokens: 64 },
      },
      agents: {
        Router: { model: 'student', prompt: 'prompts/Router.md', trainable: true },
        Responder: { model: 'helper', prompt: 'prompts/Responder.md' },
      },
      graph: { kind: 'module', module: 'graph.ts', export: 'default' },
      datasets: { tickets: { path: 'data/tickets.jsonl', format: 'jsonl', trainFraction: 0.8, fields: { goal: 'ticket', expected: 'queue' } } },
      reward: { module: 'reward.ts', judge: { model: 'helper' }, criteria: {} },
      simulator: { module: 'sim/teacher.ts' },
      air: [],
      // One rollout at a time: the served student answers one request at a time anyway, and the updates then see the rollouts in the same order on every run.
      runner: { concurrency: 1, samples: 1, seed: 42, maxTurns: 4, dataset: 'tickets' },
      training: {
        groupSize: 8,
        trainer: {
          // A two-layer Qwen2 built from this config, its tokenizer a BPE trained on the exported tickets: nothing is downloaded.
          baseModel: 'qwen2-router',
          backend: 'transformers',
          modelConfig: {
            model_type: 'qwen2', vocab_size: 1024, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2,
            num_attention_heads: 4, num_key_value_heads: 2, max_position_embeddings: 512, tie_word_embeddings: true,
          },
          target: 'local',
        },
        phases: [
          // The teacher is the simulated endpoint: its rollouts are used on purpose (includeSimulated).
          { name: 'gather', kind: 'gather', samples: 1 },
          {
            name: 'sft',
            kind: 'sft',
            agents: ['Router'],
            model: 'student',
            minReward: 1,
            includeSimulated: true,
            hyperparameters: { ...LORA, learning_rate: 0.005, max_steps: 45, batch_size: 8, grad_accum: 1, max_length: 256, save_steps: 0, warmup_steps: 0, seed: 0 },
          },
          {
            name: 'grpo',
            kind: 'grpo',
            agents: ['Router'],
            model: 'student',
            samples: 8,
            // The Responder's answers are simulated, which marks every rollout; the Router's calls are the served student's.
            includeSimulated: true,
            hyperparameters: { ...LORA, learning_rate: 0.001, kl_coef: 0, batch_size: 16, grad_accum: 1, epochs: 2, max_steps: -1, save_steps: 0, seed: 0, gradient_checkpointing: false },
          },
        ],
      },
    },
  };
}

/**
 * The same tickets routed by a program outside the lab (graph.kind
 * "command"): a Python agent on the standard library, or a Node agent on the
 * openai package and the OpenTelemetry SDK. Its model calls go through the
 * lab's recording gateway; its tool calls arrive as OTLP spans.
 */
function commandAgents(): ExampleLab {
  return {
    name: 'command-agents',
    summary: 'the ticket Router and Responder as a program in any language (Python here; a Node version beside it), run once per rollout through the recording gateway and the OTLP receiver',
    files: ['python/agent.py', 'node/agent.mjs', 'node/package.json', 'reward.ts', 'sim/answers.jsonl', 'data/tickets.jsonl', 'README.md'],
    config: {
      version: 1,
      models: {
        // No baseUrl: the simulated endpoint answers with sim/answers.jsonl until one is set.
        main: { model: 'your-model', temperature: 0, maxTokens: 32, logprobs: true, tokenIds: true },
      },
      agents: {
        Router: { model: 'main', prompt: 'prompts/Router.md', trainable: true },
        Responder: { model: 'main', prompt: 'prompts/Responder.md' },
      },
      graph: { kind: 'command', command: ['python3', 'python/agent.py'], timeoutMs: 60_000 },
      datasets: { tickets: { path: 'data/tickets.jsonl', format: 'jsonl', trainFraction: 0.8, fields: { goal: 'ticket', expected: 'queue' } } },
      reward: { module: 'reward.ts', judge: { model: 'main' }, criteria: {} },
      simulator: { answers: 'sim/answers.jsonl' },
      air: [
        { name: 'queue_named', when: 'tool.ok', tools: ['normalize_queue'], reward: 0.05 },
        { name: 'no_queue', when: 'tool.error', tools: ['normalize_queue'], reward: -0.1 },
      ],
      runner: { concurrency: 4, samples: 1, seed: 42, maxTurns: 4, dataset: 'tickets' },
    },
    // The agents read them from ROLLOUT_LAB_PROMPTS_FILE, so edits here (and prompt optimisation) reach them.
    prompts: {
      Router: 'You route support tickets. Answer with one word: bill, ship, tech or user.',
      Responder: 'You acknowledge support tickets in one short sentence that names the queue.',
    },
  };
}

/** The example NAME; an unknown name is an error that lists the examples. */
export function exampleLab(name: string): ExampleLab {
  if (name === 'ticket-routing') return ticketRouting();
  if (name === 'command-agents') return commandAgents();
  throw new UsageError(`no example "${name}" — the examples are: ${EXAMPLE_NAMES.join(', ')} (rollout-lab init --example ${EXAMPLE_NAMES[0]})`);
}

/** The files of the example folder to copy (all of them listed, checked to exist). */
export function exampleSources(example: ExampleLab): Array<{ rel: string; abs: string }> {
  const dir = path.join(examplesDir(), example.name);
  return example.files.map((rel) => {
    const abs = path.join(dir, rel);
    if (!existsSync(abs) || !statSync(abs).isFile()) throw new UsageError(`example ${example.name} is incomplete: ${abs} is missing (${readdirSync(dir).join(', ')})`);
    return { rel, abs };
  });
}
