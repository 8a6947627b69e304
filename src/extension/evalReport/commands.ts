import type { FeatureContext } from '../featureContext';

/** Registers the evalReport commands. */
export function registerEvalReportCommands(ctx: FeatureContext): void {
  void ctx;
}
