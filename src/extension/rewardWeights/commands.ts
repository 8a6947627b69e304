import type { FeatureContext } from '../featureContext';

/** Registers the rewardWeights commands. */
export function registerRewardWeightsCommands(ctx: FeatureContext): void {
  void ctx;
}
