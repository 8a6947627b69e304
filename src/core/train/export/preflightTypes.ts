import type { Split } from '../../store/types';

/* What a pre-flight run is asked and what it answers: the phases, the checks and the report. */

export type PreflightPhase = 'sft' | 'grpo' | 'bandit' | 'apo';
export const PREFLIGHT_PHASES: readonly PreflightPhase[] = ['sft', 'grpo', 'bandit', 'apo'];

export type PreflightSeverity = 'error' | 'warning' | 'info';

export interface PreflightCheck {
  /** Stable id, e.g. "failed-rollouts". */
  id: string;
  /** 'info' with count 0 means the check passed. */
  severity: PreflightSeverity;
  title: string;
  /** How many things the check found (rollouts, groups, model calls: the title says which). */
  count: number;
  /** Up to MAX_LISTED offending rollout ids. */
  rollouts: string[];
  /** One sentence: what to do about it. */
  fix: string;
}

export interface PreflightReport {
  phase: PreflightPhase;
  /** No check has severity 'error'. */
  ok: boolean;
  checks: PreflightCheck[];
  counts: Record<string, number>;
}

export interface PreflightOptions {
  phase: PreflightPhase;
  /** Agents the phase trains; the defaults depend on the phase and the graph (see defaultPreflightAgents). */
  agents?: string[];
  /** SFT: rollouts at or over this reward are used (default 0.7). */
  minReward?: number;
  /** The rollouts checked: a split, or 'all'; default the split the phase trains on (defaultDataSplit). */
  split?: Split | 'all';
  /** Rollouts of the simulated endpoint are left out (and counted) unless this is true. */
  includeSimulated?: boolean;
  /** Rollouts whose reward is a penalty (the judge or the custom reward failed) are left out (and counted) unless this is true. */
  includePenalised?: boolean;
  /** How the caller includes simulated rollouts, said after their count (default: the CLI's flag). */
  includeSimulatedHint?: string;
  /**
   * APO: validation tasks the dataset has. The caller knows the dataset; when
   * left out, the distinct val-split tasks that have rollouts in the store are counted.
   */
  valTasks?: number;
}

/** Offending rollout ids listed per check. */
export const MAX_LISTED = 50;
