import { z } from 'zod';
import { slurmTime, slurmWord, WORKER_PLACES } from './workersSchema';

/**
 * The training side of lab.json: the Supervisor's contextual bandit, prompt
 * optimisation, pre-flight limits and the phased training pipeline.
 */

const agentName = z.string().min(1);

export const BanditSchema = z.strictObject({
  mode: z
    .enum(['off', 'advise', 'decide'])
    .default('off')
    .describe('"off": the Supervisor picks alone; "advise": the policy\'s ranking of the hypotheses goes into its prompt; "decide": the policy picks (with epsilon exploration).'),
  agent: agentName.default('Supervisor').describe('The agent whose choice among candidates the bandit learns.'),
  algorithm: z.enum(['linucb', 'logistic']).default('linucb').describe('LinUCB, or logistic regression weighted by reward.'),
  alpha: z.number().min(0).default(1).describe('LinUCB exploration bonus.'),
  epsilon: z.number().min(0).max(1).default(0.1).describe('Probability of a uniformly random pick in mode "decide".'),
  features: z.number().int().min(16).max(1 << 16).default(512).describe('Size of the hashed feature vector of a hypothesis text.'),
  learningRate: z.number().positive().default(0.1).describe('Step size of the logistic learner.'),
  policy: z.string().default('active').describe('Policy version to use: "active" (the one last trained or activated) or a version id.'),
});

export const OptimizeSchema = z.strictObject({
  criticModel: z.string().optional().describe('Logical model that critiques a prompt (default: the judge model).'),
  editorModel: z.string().optional().describe('Logical model that rewrites a prompt (default: the judge model).'),
  rounds: z.number().int().min(1).max(20).default(3).describe('Rounds of critique, rewrite and scoring.'),
  beam: z.number().int().min(1).max(10).default(2).describe('Prompts kept after each round.'),
  candidates: z.number().int().min(1).max(10).default(3).describe('Rewrites asked for per kept prompt and round.'),
  lowRewardRollouts: z.number().int().min(1).max(100).default(6).describe('Low-reward rollouts shown to the critic.'),
  validationTasks: z.number().int().min(1).max(500).default(6).describe('Validation tasks each candidate is scored on.'),
});

export const PhaseSchema = z
  .strictObject({
    name: z.string().min(1).regex(/^[A-Za-z0-9_.-]+$/, 'letters, digits, "_", "-" or "."').describe('Phase name, unique in the pipeline.'),
    kind: z.enum(['gather', 'sft', 'grpo', 'bandit', 'apo']).describe('What the phase does.'),
    agents: z
      .array(agentName)
      .optional()
      .describe('Agents the phase trains (sft, grpo, apo). Default: the research-lab graph\'s reference roles; for a module graph the agents marked "trainable", else every agent that made model calls.'),
    model: z.string().optional().describe('Logical model (a key of "models") whose new version the phase registers (sft, grpo).'),
    split: z.enum(['train', 'val', 'all']).default('train').describe('Tasks a gather phase runs, or rollouts the data comes from.'),
    limit: z.number().int().positive().optional().describe('Tasks a gather phase runs (all when left out); for a grpo phase, the training tasks the learning run (demo --train) samples the served student on (default 48).'),
    samples: z.number().int().positive().max(64).optional().describe('Rollouts per task in a gather phase (the GRPO group size).'),
    minReward: z.number().min(0).max(1).optional().describe('Rollouts at or over this reward are used (sft default 0.7).'),
    includeSimulated: z
      .boolean()
      .default(false)
      .describe(
        'Data phases (sft, grpo, bandit, apo): also learn from rollouts of the simulated endpoint, a test double whose answers teach a model nothing real; left out by default. No effect on gather.',
      ),
    includePenalised: z
      .boolean()
      .default(false)
      .describe(
        'Data phases (sft, grpo, bandit): also learn from rollouts whose reward is a penalty because the judge or the custom reward failed; their rows say reward_source "penalty" and why. Left out (and counted) by default.',
      ),
    credit: z.enum(['equal', 'last', 'discounted']).default('equal').describe('How the final reward is credited to an agent\'s calls (grpo).'),
    gamma: z.number().min(0).max(1).default(0.9).describe('Discount of "discounted" credit.'),
    hyperparameters: z
      .record(z.string(), z.union([z.number(), z.string(), z.boolean(), z.array(z.string())]))
      .default({})
      .describe('Trainer settings (learning_rate, max_steps, lora_r, kl_coef, ...); python-trainer/README.md lists them with the reference defaults.'),
    baseModel: z.string().min(1).optional().describe('Base model the GPU job trains (a Hugging Face id or a directory on the target); default training.trainer.baseModel.'),
    target: z.string().min(1).optional().describe('Key of training.targets the phase launches on by default.'),
    workers: z
      .strictObject({
        count: z.number().int().min(1).max(10_000).describe('Workers, each running one slice of the phase\'s tasks.'),
        on: z.enum(WORKER_PLACES).default('local').describe('Where they start (lab.json "workers" holds each place\'s settings).'),
      })
      .optional()
      .describe('A gather phase: run its rollouts over workers, as `rollout-lab run --workers COUNT --on ON` does.'),
  })
  .describe('One phase of the training pipeline.');

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as HF_TOKEN');
const gpuFields = {
  gpus: z.number().int().min(0).default(1).describe('GPUs the job asks for.'),
  gpuType: z.string().min(1).optional().describe('GPU type, e.g. H100, A100-80GB, L4.'),
  cpus: z.number().int().positive().optional(),
  memoryGb: z.number().positive().optional(),
};


