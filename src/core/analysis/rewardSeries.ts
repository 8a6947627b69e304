import { SCORED_STATUSES, isScored } from '../reward/scoredRollouts';
import type { TraceStore } from '../store/traceStore';

export interface RewardPoint {
  rolloutId: string;
  runId: string;
  taskId: string;
  startTime: number;
  finalReward: number;
  criteria: Record<string, number> | null;
  /** Prompt version per agent (content hash) and model version per agent. */
  promptVersions: Record<string, string | null>;
  modelVersions: Record<string, string | null>;
  simulated: boolean;
}
export interface RewardSeries {
  points: RewardPoint[];
  criteria: string[];
}

/**
 * Finished rollouts with a reward (isScored: the rollouts every mean reward is over), oldest first, each with its criterion
 * scores and, per agent, the prompt version (content hash) and model version
 * it ran. A model version is the logical model, with `@version` when the
 * config pins one, so switching an agent to another model or to a newly
 * trained version both show as a change. `criteria` lists the configured
 * criteria first, then any other criterion found in the rollouts.
 */
export function rewardSeries(store: TraceStore, criteria: string[], opts: { runId?: string } = {}): RewardSeries {
  const { rollouts } = store.listRollouts({ runId: opts.runId, status: [...SCORED_STATUSES], superseded: false, sort: 'startTime', order: 'asc' });
  const names = [...criteria];
  const extra = new Set<string>();
  const points: RewardPoint[] = [];
  for (const r of rollouts) {
    if (!isScored(r) || r.finalReward === null) continue;
    for (const k of Object.keys(r.criteria ?? {})) if (!names.includes(k)) extra.add(k);
    const promptVersions: Record<string, string | null> = {};
    const modelVersions: Record<string, string | null> = {};
    for (const a of r.agents) {
      promptVersions[a.agent] = a.promptVersion;
      modelVersions[a.agent] = a.model === null ? a.modelVersion : a.modelVersion ? `${a.model}@${a.modelVersion}` : a.model;
    }
    points.push({
      rolloutId: r.id,
      runId: r.runId,
      taskId: r.taskId,
      startTime: r.startTime,
      finalReward: r.finalReward,
      criteria: r.criteria,
      promptVersions,
      modelVersions,
      simulated: r.simulated,
    });
  }
  return { points, criteria: [...names, ...[...extra].sort()] };
}
