import type { SpanRecord } from '../trace/span';
import type { FailureKind } from './failureKinds';

export type RolloutStatus = 'running' | 'succeeded' | 'failed' | 'cancelled';
export type Split = 'train' | 'val';

/** Per-agent facts of one rollout: what ran and how it went. */
export interface RolloutAgentRecord {
  agent: string;
  promptVersion: string | null;
  model: string | null;
  modelVersion: string | null;
  visits: number;
  llmCalls: number;
  toolCalls: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
}

export interface RolloutRecord {
  /** 32 hex chars; also the trace id of its spans. */
  id: string;
  runId: string;
  taskId: string;
  split: Split | null;
  sample: number;
  status: RolloutStatus;
  /**
   * Why it did not succeed: null while running and when it succeeded. A
   * rollout whose graph finished without a final output is 'failed' with
   * 'no_output' (or 'truncated' when an answer cut at max_tokens is why) and
   * still has its reward; one that threw has the category of its error and no
   * reward. Absent in records written before the field existed (read as null).
   */
  failure?: FailureKind | null;
  /** null while running or when no reward could be computed. */
  finalReward: number | null;
  /** Per-criterion judge scores, 0..1. */
  criteria: Record<string, number> | null;
  /** The custom reward's breakdown (reward.module); null without one, or when it failed. Absent in older records. */
  rewardBreakdown?: Record<string, number> | null;
  /**
   * Model answers cut at max_tokens (finish_reason "length") and prompts the
   * server cut to fit its context, over the rollout's model calls; null (or
   * absent, in older records) when unknown.
   */
  truncatedAnswers?: number | null;
  truncatedPrompts?: number | null;
  judgeFailed: boolean;
  /** GO / NO-GO (or a user graph's own decision label). */
  decision: string | null;
  expectedDecision: string | null;
  turns: number | null;
  error: string | null;
  simulated: boolean;
  startTime: number;
  endTime: number | null;
  spanCount: number;
  agents: RolloutAgentRecord[];
  /**
   * Written by a resumed run on the attempt that redoes a task and sample:
   * the earlier attempts (same run, task and sample) it replaces. They stay in
   * the store, labelled superseded, and no longer count in the run's figures.
   */
  supersedes?: string[];
  /** The key of the reward definition the rollout was scored under (rewardDefinitionKey); absent in records written before it was kept. */
  rewardDefinition?: string | null;
  /** Read from the store: the later attempt that replaced this one; null (or absent) for a run's current attempt. */
  supersededBy?: string | null;
}

/** One attempt of a task and sample in a run, as resume reads it. */
export type RolloutAttempt = Pick<RolloutRecord, 'id' | 'taskId' | 'sample' | 'status' | 'failure' | 'error'>;

export interface RunRecord {
  id: string;
  startTime: number;
  endTime: number | null;
  status: 'running' | 'done' | 'failed' | 'cancelled' | 'interrupted';
  /** The options the run was started with (dataset, split, limit, samples, seed...), for resume. */
  params: Record<string, unknown>;
  simulated: boolean;
  /** Planned rollouts: task id and sample index, in order. */
  planned: number;
}

export interface PromptVersionRecord {
  hash: string;
  agent: string;
  text: string;
  firstSeen: number;
}

export interface RolloutQuery {
  runId?: string;
  status?: RolloutStatus | RolloutStatus[];
  split?: Split;
  minReward?: number;
  maxReward?: number;
  /** Rollouts in which `agent` (or any agent, when left out) ran this prompt version. */
  promptVersion?: string;
  agent?: string;
  taskId?: string;
  /** false: only each task's current attempt (what a run's figures count); true: only the attempts a resume replaced. Default: both. */
  superseded?: boolean;
  /** Default 'startTime'. Rollouts without a value for the sort key (no reward, still running) come last. */
  sort?: 'startTime' | 'finalReward' | 'duration';
  /** Default 'desc' (newest / highest first). */
  order?: 'asc' | 'desc';
  /** Default: no limit. `total` in the answer counts matches before paging. */
  limit?: number;
  offset?: number;
}

/** One agent × prompt version, over rollouts that are no longer running. */
export interface AgentAggregate {
  agent: string;
  promptVersion: string | null;
  rollouts: number;
  meanReward: number | null;
  visits: number;
  llmCalls: number;
  toolCalls: number;
  errors: number;
  /** Mean over rollouts of the agent's total latency in the rollout. */
  meanLatencyMs: number;
  inputTokens: number;
  outputTokens: number;
}

/** Where finished spans go. The tracer writes to it; the store implements it. */
export interface SpanSink {
  /** Called once per span when it ends (any order; children usually before parents). */
  writeSpan(span: SpanRecord): void;
}

/**
 * An explicit re-score: stored rollouts given a new final reward under new
 * criterion weights. The rollouts' earlier rewards are never overwritten: each
 * re-score is kept as a revision, and the latest one is the reward the store
 * reports.
 */
export interface RescoreRecord {
  /** 'rs_' + 12 hex characters. */
  id: string;
  /** When it was made, ms since the epoch; later re-scores win (ties by id). */
  at: number;
  /** The weights used. */
  criteria: Record<string, { weight: number }>;
  note?: string;
  rewards: Array<{ rolloutId: string; before: number | null; after: number }>;
}

/** One reward a rollout has had: the one it ran with, then one per re-score. */
export interface RewardRevision {
  rolloutId: string;
  /** null: the reward the rollout was scored with when it ran. */
  rescoreId: string | null;
  at: number;
  reward: number | null;
  /** The weights of the re-score; null for the original. */
  criteria: Record<string, { weight: number }> | null;
}

/** A re-score as listed: its rewards replaced by how many rollouts it touched. */
export type RescoreSummary = Omit<RescoreRecord, 'rewards'> & { rollouts: number };