const sshFields = {
  port: z.number().int().min(1).max(65535).optional(),
  identityFile: z.string().min(1).optional().describe('Private key file (ssh -i).'),
  options: z.array(z.string().regex(/^[A-Za-z]+=\S*$/, 'an ssh -o option such as StrictHostKeyChecking=accept-new')).default([]).describe('Extra ssh -o options.'),
};

/** Where a GPU job runs: each kind is a real integration driven with its own tool (python, ssh/scp, sky, kubectl, sbatch). */
export const TargetSchema = z.discriminatedUnion('kind', [
  z
    .strictObject({
      kind: z.literal('local'),
      python: z.string().min(1).optional().describe('Python with torch (and transformers, peft) on this machine; default: the first of python3, /usr/bin/python3, /usr/local/bin/python3, python that imports torch.'),
      ...gpuFields,
      gpus: z.number().int().min(0).default(0),
    })
    .describe('A subprocess on this machine (one with its own GPU, or the CPU for a small model built from training.trainer.modelConfig).'),
  z
    .strictObject({
      kind: z.literal('ssh'),
      host: z.string().min(1).describe('user@host, or a Host alias of ~/.ssh/config.'),
      port: sshFields.port,
      identityFile: sshFields.identityFile,
      options: sshFields.options,
      remoteDir: z.string().min(1).default('rollout-lab-jobs').describe('Folder on the host where job bundles go (relative to the login directory, or absolute).'),
      python: z.string().min(1).default('python3'),
      ...gpuFields,
    })
    .describe('A GPU box reached over SSH: the bundle is copied, the job runs detached, logs stream back.'),
  z
    .strictObject({
      kind: z.literal('skypilot'),
      cluster: z.string().regex(/^[a-z]([a-z0-9-]*[a-z0-9])?$/).optional().describe('Cluster name (default: one per job).'),
      cloud: z.string().min(1).optional().describe('aws, gcp, azure, kubernetes, runpod, lambda, ... (default: the cheapest SkyPilot finds).'),
      region: z.string().min(1).optional(),
      image: z.string().min(1).optional().describe('image_id, e.g. docker:pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime.'),
      useSpot: z.boolean().default(false),
      idleMinutesToAutostop: z.number().int().positive().optional(),
      down: z.boolean().default(true).describe('Tear the cluster down once the results are fetched.'),
      setup: z.string().optional().describe('Extra setup commands run before the trainer is installed.'),
      ...gpuFields,
    })
    .describe('A cloud GPU through SkyPilot: sky launch, sky logs, sky down.'),
  z
    .strictObject({
      kind: z.literal('k8s'),
      context: z.string().min(1).optional().describe('kubectl context (default: the current one).'),
      namespace: z.string().min(1).default('default'),
      image: z.string().min(1).default('pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime').describe('Container image with Python and torch.'),
      gpuResource: z.string().min(1).default('nvidia.com/gpu'),
      nodeSelector: z.record(z.string(), z.string()).default({}),
      serviceAccount: z.string().min(1).optional(),
      ...gpuFields,
    })
    .describe('A Kubernetes cluster: a Job (and a Service for serve), kubectl apply, logs -f, port-forward.'),
  z
    .strictObject({
      kind: z.literal('slurm'),
      host: z
        .string()
        .min(1)
        .refine((h) => !h.startsWith('-'), 'a host, not an ssh option (it may not start with "-")')
        .optional()
        .describe('The cluster\'s login node over SSH (user@host, or a Host alias of ~/.ssh/config). Left out: sbatch, squeue and scancel run on this machine.'),
      port: sshFields.port,
      identityFile: sshFields.identityFile,
      options: sshFields.options,
      remoteDir: z
        .string()
        .min(1)
        .optional()
        .describe(
          'Folder on the cluster\'s shared filesystem where job folders go. With a host: relative to the login directory, or absolute (default rollout-lab-jobs). Without one: an absolute folder the bundle is copied to; left out, the job runs in its bundle folder under .rollout-lab/ (which the compute nodes must see).',
        ),
      partition: slurmWord.optional().describe('sbatch --partition (a partition, or a comma-separated list).'),
      account: slurmWord.optional().describe('sbatch --account.'),
      qos: slurmWord.optional().describe('sbatch --qos.'),
      timeLimit: slurmTime
        .optional()
        .describe('sbatch --time, e.g. "4:00:00" (the partition\'s default when left out). A job that reaches it ends with that reason.'),
      setup: z
        .array(z.string().regex(/^[^\n\r]*$/, 'one shell line each (no line breaks)'))
        .default([])
        .describe('Shell lines the job script runs before the trainer, in order, e.g. "module load cuda/12.4", "source ~/venvs/trainer/bin/activate", "conda activate trainer"; the first that fails ends the job.'),
      python: z.string().min(1).default('python3').describe('Python on the compute node (after setup) that runs the trainer.'),
      sbatchOptions: z
        .array(z.string().regex(/^--[a-z][a-z0-9-]*(=\S+)?$/, 'an sbatch long option such as --constraint=a100 or --exclusive'))
        .default([])
        .describe('Extra sbatch options, one "--name=value" each (--constraint, --reservation, --exclusive, ...). Those Rollout Lab sets from the target and the job are refused.'),
      pollSeconds: z.number().int().min(1).max(600).default(10).describe('How often the follower asks squeue about the job.'),
      ...gpuFields,
      gpuType: z
        .string()
        .regex(/^[A-Za-z0-9_.-]+$/, 'a GRES type name such as a100 (letters, digits, "_", "-", ".")')
        .optional()
        .describe('GRES type of the GPUs, as the cluster names them (--gres=gpu:TYPE:N), e.g. a100.'),
    })
    .describe('A Slurm cluster: an sbatch script from the job\'s resources, submitted here or on a login node over SSH; squeue, scontrol/sacct and the job\'s output file followed; scancel.'),
]);

