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

export const EXAMPLE_NAMES = ['ticket-routing', 'stock-lookup', 'command-agents'] as const;

/** The examples with a learning run (gather, sft and grpo phases on a student trained from scratch): `demo --train --example NAME`. */
export const LEARNING_EXAMPLES = ['ticket-routing', 'stock-lookup'] as const;

/** The repository's examples folder, from here (src/core/config) or from the bundle (dist). */
export function examplesDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'examples');
    if (existsSync(path.join(candidate, 'ticket-routing', 'graph.ts'))) return candidate;
    if (path.dirname(dir) === dir) throw new UsageError(`the example labs are not installed beside Rollout Lab (no examples/ folder above ${__dirname})`);
  }
}

/** The student's LoRA adapter: every linear layer of the small Qwen2, no dropout (GRPO's ratios stay exact). */
const LORA = { lora_r: 16, lora_alpha: 32, lora_dropout: 0, target_modules: ['all-linear'] };

interface StudentLabOptions {
  name: string;
  summary: string;
  files: string[];
  /** The trained agent (on the "student" model) and the one that keeps its model ("helper": the simulated endpoint). */
  trained: string;
  helper: string;
  /** The student's model name: the small Qwen2 python-trainer builds from a config. */
  model: string;
  maxTokens: number;
  dataset: { name: string; path: string; goal: string; expected: string };
  sftSteps: number;
  /** The grpo phase's learning rate, and the training tasks its offline round samples the served student on (8 rollouts each). */
  grpo: { learningRate: number; tasks: number };
  /** The Qwen2's width: hidden size (the MLP twice that) and attention heads (half as many key/value heads). */
  width: { hidden: number; heads: number };
}

/**
 * A lab that trains one agent from scratch on this CPU: a small Qwen2 built
 * from a config (transformers + peft), a simulated teacher (sim/teacher.ts)
 * until a phase registers a trained version, and gather, sft and grpo phases.
 */
function studentLab(o: StudentLabOptions): ExampleLab {
  return {
    name: o.name,
    summary: o.summary,
    files: o.files,
    config: {
      version: 1,
      models: {
        // The policy under training: the small Qwen2 python-trainer serves once a phase registers it; the simulated teacher until then.
        student: { model: o.model, temperature: 1, maxTokens: o.maxTokens, logprobs: true, tokenIds: true, timeoutMs: 60_000, maxRetries: 1 },
        // Keeps its model: the simulated endpoint's canned answers (sim/teacher.ts).
        helper: { model: 'canned-helper', temperature: 0, maxTokens: 64 },
      },
      agents: {
        [o.trained]: { model: 'student', prompt: `prompts/${o.trained}.md`, trainable: true },
        [o.helper]: { model: 'helper', prompt: `prompts/${o.helper}.md` },
      },
      graph: { kind: 'module', module: 'graph.ts', export: 'default' },
      datasets: { [o.dataset.name]: { path: o.dataset.path, format: 'jsonl', trainFraction: 0.8, fields: { goal: o.dataset.goal, expected: o.dataset.expected } } },
      reward: { module: 'reward.ts', judge: { model: 'helper' }, criteria: {} },
      simulator: { module: 'sim/teacher.ts' },
      air: [],
      // One rollout at a time: the served student answers one request at a time anyway, and the updates then see the rollouts in the same order on every run.
      runner: { concurrency: 1, samples: 1, seed: 42, maxTurns: 4, dataset: o.dataset.name },
      training: {
        groupSize: 8,
        trainer: {
          // A two-layer Qwen2 built from this config, its tokenizer a BPE trained on the exported data: nothing is downloaded.
          baseModel: o.model,
          backend: 'transformers',
          modelConfig: {
            model_type: 'qwen2', vocab_size: 1024, hidden_size: o.width.hidden, intermediate_size: 2 * o.width.hidden, num_hidden_layers: 2,
            num_attention_heads: o.width.heads, num_key_value_heads: o.width.heads / 2, max_position_embeddings: 512, tie_word_embeddings: true,
          },
          target: 'local',
        },
        phases: [
          // The teacher is the simulated endpoint: its rollouts are used on purpose (includeSimulated).
          { name: 'gather', kind: 'gather', samples: 1 },
          {
            name: 'sft',
            kind: 'sft',
            agents: [o.trained],
            model: 'student',
            minReward: 1,
            includeSimulated: true,
            hyperparameters: { ...LORA, learning_rate: 0.005, max_steps: o.sftSteps, batch_size: 8, grad_accum: 1, max_length: 384, save_steps: 0, warmup_steps: 0, seed: 0 },
          },
          {
            name: 'grpo',
            kind: 'grpo',
            agents: [o.trained],
            model: 'student',
            samples: 8,
            limit: o.grpo.tasks,
            // The helper's answers are simulated, which marks every rollout; the trained agent's calls are the served student's.
            includeSimulated: true,
            hyperparameters: { ...LORA, learning_rate: o.grpo.learningRate, kl_coef: 0, batch_size: 16, grad_accum: 1, epochs: 2, max_steps: -1, save_steps: 0, seed: 0, gradient_checkpointing: false },
          },
        ],
      },
    },
  };
}

/** The ticket-routing lab: a Router (the trained student) and a Responder. */
function ticketRouting(): ExampleLab {
  return studentLab({
    name: 'ticket-routing',
    summary: 'a Router agent (trained from scratch on this CPU) names the queue of a short support ticket; a Responder acknowledges it',
    files: ['graph.ts', 'reward.ts', 'tickets.ts', 'sim/teacher.ts', 'data/tickets.jsonl', 'README.md'],
    trained: 'Router',
    helper: 'Responder',
    model: 'qwen2-router',
    maxTokens: 8,
    dataset: { name: 'tickets', path: 'data/tickets.jsonl', goal: 'ticket', expected: 'queue' },
    sftSteps: 45,
    grpo: { learningRate: 0.001, tasks: 48 },
    width: { hidden: 64, heads: 4 },
  });
}

/** The stock-lookup lab: a Clerk (the trained student) that answers by calling a catalogue tool, and a Responder. */
function stockLookup(): ExampleLab {
  return studentLab({
    name: 'stock-lookup',
    summary: 'a Clerk agent (trained from scratch on this CPU) answers a shop question by calling get_price or get_stock with the item, rewarded by what the call returns; a Responder replies',
    files: ['graph.ts', 'reward.ts', 'catalogue.ts', 'sim/teacher.ts', 'data/questions.jsonl', 'README.md'],
    trained: 'Clerk',
    helper: 'Responder',
    model: 'qwen2-clerk',
    maxTokens: 40,
    dataset: { name: 'questions', path: 'data/questions.jsonl', goal: 'question', expected: 'answer' },
    // Its prompt is longer (the tools are listed in the system turn, about 200 tokens) and the item has to be found in the question and
    // written into the call: a wider model and more SFT steps than the Router's. Its answer is some twenty tokens, of which two decide
    // the reward: at the Router's GRPO learning rate one step already moves every token's distribution enough to lose more than the
    // group teaches, so GRPO steps a third as far, over more tasks.
    sftSteps: 250,
    grpo: { learningRate: 0.0003, tasks: 128 },
    width: { hidden: 128, heads: 8 },
  });
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
  if (name === 'stock-lookup') return stockLookup();
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
