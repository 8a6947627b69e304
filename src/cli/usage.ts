/*
 * The CLI's usage, one entry per command: `rollout-lab --help` lists every
 * command's forms; `rollout-lab COMMAND --help` (or -h, or `rollout-lab help
 * COMMAND`) prints that command's forms and a line per option.
 */

type Option = readonly [flag: string, what: string];

export interface CommandUsage {
  /** What the command does, in a sentence. */
  about: string;
  /** The forms it takes, after `rollout-lab COMMAND`; a "\n" continues a long form on the next line. */
  forms: string[];
  /** One line per option the command takes. */
  options: Option[];
  /** Anything else a user needs to use it (a SPEC's grammar, what --json prints, exit codes). */
  notes?: string[];
}

const WORKSPACE: Option = ['--workspace DIR', 'the folder that holds .rollout-lab/ (default: the current folder)'];
const BASE_URL: Option = ['--base-url URL', "send every model's calls to this OpenAI-compatible endpoint (the variable ROLLOUT_LAB_BASE_URL does the same)"];
const MODEL: Option = ['--model NAME', 'ask every endpoint for this model, whatever lab.json names'];
const INCLUDE_SIMULATED: Option = ['--include-simulated', 'also use rollouts made on the SIMULATED endpoint (left out by default)'];
const INCLUDE_PENALISED: Option = ['--include-penalised', 'also use rollouts whose reward is a penalty (the judge or the custom reward failed; left out by default); their rows say reward_source "penalty"'];
const json = (what: string): Option => ['--json', `print ${what} as one JSON document on stdout (progress stays on stderr)`];

const batch = (split: 'train' | 'val'): Option[] => [
  WORKSPACE,
  ['--dataset FILE', 'a task file (JSONL, PubMedQA ori_pqal.json, a pubmed_qa export) or a key of "datasets" in lab.json (default: runner.dataset, else the first)'],
  ['--split train|val|all', `which part of the dataset (default: ${split})`],
  ['--limit N', 'run N tasks of the split, drawn with the seed (default: all of them)'],
  ['--samples G', 'rollouts per task, a GRPO group (default: runner.samples)'],
  ['--concurrency C', 'rollouts at the same time (default: runner.concurrency)'],
  ['--seed S', 'seed of the task draw and of every model call (default: runner.seed)'],
  ['--resume RUN_ID', 'finish a run with its own options: redoes what was interrupted, cancelled, never started or failed on transport (connection, timeout, 5xx, 429); the attempts it redoes stay in the store, superseded'],
  ['--retry-failed', 'with --resume: also redo the rollouts that failed for the agent\'s own reasons (invalid output, no output, a tool error...)'],
  ['--shard K/N', 'run only slice K of N of the plan (K is 0-based: 0 to N-1), dealt by a stable hash of each task and sample, so the slices differ by at most one rollout and do not depend on the order of the tasks; with --resume RUN_ID, join a run split into N slices as its worker K (it skips what stands, so a restarted worker redoes only its unfinished rollouts); without, start a new run split so'],
  ['--workers N', 'split a new run (or, with --resume, a run split into N slices) over N worker processes, each `--resume RUN_ID --shard K/N` with --concurrency C of its own; prints their combined progress, then the metrics of the whole run, and the command that reruns any slice that failed'],
  ['--on local', 'with --workers: where the workers run — local (this machine) is the only place built so far'],
  BASE_URL,
  MODEL,
  json('{"runId", "simulated", "rollouts", "succeeded", "failed", "outcome", "metrics", "warnings"}'),
];

const BATCH_NOTES = [
  'A run split over workers is done only when every planned task and sample stands; each slice\'s worker ends without marking the run done or cancelled for the others. Two attempts of one task and sample that ran at once count once: the first that ended with a success stands.',
  'Warnings (prompts the server cut, answers cut at max_tokens, a custom reward that failed, a graph past runner.maxTurns) go to stderr once per run when they first happen; the summary and --json give their totals.',
  'Ctrl+C finishes the rollouts in flight and prints the --resume command.',
];

