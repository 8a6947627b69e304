import { z } from 'zod';

/** A rollout's id (also its trace id) as the panels' messages carry it. */
export const RolloutId = z.string().regex(/^[0-9a-f]{32}$/, 'a rollout id (32 hex characters)');
