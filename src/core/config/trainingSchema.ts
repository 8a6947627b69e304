import { z } from 'zod';

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
    agents: z.array(agentName).optional().describe('Agents the phase trains (sft, grpo, apo) — defaults depend on the kind.'),
    model: z.string().optional().describe('Logical model (a key of "models") whose new version the phase registers (sft, grpo).'),
    split: z.enum(['train', 'val', 'all']).default('train').describe('Tasks a gather phase runs, or rollouts the data comes from.'),
    limit: z.number().int().positive().optional().describe('Tasks a gather phase runs (all when left out).'),
    samples: z.number().int().positive().max(64).optional().describe('Rollouts per task in a gather phase (the GRPO group size).'),
    minReward: z.number().min(0).max(1).optional().describe('Rollouts at or over this reward are used (sft default 0.7).'),
    credit: z.enum(['equal', 'last', 'discounted']).default('equal').describe('How the final reward is credited to an agent\'s calls (grpo).'),
    gamma: z.number().min(0).max(1).default(0.9).describe('Discount of "discounted" credit.'),
    hyperparameters: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).default({}).describe('Trainer settings (learning rate, epochs, LoRA rank, ...).'),
  })
  .describe('One phase of the training pipeline.');

export const TrainingSchema = z.strictObject({
  maxPromptTokens: z.number().int().positive().default(8192).describe('Pre-flight: a training example whose prompt is longer (estimated tokens) is reported.'),
  groupSize: z.number().int().min(2).max(64).default(8).describe('GRPO group size: rollouts of one task compared with each other.'),
  outputDir: z.string().default('training').describe('Where exports, policies and phase outputs go, relative to .rollout-lab/.'),
  phases: z.array(PhaseSchema).default([]).describe('The training pipeline, in order.'),
});

export type BanditConfig = z.output<typeof BanditSchema>;
export type OptimizeConfig = z.output<typeof OptimizeSchema>;
export type PhaseConfig = z.output<typeof PhaseSchema>;
export type TrainingConfig = z.output<typeof TrainingSchema>;
