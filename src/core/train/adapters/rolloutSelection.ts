import type { TraceStore } from '../../store/traceStore';
import type { RolloutRecord, Split } from '../../store/types';

/** Which stored rollouts an export reads. */
export interface RolloutFilter {
  /** Agents whose calls are exported; a rollout where none of them ran is skipped. */
  agents: readonly string[];
  minReward?: number;
  split?: Split;
  runId?: string;
  /** Only rollouts where one of the agents ran this prompt version (content hash). */
  promptVersion?: string;
  /** Only rollouts where one of the agents ran on this model version. */
  modelVersion?: string;
}

/** What the export needs of a selected rollout until it reads its spans. */
export interface SelectedRollout {
  id: string;
  runId: string;
  taskId: string;
  startTime: number;
  finalReward: number;
}

/** Rollouts are read from the catalog a page at a time, so only the selected keys stay in memory. */
const PAGE = 500;

/** Why a rollout in scope is left out; null when it is kept. */
export function skipReason(r: RolloutRecord, f: RolloutFilter): string | null {
  if (r.status !== 'succeeded') return r.status;
  if (r.finalReward === null) return 'no_reward';
  if (f.minReward !== undefined && r.finalReward < f.minReward) return 'below_min_reward';
  const ran = r.agents.filter((a) => f.agents.includes(a.agent) && (a.llmCalls > 0 || a.visits > 0));
  if (!ran.length) return 'no_agent_calls';
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

/**
 * The rollouts in scope (run, split) that pass the filter, in start order
 * (ties by id, as the catalog pages them); the others are counted in
 * `skipped` by reason.
 */
export function selectRollouts(store: TraceStore, f: RolloutFilter, skipped: Record<string, number>): SelectedRollout[] {
  const out: SelectedRollout[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const { rollouts } = store.listRollouts({
      ...(f.runId !== undefined ? { runId: f.runId } : {}),
      ...(f.split !== undefined ? { split: f.split } : {}),
      sort: 'startTime',
      order: 'asc',
      limit: PAGE,
      offset,
    });
    for (const r of rollouts) {
      const reason = skipReason(r, f);
      if (reason) countSkip(skipped, reason);
      else out.push({ id: r.id, runId: r.runId, taskId: r.taskId, startTime: r.startTime, finalReward: r.finalReward! });
    }
    if (rollouts.length < PAGE) return out;
  }
}
