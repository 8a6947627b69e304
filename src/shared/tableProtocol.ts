import { RolloutId } from './rolloutId';
import { z } from 'zod';
import { MAX_TABLE_PAGE, TABLE_SORT_KEYS, type RolloutTablePage } from '../core/store/tableQuery';

/**
 * The rollouts table's part of the message catalogue (src/shared/protocol.ts
 * merges it). Opening a row goes through the shared `trace/open`, comparing two
 * through `trace/diff`; the actions on a selection are commands of their own.
 */

const Range = z.strictObject({ min: z.number().finite().optional(), max: z.number().finite().optional() });
const Name = z.string().min(1).max(500);

export const TableQueryParams = z.strictObject({
  runIds: z.array(Name).max(1000).optional(),
  splits: z.array(z.enum(['train', 'val'])).optional(),
  statuses: z.array(z.enum(['running', 'succeeded', 'failed', 'cancelled'])).optional(),
  failures: z.array(Name).max(100).optional(),
  reward: Range.optional(),
  criteria: z.record(Name, Range).optional(),
  decision: z.enum(['match', 'mismatch', 'none']).optional(),
  agent: Name.optional(),
  promptVersion: Name.optional(),
  modelVersion: Name.optional(),
  simulated: z.boolean().optional(),
  text: z.string().max(1000).optional(),
  sort: z.union([z.enum(TABLE_SORT_KEYS), z.templateLiteral(['criterion:', z.string().min(1).max(500)])]).optional(),
  order: z.enum(['asc', 'desc']).optional(),
  offset: z.number().int().nonnegative().optional(),
  limit: z.number().int().positive().max(MAX_TABLE_PAGE).optional(),
});

/** What the filters offer and which columns exist. */
export interface TableFacets {
  runs: Array<{ id: string; startTime: number; simulated: boolean }>;
  agents: string[];
  failures: string[];
  /** Judge criteria of lab.json, one column each. */
  criteria: string[];
  promptVersions: Array<{ agent: string; hash: string; firstSeen: number }>;
  modelVersions: Array<{ model: string; version: string }>;
  /** Whether lab.json gives a price to some model (the cost column shows only then). */
  prices: boolean;
}

export const TableRequestParams = {
  /** One page of the table: every rollout of the workspace's store, filtered, searched and sorted. */
  'table/query': TableQueryParams,
  /** Every id the query matches, in its order (offset and limit ignored): selecting all rows. */
  'table/ids': TableQueryParams,
  'table/facets': z.strictObject({}),
} as const satisfies Record<string, z.ZodType>;

export interface TableRequestResults {
  'table/query': RolloutTablePage;
  'table/ids': { ids: string[] };
  'table/facets': TableFacets;
}

const Selection = z.strictObject({ rolloutIds: z.array(RolloutId).min(1).max(100_000) });

/** Webview → host commands on the selected rows. */
export const TableCommandArgs = {
  /** Write the selected rollouts' training records as JSONL (the core export), to a file the user picks. */
  'table/export': Selection,
  /** Re-score the selected rollouts under lab.json's weights (the core re-score). */
  'table/rescore': Selection,
  /** Append the selected rollouts' tasks to a dataset JSONL the user picks or creates. */
  'table/addToDataset': Selection,
} as const satisfies Record<string, z.ZodType>;
