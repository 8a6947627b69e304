import { RolloutId } from './rolloutId';
import { z } from 'zod';
import type { TraceDiff } from '../core/analysis/traceDiff';

/**
 * The trace diff panel's part of the message catalogue (src/shared/protocol.ts
 * merges it). Opening either side in the trace explorer goes through the
 * shared `trace/open` command; opening the panel on two rollouts through
 * `trace/diff`.
 */


export const TraceDiffRequestParams = {
  /** Two stored rollouts aligned by graph step, with their differences. */
  'diff/get': z.strictObject({ left: RolloutId, right: RolloutId }),
} as const satisfies Record<string, z.ZodType>;

export interface TraceDiffRequestResults {
  'diff/get': TraceDiff;
}

export interface TraceDiffNotifications {
  /** Show the diff of these two rollouts (the host opened the panel for them). */
  'diff/show': { left: string; right: string };
}
