import type { LabConfig } from '../config/schema';
import { ConfigError } from '../errors';
import type { SupervisorCandidate, SupervisorPolicy } from '../graph/researchLab/supervisorPolicy';
import { hypothesisFeatures } from './features';
import { loadBanditPolicy, type LoadedBanditPolicy } from './policyFiles';

/** A saved policy as the Supervisor node consults it, in the given mode. */
export function supervisorPolicyOf(policy: LoadedBanditPolicy, mode: 'advise' | 'decide', epsilon: number): SupervisorPolicy {
  const { learner } = policy;
  const features = (cs: readonly SupervisorCandidate[]) => cs.map((c) => hypothesisFeatures(c.text, c.agent, learner.dim));
  return {
    mode,
    version: policy.info.version,
    estimates: (cs) => learner.estimates(features(cs)),
    choose: (cs, rng) => learner.choose(features(cs), rng, epsilon),
  };
}

/**
 * The policy the rollouts of this config use: null when bandit.mode is
 * "off"; a ConfigError when a mode needs a policy and none is trained or the
 * file is damaged — a rollout never silently runs without the policy it was
 * configured with.
 */
export function loadSupervisorPolicy(labDir: string, config: LabConfig): SupervisorPolicy | null {
  const { mode, epsilon } = config.bandit;
  if (mode === 'off') return null;
  const policy = loadBanditPolicy(labDir, config);
  if (!policy) {
    throw new ConfigError(
      `bandit.mode is "${mode}" in .rollout-lab/lab.json but no bandit policy is active: train one with rollout-lab bandit train (or set bandit.mode to "off")`,
    );
  }
  return supervisorPolicyOf(policy, mode, epsilon);
}
