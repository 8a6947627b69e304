import { isScored } from '../../../reward/scoredRollouts';
import type { TraceStore } from '../../../store/traceStore';
import type { RolloutRecord, Split } from '../../../store/types';
import { NO_AGENT_CALLS } from '../emptyExport';

/** Which stored rollouts are looked at at all: a run, a split, and whether simulated ones count. */
export interface RolloutScope {
  split?: Split;
  runId?: string;
  /** Rollouts of the simulated endpoint (a test double) are left out unless this is true. */
  includeSimulated?: boolean;
}

/** Which stored rollouts an export reads. */
export interface RolloutFilter extends RolloutScope {
  /** Agents whose calls are exported; a rollout where none of them ran is skipped. */
  agents: readonly string[];
  minReward?: number;
  /** Only rollouts where one of the agents ran this prompt version (content hash). */
  promptVersion?: string;
  /** Only rollouts where one of the agents ran on this model version. */
  modelVersion?: string;
  /**
   * Keep failed rollouts that still got a final reward (no output, truncated:
   * scored with reward.noOutputReward). RL wants them, as the negative signal
   * GRPO compares the others with; SFT learns from successes only.
   */
  keepScoredFailures?: boolean;
  /**
   * Keep rollouts whose reward is a penalty (the judge or the custom reward
   * failed); their rows say so. Left out, and counted, unless this is true.
   */
  includePenalised?: boolean;
}

/** What the export needs of a selected rollout until it reads its spans. */
export interface SelectedRollout {
  id: string;
  runId: string;
  taskId: string;
  startTime: number;
  finalReward: number;
  status: RolloutRecord['status'];
  judgeFailed: boolean;
}

/** Rollouts are read from the catalog a page at a time, so only the selected keys stay in memory. */
const PAGE = 500;

/** A failed rollout the runner still scored (its graph gave no usable output): a reward, but no success. */
export function isScoredFailure(r: Pick<RolloutRecord, 'status' | 'finalReward'>): boolean {
  return r.status === 'failed' && isScored(r);
}

/** Why a rollout in scope is left out; null when it is kept. */
export function skipReason(r: RolloutRecord, f: RolloutFilter): string | null {
  if (r.status === 'running') return 'running';
  if (r.simulated && !f.includeSimulated) return 'simulated';
  if (r.status !== 'succeeded' && !(f.keepScoredFailures && isScoredFailure(r))) return r.status;
  if (r.finalReward === null) return 'no_reward';
  // An agent that never ran is said before the reward: lowering the minimum would not help.
  const ran = r.agents.filter((a) => f.agents.includes(a.agent) && (a.llmCalls > 0 || a.visits > 0));
  if (!ran.length) return NO_AGENT_CALLS;
  if (f.minReward !== undefined && r.finalReward < f.minReward) return 'below_min_reward';
  if (f.promptVersion !== undefined && !ran.some((a) => a.promptVersion === f.promptVersion)) return 'other_prompt_version';
  if (f.modelVersion !== undefined && !ran.some((a) => a.modelVersion === f.modelVersion)) return 'other_model_version';
  return null;
}

export function countSkip(skipped: Record<string, number>, reason: string): void {
  skipped[reason] = (skipped[reason] ?? 0) + 1;
}

/** Skip counts with their keys sorted, so the manifest reads the same every time. */
export function sortedCounts(skipped: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(skipped).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** Every stored rollout of the run and split (simulated ones too), oldest first, a page at a time. */
function forEachRolloutInScope(store: TraceStore, scope: Pick<RolloutScope, 'split' | 'runId'>, fn: (r: RolloutRecord) => void): void {
  for (let offset = 0; ; offset += PAGE) {
    const { rollouts } = store.listRollouts({
      ...(scope.runId !== undefined ? { runId: scope.runId } : {}),
      ...(scope.split !== undefined ? { split: scope.split } : {}),
      // An attempt a resume redid is not a training example: its task's final attempt is.
      superseded: false,
      sort: 'startTime',
      order: 'asc',
      limit: PAGE,
      offset,
    });
    for (const r of rollouts) fn(r);
    if (rollouts.length < PAGE) return;
  }
}

/**
 * The agents that made at least one model call in the finished rollouts in
 * scope (simulated ones only when the scope includes them), in the order
 * first seen.
 */
export function agentsWithModelCalls(store: TraceStore, scope: RolloutScope): string[] {
  const seen = new Set<string>();
  forEachRolloutInScope(store, scope, (r) => {
    if (r.status === 'running' || (r.simulated && !scope.includeSimulated)) return;
    for (const a of r.agents) if (a.llmCalls > 0) seen.add(a.agent);
  });
  return [...seen];
}

/** Finished rollouts of the simulated endpoint in the run and split: what leaving them out leaves out. */
export function simulatedInScope(store: TraceStore, scope: Pick<RolloutScope, 'split' | 'runId'>): number {
  let n = 0;
  forEachRolloutInScope(store, scope, (r) => {
    if (r.simulated && r.status !== 'running') n++;
  });
  return n;
}

/**
 * The rollouts in scope (run, split) that pass the filter, in start order
 * (ties by id, as the catalog pages them); the others are counted in
 * `skipped` by reason.
 */
export function selectRollouts(store: TraceStore, f: RolloutFilter, skipped: Record<string, number>): SelectedRollout[] {
  const out: SelectedRollout[] = [];
  forEachRolloutInScope(store, f, (r) => {
    const reason = skipReason(r, f);
    if (reason) countSkip(skipped, reason);
    else out.push({ id: r.id, runId: r.runId, taskId: r.taskId, startTime: r.startTime, finalReward: r.finalReward!, status: r.status, judgeFailed: r.judgeFailed });
  });
  return out;
}
