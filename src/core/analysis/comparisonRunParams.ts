import { z } from 'zod';
import { VariantSchema, type Variant } from '../config/variantSpec';
import type { RunRecord } from '../store/types';

export type ComparisonSideName = 'a' | 'b';

/** What each run of a comparison records in its params, so the pair can be found again. */
export interface ComparisonRunParams {
  id: string;
  side: ComparisonSideName;
  label: string;
  variant: Variant;
}

// Run params come from the store, which other versions or other tools may have written: read them defensively.
const ComparisonRunParamsSchema = z.object({ id: z.string().min(1), side: z.enum(['a', 'b']), label: z.string(), variant: VariantSchema });

/** The comparison a run belongs to, or null for an ordinary run. */
export function comparisonOfRun(run: RunRecord): ComparisonRunParams | null {
  const parsed = ComparisonRunParamsSchema.safeParse(run.params.comparison);
  return parsed.success ? (parsed.data as ComparisonRunParams) : null;
}