/** Said to a lab.json or job spec that still names the removed tiny backend. */
export const TINY_BACKEND_REMOVED =
  'the tiny backend was removed — use backend "transformers" with training.trainer.modelConfig, a small model built from a config on the CPU (e.g. {"model_type": "qwen2", "vocab_size": 1024, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024, "tie_word_embeddings": true}; its tokenizer is trained on the job\'s data)';

/** The trainer's backend: a Hugging Face model (downloaded, or built from training.trainer.modelConfig) with a LoRA adapter. */
export const TrainerBackend = z.enum(['transformers'], { error: (issue) => (issue.input === 'tiny' ? TINY_BACKEND_REMOVED : undefined) });
export type TrainerBackend = z.infer<typeof TrainerBackend>;

export const TrainerSchema = z.strictObject({
  baseModel: z.string().min(1).default('Qwen/Qwen2.5-1.5B-Instruct').describe('Base model of the GPU phases (a Hugging Face id, or a directory on the target).'),
  backend: TrainerBackend.default('transformers').describe('transformers (+ peft): the only backend; set modelConfig to try the pipeline on a CPU.'),
  modelConfig: z.record(z.string(), z.unknown()).optional().describe('Build the base model from this config instead of loading weights: a transformers config with model_type (qwen2, llama, ...); its tokenizer is trained on the job\'s data, nothing is downloaded.'),
  secrets: z.array(envName).default([]).describe('Environment variables handed to the job (e.g. HF_TOKEN): from VS Code\'s SecretStorage or this process, never written to specs or logs.'),
  target: z.string().min(1).optional().describe('Key of training.targets used when none is named.'),
});

export const TrainingSchema = z.strictObject({
  maxPromptTokens: z.number().int().positive().default(8192).describe('Pre-flight: a training example whose prompt is longer (estimated tokens) is reported.'),
  groupSize: z.number().int().min(2).max(64).default(8).describe('GRPO group size: rollouts of one task compared with each other.'),
  outputDir: z.string().default('training').describe('Where exports, policies and phase outputs go, relative to .rollout-lab/.'),
  phases: z.array(PhaseSchema).default([]).describe('The training pipeline, in order.'),
  trainer: TrainerSchema.prefault({}).describe('The GPU trainer job (python-trainer).'),
  targets: z.record(z.string().regex(/^[A-Za-z0-9_.-]+$/), TargetSchema).default({}).describe('Where GPU jobs run, by name. "local" is always there.'),
});

export type BanditConfig = z.output<typeof BanditSchema>;
export type OptimizeConfig = z.output<typeof OptimizeSchema>;
export type PhaseConfig = z.output<typeof PhaseSchema>;
export type TrainingConfig = z.output<typeof TrainingSchema>;
export type TargetConfig = z.output<typeof TargetSchema>;
export type TargetKind = TargetConfig['kind'];
export type TrainerConfig = z.output<typeof TrainerSchema>;
