import { z } from 'zod';
import { BanditSchema, OptimizeSchema, TrainingSchema } from './trainingSchema';
import { WorkersSchema } from './workersSchema';

/** Reference criteria and weights of the research-lab judge. */
export const DEFAULT_CRITERIA = {
  novelty: {
    weight: 0.1,
    description: 'Goes beyond what the context already states: a new angle, mechanism or combination.',
  },
  feasibility: {
    weight: 0.2,
    description: 'Can be carried out with standard laboratory resources, skills and time.',
  },
  impact: {
    weight: 0.3,
    description: 'Scientific or clinical significance if the hypothesis is confirmed.',
  },
  clarity: {
    weight: 0.15,
    description: 'Specific, measurable and reproducible: steps, controls and endpoints are explicit.',
  },
  groundedness: {
    weight: 0.2,
    description: 'Supported by the context; claims the context does not support are penalised.',
  },
  efficiency: {
    weight: 0.05,
    description: 'Reasonable cost and duration for what it would establish.',
  },
} as const;

export const RESEARCH_LAB_TOOLS = [
  'pubmed_search',
  'clinical_trials_search',
  'protein_lookup',
  'gene_ontology_lookup',
] as const;

/** max_tokens of an agent's call when lab.json gives none. */
export const DEFAULT_MAX_TOKENS = 2048;
/** max_tokens of the judge's call: its answer is a flat object of scores and a short rationale. */
const DEFAULT_JUDGE_MAX_TOKENS = 512;
export const DEFAULT_TOP_LOGPROBS = 1;
/** How a malformed structured answer is repaired (models.<name>.repair). */
export const REPAIR_POLICIES = ['local', 'request'] as const;
export type RepairPolicy = (typeof REPAIR_POLICIES)[number];

export const STRUCTURED_OUTPUT_MODES = ['json_schema', 'json_object', 'off'] as const;
export type StructuredOutputMode = (typeof STRUCTURED_OUTPUT_MODES)[number];

const name = z
  .string()
  .min(1)
  .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'use letters, digits, "_", "-" or "." and start with a letter');

export const ModelSchema = z
  .strictObject({
    baseUrl: z
      .url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL such as http://127.0.0.1:11434/v1' })
      .optional()
      .describe(
        'OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1. Leave out to use the built-in simulated endpoint.',
      ),
    model: z.string().min(1).describe('Model id the endpoint serves, e.g. qwen2.5:1.5b-instruct or gpt-4o-mini.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as OPENAI_API_KEY')
      .optional()
      .describe('Name of the environment variable holding the API key. Keys never go in this file.'),
    temperature: z.number().min(0).max(2).optional().describe('Sampling temperature, 0 to 2; agents may override it.'),
    price: z
      .strictObject({
        input: z.number().min(0).describe('Price of 1,000,000 input (prompt) tokens.'),
        output: z.number().min(0).describe('Price of 1,000,000 output (completion) tokens.'),
      })
      .optional()
      .describe('What the model costs per 1,000,000 tokens, in any one currency for all models; the Rollouts Table shows a cost column when some model has a price.'),
    maxTokens: z
      .number()
      .int()
      .positive()
      .default(DEFAULT_MAX_TOKENS)
      .describe(
        'Upper bound on generated tokens per call, sent as max_tokens with every call, so a model that loops stops here instead of at the server\'s context limit. The judge has its own (reward.judge.maxTokens); an agent may override it (agents.<Agent>.maxTokens).',
      ),
    timeoutMs: z.number().int().positive().default(120_000).describe('Per-call timeout in milliseconds.'),
    maxRetries: z.number().int().min(0).max(20).default(4).describe('Retries on 429, 5xx and timeouts.'),
    logprobs: z.boolean().default(false).describe('Ask the server for token logprobs (needed by some RL phases).'),
    topLogprobs: z
      .number()
      .int()
      .min(0)
      .max(20)
      .default(DEFAULT_TOP_LOGPROBS)
      .describe(
        'With logprobs: top_logprobs sent (alternatives per token). Only the sampled token\'s logprob is stored. 1 by default because llama.cpp returns no logprobs at all for 0 and 20 alternatives when it is left out; 0 suits OpenAI and vLLM.',
      ),
    structuredOutput: z
      .enum(STRUCTURED_OUTPUT_MODES)
      .default('json_schema')
      .describe(
        'How an answer with a schema is enforced: "json_schema" (response_format with the answer\'s JSON Schema: OpenAI, vLLM, llama.cpp, Ollama, LM Studio), "json_object" (any JSON object; not LM Studio), or "off" (the prompt asks for JSON). Never sent on a call with tools bound; a server that rejects the mode with HTTP 400 is asked again with the next weaker one. Answers are always validated and repaired once (see "repair").',
      ),
    repair: z
      .enum(REPAIR_POLICIES)
      .default('local')
      .describe(
        'How an answer with a schema that is not valid JSON is repaired: "local" (near-JSON — unquoted keys or values, single quotes, trailing commas, a cut-off end — is fixed here and recorded as repaired locally; the model gets a repair request only when that gives no valid answer) or "request" (every malformed answer goes back to the model with a repair request, so its own correction is what is used and recorded). Either way the trace keeps the original text and the evaluation report counts the repairs.',
      ),
    tokenIds: z
      .boolean()
      .default(false)
      .describe('Ask the server for the completion\'s token ids (`return_token_ids`: vLLM and python-trainer\'s serve), so GRPO uses the exact tokens and logprobs the behaviour policy sampled.'),
    version: z.string().optional().describe('Model version label recorded on every rollout (set when a trained model is registered).'),
  })
  .describe('A logical model: agents refer to it by its key.');

