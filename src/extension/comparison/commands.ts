import type { FeatureContext } from '../featureContext';

/** Registers the comparison commands. */
export function registerComparisonCommands(ctx: FeatureContext): void {
  void ctx;
}
