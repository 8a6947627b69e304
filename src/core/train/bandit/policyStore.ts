import type { LabConfig } from '../../config/schema';
import { UsageError } from '../../errors';
import type { TraceStore } from '../../store/traceStore';
import { banditRecords, type BanditRecord } from '../export/adapters/banditAdapter';
import { requireBanditGraph, splitScope } from '../export/trainingDefaults';
import { hypothesisFeatures, type FeatureNames } from '../../policy/features';
import type { BanditLearner } from '../../policy/learner';
import { createLearner } from '../../policy/learners';
import {
  banditDir,
  loadPolicy,
  policyVersionsOnDisk,
  readActive,
  readPolicyInfo,
  writeActive,
  writePolicy,
  type BanditPolicyInfo,
  type FeatureName,
  type LoadedBanditPolicy,
} from '../../policy/policyFiles';

export { loadBanditPolicy, type BanditPolicyInfo, type LoadedBanditPolicy } from '../../policy/policyFiles';

/**
 * Replays records in order into a fresh learner (the bandit's own online
 * updates, so the result is what the learner would have become had it been
 * running all along). Records whose chosen index is out of range are skipped.
 */
export function replayRecords(records: readonly BanditRecord[], config: LabConfig, names?: FeatureNames): { learner: BanditLearner; used: number; rewardSum: number } {
  const learner = createLearner(config.bandit);
  let used = 0;
  let rewardSum = 0;
  for (const r of records) {
    const chosen = r.candidates[r.chosen];
    if (!chosen || !Number.isFinite(r.reward)) continue;
    learner.update(hypothesisFeatures(chosen.text, chosen.agent, learner.dim, names), r.reward);
    used++;
    rewardSum += r.reward;
  }
  return { learner, used, rewardSum };
}

export interface BanditTrainOptions {
  /** Default 'train', as the pipeline's phases: validation rollouts stay out of the policy. */
  split?: 'train' | 'val' | 'all';
  /** Decisions of simulated rollouts are left out unless this is true. */
  includeSimulated?: boolean;
  /** Decisions of rollouts whose reward is a penalty (the judge or the custom reward failed) are left out unless this is true. */
  includePenalised?: boolean;
}

export interface BanditTrainResult extends BanditPolicyInfo {
  /** The split trained on; null for all. */
  split: 'train' | 'val' | null;
  /** Simulated rollouts in scope that were left out. */
  simulatedLeftOut: number;
}

/** Trains a new version from the store's Supervisor decisions, saves it and makes it active. */
export async function trainBanditPolicy(store: TraceStore, config: LabConfig, labDir: string, opts: BanditTrainOptions = {}): Promise<BanditTrainResult> {
  requireBanditGraph(config);
  const chosen = splitScope(opts.split ?? 'train');
  const split = chosen.split ?? null;
  const skipped: Record<string, number> = {};
  const records = banditRecords(store, { ...chosen, includeSimulated: opts.includeSimulated === true, includePenalised: opts.includePenalised === true }, skipped);
  const simulatedLeftOut = skipped.simulated ?? 0;
  const penalisedLeftOut = skipped.penalised ?? 0;
  const scope = `${split ? `the ${split} split` : 'all splits'}${simulatedLeftOut ? `; ${simulatedLeftOut} simulated rollouts left out (pass --include-simulated to use them)` : ''}${
    penalisedLeftOut ? `; ${penalisedLeftOut} rollouts whose reward is a penalty (the judge or the custom reward failed) left out (the phase's "includePenalised": true uses them)` : ''
  }`;
  const info = await trainBanditPolicyFrom(records, config, labDir, scope);
  return { ...info, split, simulatedLeftOut };
}

/** The same from records already read (the CLI and tests use it to train on a chosen set). */
export async function trainBanditPolicyFrom(records: readonly BanditRecord[], config: LabConfig, labDir: string, scope?: string): Promise<BanditPolicyInfo> {
  const names: FeatureNames = new Map();
  const { learner, used, rewardSum } = replayRecords(records, config, names);
  if (used === 0) {
    throw new UsageError(
      `no Supervisor decisions with a final reward in the trace store${scope ? ` (${scope})` : ''} to train a bandit policy on; run rollouts first (rollout-lab run), then "rollout-lab bandit train"`,
    );
  }
  // At most one name per slot, so this is bounded by bandit.features, not by the vocabulary.
  const featureNames: FeatureName[] = [...names.entries()].sort(([a], [b]) => a - b).map(([i, n]) => [i, n.token, n.sign]);
  const dir = banditDir(labDir, config);
  const info = writePolicy(dir, {
    algorithm: learner.algorithm,
    trainedAt: Date.now(),
    records: used,
    meanReward: rewardSum / used,
    agent: config.bandit.agent,
    featureNames,
    learner: learner.toJSON(),
  });
  activateBanditPolicy(labDir, config, info.version);
  return info;
}

/** The active version and every saved version, oldest first. */
export function listBanditPolicies(labDir: string, config: LabConfig): { active: string | null; versions: BanditPolicyInfo[] } {
  const dir = banditDir(labDir, config);
  return { active: readActive(dir).active, versions: policyVersionsOnDisk(dir).map((v) => readPolicyInfo(dir, v)) };
}

/**
 * Makes `version` the active policy (checked readable first), remembering the
 * one it replaces; `null` rolls back to the version active before the current
 * one, or turns the policy off when there was none. No policy file is deleted.
 */
export function activateBanditPolicy(labDir: string, config: LabConfig, version: string | null): void {
  const dir = banditDir(labDir, config);
  const pointer = readActive(dir);
  if (version === null) {
    const history = [...pointer.history];
    // Skip versions whose files have gone missing since: a rollback must land on something usable.
    let previous: string | null = null;
    while (history.length && previous === null) {
      const v = history.pop()!;
      if (policyVersionsOnDisk(dir).includes(v)) previous = v;
    }
    writeActive(dir, { active: previous, history });
    return;
  }
  loadPolicy(dir, version);
  if (pointer.active === version) return;
  writeActive(dir, { active: version, history: pointer.active ? [...pointer.history, pointer.active] : pointer.history });
}

/** The heaviest features of a policy by absolute weight, with their names where known. */
export function topFeatures(policy: LoadedBanditPolicy, n = 10): Array<{ feature: string; weight: number }> {
  const w = policy.learner.weights();
  const named = new Map(policy.featureNames.map(([i, token, sign]) => [i, { token, sign }]));
  return [...w.keys()]
    .filter((i) => w[i] !== 0)
    .sort((a, b) => Math.abs(w[b]!) - Math.abs(w[a]!) || a - b)
    .slice(0, n)
    .map((i) => {
      const name = i === 0 ? { token: '(bias)', sign: 1 } : named.get(i);
      return { feature: name?.token ?? `#${i}`, weight: w[i]! * (name?.sign ?? 1) };
    });
}