export const COMMAND_USAGE = {
  init: {
    about: 'Creates .rollout-lab/ in a folder: lab.json, a prompt file per agent, the tool tables and the JSON Schema.',
    forms: ['[--workspace DIR] [--dataset FILE] [--graph FILE [--export NAME]] [--force] [--json]', '[--workspace DIR] --example ticket-routing|stock-lookup|command-agents [--force] [--json]'],
    options: [
      ['--workspace DIR', 'the folder to set up (default: the current folder)'],
      ['--dataset FILE', "the task file lab.json names; rows of another shape get a field mapping guessed from their columns, printed (default: ../shared's PubMedQA set when it is there, else the bundled 200-item PubMedQA sample, copied into .rollout-lab/data/)"],
      ['--graph FILE', 'set the lab up for your own LangGraph.js module instead of the research lab: its agents (read from the module, not run) with a prompt file each, no research-lab tool tables or criteria'],
      ['--export NAME', 'the export of --graph holding the graph or its factory (default: default)'],
      ['--example NAME', 'copy an example lab into the folder and set lab.json up for it: ticket-routing (a Router trained from scratch on this CPU: a small Qwen2 built from a config on the transformers backend, with a simulated teacher; its local target runs the trainer venv, bash scripts/setupTrainerVenv.sh), stock-lookup (a Clerk trained the same way that answers by calling a catalogue tool, rewarded by what the call returns), or command-agents (the ticket task as a program outside the lab, graph.kind "command": a Python agent on the standard library, a Node agent on openai and OpenTelemetry)'],
      ['--force', 'overwrite files that exist (default: keep them)'],
      json('the files created and kept'),
    ],
  },
  run: {
    about: "Runs the lab's graph on dataset tasks (the train split by default), traces every step into the store and scores each rollout.",
    forms: [
      '[--workspace DIR] [--dataset FILE] [--split train|val|all] [--limit N] [--samples G]\n[--concurrency C] [--seed S] [--resume RUN_ID [--retry-failed]] [--shard K/N | --workers N [--on local]] [--json]',
    ],
    options: batch('train'),
    notes: BATCH_NOTES,
  },
  eval: {
    about: 'Runs the validation split like `run` and prints the evaluation table.',
    forms: [
      '[--workspace DIR] [--dataset FILE] [--split val] [--limit N] [--samples G]\n[--concurrency C] [--seed S] [--resume RUN_ID [--retry-failed]] [--shard K/N | --workers N [--on local]] [--json]',
    ],
    options: batch('val'),
    notes: BATCH_NOTES,
  },
  traces: {
    about: "Lists stored rollouts, newest first, or prints one rollout's span tree.",
    forms: [
      '[--workspace DIR] [--run RUN_ID] [--limit N] [--json]',
      '[--workspace DIR] --rollout ID [--full] [--json]',
      'export --otlp URL [--headers K=V[,K=V]] [--run RUN_ID | --rollout ID]\n[--protocol http/protobuf|http/json] [--workspace DIR] [--json]',
    ],
    options: [
      WORKSPACE,
      ['--run RUN_ID', "only this run's rollouts"],
      ['--limit N', 'list the N newest (default: 50 in the table, every one with --json)'],
      ['--rollout ID', "print this rollout's span tree instead of a list (export: export only this rollout); the whole id or its start, as progress lines show it"],
      ['--full', 'with --rollout --json: print attribute values whole (by default text over 64 KiB is cut, saying how much more there is)'],
      json('{"total", "rollouts": [...]} (total counts every match), or {"rollout", "spans"} with --rollout'),
      ['--otlp URL', 'export: the OTLP/HTTP collector (its base URL, e.g. http://localhost:4318, or the full …/v1/traces URL)'],
      ['--headers K=V[,K=V]', 'export: headers for the collector (API keys), added to OTEL_EXPORTER_OTLP_HEADERS; their values are never printed'],
      ['--protocol P', 'export: http/protobuf (default) or http/json'],
    ],
    notes: [
      'export sends each rollout as one trace: its span tree, messages as gen_ai.input.messages/gen_ai.output.messages, rewards as gen_ai.evaluation.result events on the root span; 429/502/503/504 answers are retried.',
    ],
  },
  collect: {
    about: "Receives OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, protobuf or JSON, gzip) and OTLP/gRPC into the workspace's store until Ctrl+C: each trace becomes a rollout.",
    forms: ['[--port P] [--grpc-port P|off] [--host H] [--idle-end-ms MS] [--workspace DIR]'],
    options: [
      ['--port P', 'the port to listen on (default: 4318, the OTLP/HTTP port; 0 picks a free one)'],
      ['--grpc-port P|off', 'the OTLP/gRPC port (default: 4317, the usual one; 0 picks a free one; off serves HTTP only)'],
      ['--host H', 'the address to listen on (default: 127.0.0.1; 0.0.0.0 takes traces from other machines)'],
      ['--idle-end-ms MS', 'a trace whose root span has not arrived this long after its last span ends incomplete, status interrupted (default: 60000)'],
      ['--workspace DIR', 'the folder whose .rollout-lab/store receives the traces (default: the current folder; lab.json is not needed)'],
    ],
    notes: [
      'Resource or span attributes rollout_lab.run.id, rollout_lab.task.id, rollout_lab.sample and rollout_lab.task.split name the rollout; traces without them go to the run "imported".',
      'Prints one line per request stored; refused requests (400, 413, 415) are logged on stderr.',
    ],
  },
  sim: {
    about: 'Serves the SIMULATED OpenAI-compatible endpoint on 127.0.0.1 until Ctrl+C (a test double that answers the research-lab roles, not a model).',
    forms: ['[--port P] [--latency-ms MS]'],
    options: [
      ['--port P', 'the port to listen on (default: 8089; 0 picks a free one)'],
      ['--latency-ms MS', 'wait this long before each answer (default: 0)'],
    ],
  },
  compact: {
    about: "Moves the journals of finished writers into gzip segments; safe while other processes use the store.",
    forms: ['[--workspace DIR] [--json]'],
    options: [WORKSPACE, json('what was compacted')],
  },
  rescore: {
    about: "Gives every stored rollout with judge scores the reward lab.json's current weights give them, keeping the old rewards in their history (no model calls).",
    forms: ['[--workspace DIR] [--run RUN_ID] [--split train|val] [--dry-run] [--json]'],
    options: [
      WORKSPACE,
      ['--run RUN_ID', "only this run's rollouts"],
      ['--split train|val', "only this split's rollouts"],
      ['--dry-run', 'print the before/after distributions, rank correlation and top-10 changes; change nothing'],
      json('the before/after statistics'),
    ],
  },
  report: {
    about: 'Prints the evaluation report of a run: the table with intervals, criteria, agents, decisions, failure categories and the lowest-reward rollouts.',
    forms: ['[--workspace DIR] [--run RUN_ID] [--format md|html|json] [--out FILE]'],
    options: [
      WORKSPACE,
      ['--run RUN_ID', 'the run to report (default: the newest eval run, else the newest run)'],
      ['--format md|html|json', "the format (default: from --out's extension, else md)"],
      ['--out FILE', 'write the report to FILE instead of stdout'],
    ],
  },
  compare: {
    about: 'Runs two configurations on the same tasks with the same seeds and compares them (paired t and Wilcoxon tests, per criterion, per task), or compares two stored runs.',
    forms: ['[--workspace DIR] --a SPEC --b SPEC [--dataset FILE] [--split val] [--limit N] [--samples G] [--json]', '[--workspace DIR] --runs RUN_A,RUN_B [--json]'],
    options: [
      WORKSPACE,
      ['--a SPEC', 'side A (see SPEC below)'],
      ['--b SPEC', 'side B'],
      ['--runs RUN_A,RUN_B', 'compare two stored runs, paired by task, instead of running anything'],
      ['--dataset FILE', 'a task file or a key of "datasets" in lab.json (default: runner.dataset, else the first)'],
      ['--split train|val|all', 'which part of the dataset (default: val)'],
      ['--limit N', 'compare on N tasks, drawn with the seed (default: all of the split)'],
      ['--samples G', 'rollouts per task and side (default: 1)'],
      ['--concurrency C', 'rollouts at the same time (default: runner.concurrency)'],
      ['--seed S', 'one seed for both sides (default: runner.seed)'],
      BASE_URL,
      MODEL,
      json('the comparison'),
    ],
    notes: [
      'A SPEC is "base" (lab.json as it is) or a comma-separated list of model:AGENT=MODEL (a key of "models"), prompt:AGENT=HASH (a stored prompt version or a unique prefix of it), prompt:AGENT=@path/to/prompt.md and label:TEXT.',
      'Warnings of each side\'s run go to stderr as in `run`.',
    ],
  },
  export: {
    about: 'Writes the training data of the stored rollouts as JSONL (sft conversations, rl transitions grouped by task, bandit decisions), with FILE.manifest.json beside it.',
    forms: ['[--workspace DIR] --format sft|rl|bandit --out FILE [--agents A,B] [--min-reward X] [--split train|val|all]\n[--credit equal|last|discounted] [--gamma G] [--prompt-version HASH] [--model-version V]\n[--run RUN_ID] [--include-simulated] [--include-penalised] [--json]'],
    options: [
      WORKSPACE,
      ['--format sft|rl|bandit', 'what to write (required)'],
      ['--out FILE', 'the JSONL file to write (required)'],
      ['--agents A,B', "whose model calls to export (default: the format's agents from lab.json)"],
      ['--min-reward X', 'only rollouts with at least this final reward (default: 0.7 for sft, none otherwise)'],
      ['--split train|val|all', 'which rollouts (default: train)'],
      ['--credit equal|last|discounted', 'rl: how the final reward reaches each call (default: equal)'],
      ['--gamma G', 'rl with --credit discounted: the discount per step back'],
      ['--prompt-version HASH', 'only rollouts that ran this prompt version'],
      ['--model-version V', 'only rollouts that ran this model version'],
      ['--run RUN_ID', "only this run's rollouts"],
      INCLUDE_SIMULATED,
      INCLUDE_PENALISED,
      json('the manifest'),
    ],
    notes: ['No rows to write: exit 1, nothing written, and the count of rollouts dropped per reason (agent not found, simulated, below the minimum reward, penalised, ...).'],
  },
  preflight: {
    about: 'Checks the stored rollouts a training phase would learn from and says what would make it fail or learn nothing.',
    forms: ['[--workspace DIR] --phase sft|grpo|bandit|apo [--agents A,B] [--min-reward X] [--split train|val|all] [--include-simulated] [--include-penalised] [--json]'],
    options: [
      WORKSPACE,
      ['--phase sft|grpo|bandit|apo', 'the phase to check for (required)'],
      ['--agents A,B', 'the agents the phase trains (default: those the phase and the graph give)'],
      ['--min-reward X', 'sft: the final reward a rollout needs to count, 0 to 1 (default: 0.7)'],
      ['--split train|val|all', 'the rollouts to check (default: train, what the phase trains on; apo: all)'],
      INCLUDE_SIMULATED,
      INCLUDE_PENALISED,
      json('every check with its offending rollouts'),
    ],
    notes: ['Exit 1 when a check is an error, so a script can stop before the phase; sft and grpo with 0 training rows is one.'],
  },
  bandit: {
    about: "Trains the Supervisor's contextual bandit on the stored Supervisor decisions and makes it the active policy, or shows the policies.",
    forms: ['[--workspace DIR] train [--split train|val|all] [--include-simulated] [--json]', '[--workspace DIR] show [--json]'],
    options: [WORKSPACE, ['--split train|val|all', 'train: which decisions to learn from (default: train)'], INCLUDE_SIMULATED, json('the policy')],
  },
  optimize: {
    about: "Optimises one agent's prompt: a critic reads its lowest-reward rollouts, an editor writes rewrites, real rollouts on validation tasks score them; --apply writes the winner.",
    forms: ['[--workspace DIR] --agent NAME [--rounds R] [--beam B] [--candidates N] [--tasks N] [--apply] [--include-simulated] [--json]'],
    options: [
      WORKSPACE,
      ['--agent NAME', 'the agent whose prompt to optimise (required)'],
      ['--rounds R', 'rounds of critique and rewrites (default: optimize.rounds)'],
      ['--beam B', 'prompts kept after each round (default: optimize.beam)'],
      ['--candidates N', 'rewrites per kept prompt (default: optimize.candidates)'],
      ['--tasks N', 'validation tasks each candidate is scored on (default: optimize.validationTasks)'],
      ['--apply', 'write the winner into the prompt file (or promptText) when it beats the current prompt'],
      ['--include-simulated', "show the critic rollouts made on the SIMULATED endpoint too (left out by default)"],
      BASE_URL,
      MODEL,
      json('every round, the winner and what was applied'),
    ],
  },
  pipeline: {
    about: "The training pipeline of lab.json (training.phases; for the built-in research-lab graph, the reference phases when none are declared) the registry of trained model versions, and the learning curve (validation reward per model version).",
    forms: [
      '[--workspace DIR] [status] [--json]',
      '[--workspace DIR] run PHASE [--limit N] [--samples G] [--include-simulated] [--json]',
      '[--workspace DIR] curve [--agent A | --model M] [--real-only] [--json]',
      '[--workspace DIR] rollback MODEL [--json]',
      '[--workspace DIR] register MODEL --version V [--base-url URL] [--model ID] [--adapter PATH] [--phase NAME] [--agents A,B] [--json]',
    ],
    options: [
      WORKSPACE,
      ['--limit N', "run: tasks of a gather phase (default: the phase's own)"],
      ['--samples G', "run: rollouts per task of a gather phase (default: the phase's own)"],
      ['--include-simulated', 'run: a data phase also uses rollouts made on the SIMULATED endpoint'],
      ['--version V', 'register: the version label rollouts will record (required)'],
      ['--base-url URL', 'register: where the trained model is served; other actions: send every call there'],
      ['--model ID', 'register: the model id the server knows it by; curve: the logical model whose versions to show; other actions: ask every endpoint for it'],
      ['--adapter PATH', 'register: the adapter the version was trained into'],
      ['--phase NAME', 'register: the phase that produced it (marks that phase done)'],
      ['--agents A,B', "register: only these agents of the model run it, the others keep their version (default: the phase's agents when the model has others)"],
      ['--agent A', "curve: one agent's learning curve (default: every trained agent's)"],
      ['--real-only', 'curve: leave out rollouts answered by the SIMULATED endpoint (flagged per version otherwise)'],
      json('the status, the phase record, the learning curve or the registry entry'),
    ],
  },
  train: {
    about: "Runs a training phase: pre-flight, export, a job bundle launched on a target (local, SSH, SkyPilot, Kubernetes, Slurm), its log and curves, then the result served and registered.",
    forms: [
      '[--workspace DIR] --phase sft|grpo|bandit|apo|NAME [--target local|ssh|skypilot|k8s|slurm|NAME]\n[--base-model M] [--backend transformers] [--set KEY=VALUE ...] [--no-serve] [--detach] [--dry-run] [--include-simulated] [--json]',
      '[--workspace DIR] --phase grpo|NAME --online [--rounds R] [--tasks K] [--samples G] [--target T] [--include-simulated] [--keep-serving] [--json]',
    ],
    options: [
      WORKSPACE,
      ['--phase KIND|NAME', 'the phase: a kind (sft, grpo, bandit, apo) or a name in training.phases (required)'],
      ['--target NAME', "where it runs: local, a key of training.targets or a target kind (default: the phase's, else training.trainer.target, else local)"],
      ['--base-model M', "the model to train from (default: the phase's, else training.trainer.baseModel)"],
      ['--backend transformers', "the trainer's backend for this job (default training.trainer.backend), the only one: a Hugging Face model (or one built from training.trainer.modelConfig) with a LoRA adapter (transformers, peft, TRL; a GPU, or the CPU for a small one)"],
      ['--set KEY=VALUE', 'a hyper-parameter, e.g. --set learning_rate=5e-7; repeat for more'],
      ['--no-serve', 'keep the adapter without serving it (jobs serve ID serves it later)'],
      ['--detach', 'launch the job and return; follow it with `rollout-lab jobs attach ID`'],
      ['--dry-run', 'print the spec, the files and every command a target would get; launch nothing'],
      ['--online', 'grpo: rounds of rollouts against the served policy, each round training it'],
      ['--rounds R', 'online: rounds (default: 3)'],
      ['--tasks K', 'online: training tasks per round'],
      ['--samples G', 'online: rollouts per task (the group size)'],
      ['--keep-serving', 'online: leave the policy server running after the last round (default: stopped, and the model goes back to its version before the loop; the weights stay saved)'],
      ['--include-simulated', 'also train on rollouts made on the SIMULATED endpoint'],
      BASE_URL,
      MODEL,
      json('the job, the dry run or the online rounds'),
    ],
  },
  jobs: {
    about: "The lab's training jobs, newest first: show one, print or follow its log, cancel it, serve its result.",
    forms: ['[--workspace DIR] [list] [--json]', '[--workspace DIR] show|logs|attach|cancel ID [--json]', '[--workspace DIR] serve ID [--target T] [--json]'],
    options: [WORKSPACE, ['--target T', 'serve: where to serve the result (default: where the job ran)'], json('the job records')],
  },
  demo: {
    about: 'Sets up a demo workspace (the full PubMedQA set when ../shared has it, else the bundled 200-item sample; it says which), runs training rollouts, then evaluates on validation tasks. With --train: the learning run on an example lab (ticket-routing, or stock-lookup: a tool-calling agent), from an untrained model to SFT and GRPO, on this CPU.',
    forms: ['[--workspace DIR] [--limit N]', '--train [--example ticket-routing|stock-lookup] [--workspace DIR] [--json]'],
    options: [
      ['--workspace DIR', 'the demo folder (default: demo-workspace; with --train: demo-train-workspace, or demo-train-EXAMPLE with --example)'],
      ['--limit N', 'tasks of each of the two runs (default: 10)'],
      ['--example NAME', '--train: the example lab to set up in a new workspace: ticket-routing (default; a Router names a queue) or stock-lookup (a Clerk answers by calling get_price or get_stock, rewarded by what the call returns)'],
      ['--train', 'init --example ticket-routing (or --example), then: gather with the simulated teacher, evaluate the untrained student, SFT it, evaluate, GRPO it (offline, then online), evaluate; prints validation reward per stage (a few minutes on 2 CPU cores; needs the trainer venv: bash scripts/setupTrainerVenv.sh)'],
      BASE_URL,
      MODEL,
      json('--train: the stages with their rewards and intervals'),
    ],
  },
} satisfies Record<string, CommandUsage>;

