import type { FeatureContext } from '../featureContext';

/** Registers the promptHistory commands. */
export function registerPromptHistoryCommands(ctx: FeatureContext): void {
  void ctx;
}