export const AgentSchema = z
  .strictObject({
    model: name.describe('Key of a model in "models".'),
    prompt: z
      .string()
      .min(1)
      .optional()
      .describe('Prompt file relative to .rollout-lab/, e.g. prompts/Geneticist.md.'),
    promptText: z.string().min(1).optional().describe('Prompt written inline instead of in a file.'),
    tools: z.array(z.string().min(1)).default([]).describe('Tool names this agent may call.'),
    temperature: z.number().min(0).max(2).optional().describe('Overrides the model temperature for this agent.'),
    maxTokens: z.number().int().positive().optional().describe("Overrides its model's maxTokens (max_tokens of each call) for this agent."),
    trainable: z
      .boolean()
      .optional()
      .describe(
        'Graph kind "module": the training commands (export, pre-flight, the pipeline example) train the agents marked true by default; when none is marked, every agent that made model calls.',
      ),
  })
  .describe('An agent of the graph: which model it calls, its prompt and its tools.');

const fieldPath = z
  .string()
  .min(1)
  .regex(/^[^.]+(\.[^.]+)*$/, 'a field name, or a dotted path such as "meta.db_id"');

export const DatasetFieldsSchema = z
  .strictObject({
    id: fieldPath
      .optional()
      .describe('Field holding the task id. Left out: the row\'s "id" when it has one, else an id made from a hash of the row (the same on every load, whatever the order of the rows).'),
    goal: fieldPath.describe('Field holding the question or goal the agents work on, e.g. "question".'),
    context: fieldPath.optional().describe('Field holding background the agents see: a string or a list of strings. Left out: no context.'),
    expected: fieldPath
      .optional()
      .describe('Field holding the gold answer, any JSON value (a SQL query, a label...). Only the reward gets it (task.expected); the agents never see it.'),
    decision: fieldPath
      .optional()
      .describe('Field holding an expert yes/no/maybe answer, for the decision-alignment metrics. The agents never see it.'),
    visible: z
      .array(fieldPath)
      .default([])
      .describe('Further fields the agents may see, e.g. ["db_id"]: they are in the task the graph input is built from. Every other field reaches only the reward (task.meta).'),
  })
  .superRefine((f, ctx) => {
    // A field the agents see may not hold the gold answer: the same path, one inside it, or one it sits inside.
    const overlaps = (a: string, b: string | undefined): boolean => b !== undefined && (a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`));
    const seen: Array<{ field: string; where: Array<string | number> }> = [
      { field: f.goal, where: ['goal'] },
      ...(f.context !== undefined ? [{ field: f.context, where: ['context'] }] : []),
      ...f.visible.map((field, i) => ({ field, where: ['visible', i] })),
    ];
    for (const { field, where } of seen) {
      const gold = overlaps(field, f.expected) ? `fields.expected ("${f.expected}")` : overlaps(field, f.decision) ? `fields.decision ("${f.decision}")` : null;
      if (gold) ctx.addIssue({ code: 'custom', path: where, message: `"${field}" holds ${gold}, the gold answer; the agents must not see it — map another field here` });
    }
  })
  .describe('Which field of each row is what, for rows that are not in the project\'s own shape (id, goal, context, expected_decision); dotted paths reach into nested objects.');

export const DatasetSchema = z
  .strictObject({
    path: z.string().min(1).describe('JSONL, a JSON array of rows, PubMedQA ori_pqal.json, or a Hugging Face pubmed_qa pqa_labeled export. Relative to the workspace.'),
    format: z
      .enum(['auto', 'jsonl', 'pubmedqa', 'hf-pubmedqa'])
      .default('auto')
      .describe('File format; "auto" tells it from the extension and the shape of the data.'),
    trainFraction: z
      .number()
      .gt(0)
      .lt(1)
      .default(0.8)
      .describe('The first fraction of tasks, in file order, is the train split; the rest is val.'),
    fields: DatasetFieldsSchema.optional().describe(
      'Maps the fields of your own rows (JSONL, or a JSON array such as Spider\'s) to a task, e.g. {"goal": "question", "expected": "query", "visible": ["db_id"]}.',
    ),
    maxRowBytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('Largest row the dataset may hold, in bytes as the file has it; default 4194304 (4 MiB, about a million tokens). A larger row stops the load naming it: every model call of its rollouts would carry it.'),
  })
  .superRefine((ds, ctx) => {
    if (ds.fields && (ds.format === 'pubmedqa' || ds.format === 'hf-pubmedqa')) {
      ctx.addIssue({ code: 'custom', path: ['fields'], message: `"fields" maps rows of your own; format "${ds.format}" has fixed fields — set "format" to "jsonl" or "auto", or remove "fields"` });
    }
  })
  .describe('A task file: each task has a goal, a context and optionally a gold answer (expected) or an expected yes/no/maybe decision.');

export const CriterionSchema = z.strictObject({
  weight: z.number().min(0).describe('Weight in the final reward; weights are normalised to sum to 1.'),
  description: z.string().min(1).describe('What the judge scores under this criterion.'),
});

export const AirRuleSchema = z
  .strictObject({
    name: name.describe('Label shown next to the reward in traces.'),
    when: z
      .enum(['tool.ok', 'tool.error', 'output.valid', 'output.invalid'])
      .describe('tool.ok / tool.error: after a tool call; output.valid / output.invalid: after an agent answer is parsed.'),
    agents: z.array(z.string()).optional().describe('Only for these agents (all when left out).'),
    tools: z.array(z.string()).optional().describe('Only for these tools (tool.* rules).'),
    reward: z.number().min(-1).max(1).describe('Intermediate reward given each time the rule fires.'),
  })
  .describe('An automatic intermediate reward (AIR) rule.');

export const RewardSchema = z.strictObject({
  judge: z
    .strictObject({
      model: name.describe('Key of the model that judges.'),
      promptText: z.string().optional().describe('Replaces the built-in judge instructions.'),
      maxTokens: z
        .number()
        .int()
        .positive()
        .default(DEFAULT_JUDGE_MAX_TOKENS)
        .describe("max_tokens of each judge call (its answer is short); used instead of the judge model's maxTokens."),
    })
    .prefault({ model: 'strong' })
    .describe('The LLM judge that scores a finished rollout.'),
  criteria: z
    .record(name, CriterionSchema)
    .prefault(() => structuredClone(DEFAULT_CRITERIA))
    .describe('Criteria the judge scores (an integer from 0 to 10 each, read as 0 to 1), with their weights in the final reward.'),
  judgeFailurePenalty: z
    .number()
    .min(0)
    .max(1)
    .default(0.1)
    .describe('Score given to every criterion when the judge fails; the rollout is marked judge-failed.'),
  noOutputReward: z.number().min(0).max(1).default(0).describe('Final reward of a rollout that produced no final protocol.'),
  module: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Custom reward: a TS or JS file, relative to the workspace, whose default export (or export "reward") is a function (input) => number | { reward, breakdown?, info? }, sync or async, in 0..1. It is called for every rollout, also one with no final output.',
    ),
  mode: z
    .enum(['replace', 'combine'])
    .default('replace')
    .describe(
      'With "module": "replace" makes the custom reward the final reward (the judge runs only if the module calls input.judge()); "combine" always runs the judge and gives (1 - customWeight) × judge reward + customWeight × custom reward.',
    ),
  customWeight: z.number().min(0).max(1).default(0.5).describe('Weight of the custom reward in mode "combine".'),
  customFailurePenalty: z
    .number()
    .min(0)
    .max(1)
    .default(0)
    .describe('Final reward of a rollout whose custom reward threw or returned something that is not a number in 0..1; the rollout is kept. (A reward that runs out of time, or ends its worker, fails the rollout.)'),
  customTimeoutMs: z
    .number()
    .int()
    .min(1)
    .default(30_000)
    .describe('Time limit in milliseconds for one call of the custom reward (judge call included); the module runs in a worker thread of its own, which is stopped past it, and the rollout fails with "timeout".'),
});

export const GraphSchema = z.strictObject({
  kind: z
    .enum(['research-lab', 'module', 'command'])
    .default('research-lab')
    .describe('"research-lab": the built-in nine-agent graph; "module": your own LangGraph.js graph; "command": your own program, in any language, run once per rollout.'),
  module: z.string().optional().describe('TS or JS file exporting a LangGraph.js graph or a factory (kind "module").'),
  export: z.string().default('default').describe('Name of the export to use from the module.'),
  command: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .describe('Kind "command": the program and its arguments, e.g. ["python3", "agent.py"] (no shell). It gets the task as JSON on standard input and prints its final output as one JSON object.'),
  cwd: z.string().optional().describe('Kind "command": the directory it runs in, relative to the workspace (default: the workspace).'),
  env: z.record(z.string(), z.string()).optional().describe('Kind "command": further environment variables for the program.'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .optional()
    .describe('Kinds "command" and "module": time limit of one rollout (default 300000); past it the program (or the graph module\'s worker thread) is stopped and the rollout fails with "timeout".'),
  decisions: z
    .record(z.string().min(1), z.enum(['yes', 'no', 'maybe']))
    .optional()
    .describe(
      'Which expert answer each decision of the graph stands for, for decision alignment, e.g. {"ACCEPT": "yes", "REJECT": "no"} (any case; spaces and _ read as -). Default: {"GO": "yes", "NO-GO": "no"} for the research lab, none for your own graph; without a mapping a decision matches the label it spells (yes, no, maybe).',
    ),
});

export const ToolsSchema = z.strictObject({
  searchTopK: z.number().int().positive().max(50).default(5).describe('Results a search tool returns when the agent does not ask for a number.'),
  searchProvider: z
    .string()
    .optional()
    .describe('Module exporting a search provider that replaces the built-in BM25 index.'),
  searchProviderTimeoutMs: z
    .number()
    .int()
    .min(1)
    .default(30_000)
    .describe('Time limit in milliseconds for one search of "searchProvider" (it runs in a worker thread of its own); past it the worker is stopped and the tool call fails.'),
  proteinTable: z.string().default('data/proteins.json').describe('Relative to .rollout-lab/.'),
  geneOntologyTable: z.string().default('data/gene_ontology.json').describe('Relative to .rollout-lab/.'),
  excludeCurrentTask: z
    .boolean()
    .default(true)
    .describe("Hide the rollout's own task from the search tools, so an agent cannot simply look up the abstract it was given."),
});

export const RunnerSchema = z.strictObject({
  concurrency: z.number().int().positive().max(256).default(4).describe('Rollouts run at the same time.'),
  samples: z.number().int().positive().max(64).default(1).describe('Rollouts per task (the GRPO group size).'),
  seed: z.number().int().default(42).describe('Seed for task sampling and the simulated endpoint.'),
  maxTurns: z
    .number()
    .int()
    .positive()
    .max(200)
    .default(15)
    .describe('Turn limit of a rollout; at the limit the graph goes to its final agent.'),
  dataset: z.string().optional().describe('Key in "datasets" used when --dataset is not given.'),
});

export const SimulatorSchema = z
  .strictObject({
    answers: z
      .string()
      .min(1)
      .optional()
      .describe(
        'JSON Lines file, relative to the workspace, of canned answers: {"agent": "SqlWriter", "match": "substring or /regex/i of the last user message", "answer": "text" | {"content", "tool_calls": [{"name", "arguments"}]}} per line. The first row that fits answers.',
      ),
    module: z
      .string()
      .min(1)
      .optional()
      .describe(
        'TS or JS file, relative to the workspace, whose default export (or export "answer") is (request: { agent, messages, tools }) => string | { content?, tool_calls? } | undefined, sync or async. Asked before "answers"; undefined passes the request on.',
      ),
    moduleTimeoutMs: z
      .number()
      .int()
      .min(1)
      .default(30_000)
      .describe('Time limit in milliseconds for one answer of "module" (it runs in a worker thread of its own); past it the worker is stopped and the model call fails with a timeout.'),
  })
  .describe("Canned answers the simulated endpoint gives your own graph's agents, so it can be exercised offline. Requests nothing answers get the simulator's generic answer.");

const OtlpSchema = z
  .strictObject({
    export: z
      .strictObject({
        endpoint: z
          .string()
          .url()
          .describe('The OTLP/HTTP collector: its base URL (e.g. http://localhost:4318; /v1/traces is added) or the full traces URL. Phoenix, Langfuse, Jaeger or any OpenTelemetry collector.'),
        headersEnv: z
          .string()
          .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
          .optional()
          .describe('Name of an environment variable holding headers for the collector as K=V[,K=V] (API keys stay out of lab.json). OTEL_EXPORTER_OTLP_HEADERS is read too.'),
        protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf').describe('How spans are encoded.'),
      })
      .optional()
      .describe('Export each rollout as one OTLP trace as soon as it ends (its spans, messages and rewards); a failed export is one warning and never fails the run.'),
  })
  .describe('OpenTelemetry (OTLP) export of rollouts.');

export const LabConfigSchema = z
  .strictObject({
    $schema: z.string().optional().describe('JSON Schema of this file, for completion in editors.'),
    version: z.literal(1).default(1).describe('Version of the lab config format.'),
    models: z.record(name, ModelSchema).describe('Logical models by name; agents and the judge refer to these keys.'),
    agents: z.record(name, AgentSchema).describe('Agents of the graph by name.'),
    graph: GraphSchema.prefault({}).describe('Which agent graph the rollouts run.'),
    datasets: z.record(name, DatasetSchema).default({}).describe('Task files by name.'),
    tools: ToolsSchema.prefault({}).describe('Settings of the research-lab tools.'),
    reward: RewardSchema.prefault({}).describe('How a finished rollout is scored.'),
    air: z.array(AirRuleSchema).default([]).describe('Automatic intermediate reward rules, applied during a rollout.'),
    runner: RunnerSchema.prefault({}).describe('Defaults of the rollout runner.'),
    bandit: BanditSchema.prefault({}).describe("The contextual bandit that learns the Supervisor's choice among hypotheses."),
    optimize: OptimizeSchema.prefault({}).describe('Prompt optimisation (critique, rewrite, score; no GPU).'),
    training: TrainingSchema.prefault({}).describe('Pre-flight limits and the phased training pipeline.'),
    simulator: SimulatorSchema.optional().describe('What the built-in simulated endpoint answers for models without a baseUrl.'),
    otlp: OtlpSchema.optional(),
    workers: WorkersSchema.prefault({}),
  })
  .describe('Rollout Lab configuration (.rollout-lab/lab.json).')
  .superRefine((cfg, ctx) => {
    for (const [agent, a] of Object.entries(cfg.agents)) {
      if (!cfg.models[a.model]) {
        ctx.addIssue({
          code: 'custom',
          path: ['agents', agent, 'model'],
          message: `model "${a.model}" is not defined; add it under "models" or use one of: ${Object.keys(cfg.models).join(', ')}`,
        });
      }
      if (cfg.graph.kind === 'research-lab') {
        a.tools.forEach((tool, i) => {
          if (!(RESEARCH_LAB_TOOLS as readonly string[]).includes(tool)) {
            ctx.addIssue({
              code: 'custom',
              path: ['agents', agent, 'tools', i],
              message: `unknown tool "${tool}"; the research-lab graph has: ${RESEARCH_LAB_TOOLS.join(', ')}`,
            });
          }
        });
      }
      if (a.prompt && a.promptText) {
        ctx.addIssue({
          code: 'custom',
          path: ['agents', agent],
          message: 'give either "prompt" (a file) or "promptText" (inline), not both',
        });
      }
    }
    if (cfg.reward?.judge && !cfg.models[cfg.reward.judge.model]) {
      ctx.addIssue({
        code: 'custom',
        path: ['reward', 'judge', 'model'],
        message: `judge model "${cfg.reward.judge.model}" is not defined under "models"`,
      });
    }
    if (cfg.graph.kind === 'module' && !cfg.graph.module) {
      ctx.addIssue({ code: 'custom', path: ['graph', 'module'], message: 'graph kind "module" needs "module": the path of a TS or JS file' });
    }
    if (cfg.graph.kind === 'command' && !cfg.graph.command) {
      ctx.addIssue({ code: 'custom', path: ['graph', 'command'], message: 'graph kind "command" needs "command": the program and its arguments, e.g. ["python3", "agent.py"]' });
    }
    for (const key of ['criticModel', 'editorModel'] as const) {
      const m = cfg.optimize[key];
      if (m && !cfg.models[m]) ctx.addIssue({ code: 'custom', path: ['optimize', key], message: `model "${m}" is not defined under "models"` });
    }
    const phaseNames = new Set<string>();
    cfg.training.phases.forEach((p, i) => {
      if (phaseNames.has(p.name)) ctx.addIssue({ code: 'custom', path: ['training', 'phases', i, 'name'], message: `phase name "${p.name}" is used twice; give each phase its own name` });
      phaseNames.add(p.name);
      if (p.model && !cfg.models[p.model]) ctx.addIssue({ code: 'custom', path: ['training', 'phases', i, 'model'], message: `model "${p.model}" is not defined under "models"` });
      for (const [j, a] of (p.agents ?? []).entries()) {
        if (!cfg.agents[a]) ctx.addIssue({ code: 'custom', path: ['training', 'phases', i, 'agents', j], message: `agent "${a}" is not defined under "agents"` });
      }
    });
    if (cfg.runner.dataset && !cfg.datasets[cfg.runner.dataset]) {
      ctx.addIssue({ code: 'custom', path: ['runner', 'dataset'], message: `dataset "${cfg.runner.dataset}" is not defined under "datasets"` });
    }
  });

export type LabConfig = z.output<typeof LabConfigSchema>;
export type LabConfigInput = z.input<typeof LabConfigSchema>;
export type ModelConfig = z.output<typeof ModelSchema>;
export type AgentConfig = z.output<typeof AgentSchema>;
export type DatasetConfig = z.output<typeof DatasetSchema>;
export type DatasetFields = z.output<typeof DatasetFieldsSchema>;
export type DatasetFieldsInput = z.input<typeof DatasetFieldsSchema>;
export type SimulatorConfig = z.output<typeof SimulatorSchema>;
export type AirRule = z.output<typeof AirRuleSchema>;
export type RewardConfig = z.output<typeof RewardSchema>;
export type ToolsConfig = z.output<typeof ToolsSchema>;
export type RunnerConfig = z.output<typeof RunnerSchema>;