export type CommandName = keyof typeof COMMAND_USAGE;

export const COMMAND_NAMES = Object.keys(COMMAND_USAGE) as CommandName[];

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMAND_USAGE, name);
}

const HELP: Option = ['-h, --help', 'print this help'];
const EXIT_CODES = 'Exit codes: 0 success, 1 runtime failure, 2 usage or config error.';

function formLines(command: string, forms: readonly string[], width: number): string[] {
  const head = `rollout-lab ${command.padEnd(width)} `;
  return forms.flatMap((form) => form.split('\n').map((part, i) => `  ${i === 0 ? head : ' '.repeat(head.length)}${part}`));
}

/** `rollout-lab --help`: every command's forms. */
export function globalUsage(): string {
  const width = Math.max(...COMMAND_NAMES.map((c) => c.length));
  return [
    'Rollout Lab: run, trace and score multi-agent LangGraph.js systems.',
    '',
    'Usage:',
    ...COMMAND_NAMES.flatMap((c) => formLines(c, COMMAND_USAGE[c].forms, width)),
    '',
    '`rollout-lab COMMAND --help` explains a command and each of its options.',
    'Common options: --base-url URL and --model NAME override every model (a quick start against one server).',
    EXIT_CODES,
  ].join('\n');
}

/** `rollout-lab COMMAND --help`: what it does, its forms, a line per option. */
export function commandUsage(command: CommandName): string {
  const u: CommandUsage = COMMAND_USAGE[command];
  const options = [...u.options, HELP];
  const width = Math.max(...options.map(([flag]) => flag.length));
  return [
    `rollout-lab ${command}: ${u.about}`,
    '',
    'Usage:',
    ...formLines(command, u.forms, 0),
    '',
    'Options:',
    ...options.map(([flag, what]) => `  ${flag.padEnd(width)}  ${what}`),
    ...(u.notes?.length ? ['', ...u.notes] : []),
    '',
    EXIT_CODES,
  ].join('\n');
}
