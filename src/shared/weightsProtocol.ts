import { z } from 'zod';
import type { AirRule } from '../core/config/schema';
import type { AirPreview, AirRuleIssue } from '../core/reward/airRules';
import type { Distribution, KeptReason } from '../core/analysis/rescore';
import type { RolloutStatus } from '../core/store/types';

/**
 * The reward-weight editor's part of the message catalogue (src/shared/protocol.ts
 * merges it): what-if re-scoring of stored rollouts under edited weights,
 * saving weights and AIR rules to lab.json, the explicit re-score, and the
 * AIR rule validation and preview.
 */

const RolloutId = z.string().regex(/^[0-9a-f]{32}$/);
/** The same rule as criterion names in lab.json (src/core/config/schema.ts). */
const CriterionName = z
  .string()
  .max(64)
  .regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, 'a criterion name uses letters, digits, "_", "-" or "." and starts with a letter');
const Weight = z.number().finite().min(0, 'a weight is 0 or more').max(1_000_000);

/** Which stored rollouts a what-if or a re-score covers: all, one run, one split. */
const Scope = {
  runId: z.string().min(1).max(200).optional(),
  split: z.enum(['train', 'val']).optional(),
};

/** AIR rules arrive as the form holds them and are checked by validateAirRules, which names the row and field at fault. */
const RawAirRules = z.array(z.unknown()).max(500);

export const WeightsRequestParams = {
  /** The editor's starting point: lab.json's criteria and AIR rules, and what the store holds. */
  'weights/get': z.strictObject({}),
  /** Final rewards and ranks of the stored rollouts under these weights; nothing is written. */
  'weights/whatIf': z.strictObject({
    criteria: z.record(CriterionName, z.strictObject({ weight: Weight })),
    ...Scope,
    top: z.number().int().min(1).max(100).optional(),
    movers: z.number().int().min(0).max(200).optional(),
  }),
  /** Writes the criteria (their full set: left-out criteria are removed) and, when given, the AIR rules into lab.json. */
  'weights/save': z.strictObject({
    criteria: z.record(CriterionName, z.strictObject({ weight: Weight, description: z.string().max(4000) })),
    air: RawAirRules.optional(),
  }),
  /**
   * The explicit re-score under lab.json's saved weights, after a modal
   * confirmation. `expect` is the weights the form shows as saved: when
   * lab.json holds others the host refuses rather than re-score under weights
   * the user did not see.
   */
  'weights/rescore': z.strictObject({
    ...Scope,
    expect: z.record(CriterionName, z.strictObject({ weight: Weight })).optional(),
    note: z.string().max(500).optional(),
  }),
  /** Checks AIR rules against the schema and the lab's agents and tools. */
  'air/validate': z.strictObject({ rules: RawAirRules }),
  /** The intermediate rewards these rules would give on a stored rollout. */
  'air/preview': z.strictObject({ rules: RawAirRules, rolloutId: RolloutId }),
} as const satisfies Record<string, z.ZodType>;

export interface CriterionInfo {
  name: string;
  weight: number;
  description: string;
}

/** A past re-score, as the store lists it. */
export interface RescoreSummary {
  id: string;
  at: number;
  criteria: Record<string, { weight: number }>;
  note?: string;
  rollouts: number;
}

export interface WeightsConfig {
  /** Absolute path of lab.json. */
  configFile: string;
  criteria: CriterionInfo[];
  /** Score every criterion gets when the judge fails; such rollouts keep their reward in a what-if. */
  judgeFailurePenalty: number;
  /** Set when a custom reward module makes (part of) the final reward: weights then only change the judge's part. */
  rewardModule: { path: string; mode: 'replace' | 'combine' } | null;
  air: AirRule[];
  /** Agent and tool names AIR rules may name. */
  airTargets: { agents: string[]; tools: string[] };
  /** Stored rollouts that have a final reward. */
  rollouts: number;
  /** Of those, how many have criterion scores from a judge that did not fail: the ones a what-if re-scores. */
  scored: number;
  /** Past re-scores, newest first. */
  rescores: RescoreSummary[];
}

/** A rollout in the top-k lists. */
export interface RankedRollout {
  rolloutId: string;
  taskId: string;
  reward: number;
  rank: number;
}

/** A rollout whose rank moved under the new weights. */
export interface RankMover {
  rolloutId: string;
  taskId: string;
  before: number;
  after: number;
  rankBefore: number;
  rankAfter: number;
  /** rankBefore - rankAfter: positive when it moved up. */
  moved: number;
}

/**
 * The histogram of final rewards before and after, over bins chosen from the
 * data (the same bins for both sides): `edges` has one more entry than each
 * side's counts; bin i holds edges[i] ≤ reward < edges[i + 1] (the last bin
 * includes its upper edge).
 */
export interface RewardBins {
  edges: number[];
  before: number[];
  after: number[];
}

export interface WhatIfAnswer {
  /** Rollouts in scope with a reward. */
  rollouts: number;
  rescored: number;
  kept: number;
  keptBy: Record<KeptReason, number>;
  /** Re-scored rollouts whose reward changed (by more than 1e-9). */
  changed: number;
  before: Distribution;
  after: Distribution;
  bins: RewardBins;
  rankCorrelation: number | null;
  top: { k: number; before: RankedRollout[]; after: RankedRollout[]; entered: string[]; left: string[]; changed: boolean };
  /** Largest rank changes first. */
  movers: RankMover[];
  /** New criteria some re-scored rollout has no stored score for: they count as 0 there. */
  missingCriteria: string[];
}

export interface WeightsRequestResults {
  'weights/get': WeightsConfig;
  'weights/whatIf': WhatIfAnswer;
  'weights/save': { file: string; criteria: CriterionInfo[]; air: AirRule[] };
  'weights/rescore': { confirmed: boolean; rescoreId: string | null; rescored: number; kept: number; changed: number };
  'air/validate': { valid: boolean; issues: AirRuleIssue[] };
  'air/preview': {
    rollout: { id: string; runId: string; taskId: string; status: RolloutStatus; finalReward: number | null };
    /** null when the rules have errors (see `issues`). */
    preview: AirPreview | null;
    issues: AirRuleIssue[];
  };
}

/** Webview → host commands (fire and forget). Opening a rollout reuses 'trace/open'. */
export const WeightsCommandArgs = {
  /** Open lab.json, at the criteria or the AIR rules. */
  'weights/openConfig': z.strictObject({ at: z.enum(['criteria', 'air']).optional() }),
} as const satisfies Record<string, z.ZodType>;

export interface WeightsNotifications {
  /** Show the AIR section, with this rollout picked for the preview when one is given. */
  'air/selectRollout': { rolloutId?: string };
  /** lab.json changed on disk (saved here or elsewhere): reload what is not being edited. */
  'weights/configChanged': { file: string };
}
