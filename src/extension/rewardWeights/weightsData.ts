import type { LoadedConfig } from '../../core/config/loader';
import type { LabConfig } from '../../core/config/schema';
import { knownAirTargets, previewAirRules, validateAirRules } from '../../core/reward/airRules';
import { rescoreStoredRollouts } from '../../core/analysis/rescoreStore';
import { SCORED_STATUSES, isScored } from '../../core/reward/scoredRollouts';
import type { TraceStore } from '../../core/store/traceStore';
import type { RolloutQuery, RolloutRecord } from '../../core/store/types';
import type { RequestParamsOf, RequestResults } from '../../shared/protocol';
import { whatIfAnswer } from './whatIf';

/*
 * The answers of the reward-weight editor, from a config and a store: no
 * vscode here, so the webview tests answer with exactly what the host does.
 */

export function weightsConfig(loaded: LoadedConfig, store: TraceStore): RequestResults['weights/get'] {
  const { config } = loaded;
  // The rollouts a re-score considers: those with a reward (isScored), as every mean reward counts them.
  const withReward = store.listRollouts({ status: [...SCORED_STATUSES] }).rollouts.filter(isScored);
  return {
    configFile: loaded.file,
    criteria: criteriaList(config),
    judgeFailurePenalty: config.reward.judgeFailurePenalty,
    rewardModule: config.reward.module ? { path: config.reward.module, mode: config.reward.mode } : null,
    air: config.air,
    airTargets: knownAirTargets(config),
    rollouts: withReward.length,
    scored: withReward.filter((r) => r.criteria !== null && !r.judgeFailed).length,
    rescores: store
      .listRescores()
      .sort((a, b) => b.at - a.at)
      .map((r) => ({ id: r.id, at: r.at, criteria: r.criteria, rollouts: r.rollouts, ...(r.note !== undefined ? { note: r.note } : {}) })),
  };
}

export function criteriaList(config: LabConfig): RequestResults['weights/save']['criteria'] {
  return Object.entries(config.reward.criteria).map(([name, c]) => ({ name, weight: c.weight, description: c.description }));
}

/** The what-if over the stored rollouts in scope; nothing is written. */
export function whatIf(store: TraceStore, p: RequestParamsOf<'weights/whatIf'>): RequestResults['weights/whatIf'] {
  const { result } = rescoreStoredRollouts(store, p.criteria, { query: scopeQuery(p.runId, p.split), dryRun: true, top: p.top ?? 10 });
  return whatIfAnswer(result, { movers: p.movers });
}

export function validateAir(config: LabConfig, rules: readonly unknown[]): RequestResults['air/validate'] {
  const { issues } = validateAirRules(rules, knownAirTargets(config));
  return { valid: !issues.some((i) => i.severity === 'error'), issues };
}

/** The intermediate rewards the rules in the form would give on a stored rollout; none while they have errors. */
export function airPreview(config: LabConfig, store: TraceStore, rollout: RolloutRecord, rules: readonly unknown[]): RequestResults['air/preview'] {
  const checked = validateAirRules(rules, knownAirTargets(config));
  const ok = checked.rules !== null && !checked.issues.some((i) => i.severity === 'error');
  return {
    rollout: { id: rollout.id, runId: rollout.runId, taskId: rollout.taskId, status: rollout.status, finalReward: rollout.finalReward },
    preview: ok ? previewAirRules(checked.rules!, store.getSpans(rollout.id)) : null,
    issues: checked.issues,
  };
}

export function scopeQuery(runId: string | undefined, split: 'train' | 'val' | undefined): RolloutQuery {
  return { ...(runId ? { runId } : {}), ...(split ? { split } : {}) };
}
