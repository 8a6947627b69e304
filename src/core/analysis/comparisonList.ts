import type { TraceStore } from '../store/traceStore';
import type { RunRecord } from '../store/types';
import { variantSpec } from '../config/variantSpec';
import { comparisonOfRun, type ComparisonRunParams } from './comparisonRunParams';

export interface ComparisonSummary {
  id: string;
  runA: string | null;
  runB: string | null;
  labelA: string;
  labelB: string;
  specA: string | null;
  specB: string | null;
  startTime: number;
  /** 'done' when both runs finished; otherwise the state of the pair. */
  status: 'done' | 'running' | 'cancelled' | 'incomplete';
  simulated: boolean;
}

/** Comparisons found in the runs' params, newest first. */
export function listComparisons(store: TraceStore): ComparisonSummary[] {
  const byId = new Map<string, { a?: RunRecord & { cmp: ComparisonRunParams }; b?: RunRecord & { cmp: ComparisonRunParams } }>();
  for (const run of store.listRuns()) {
    const cmp = comparisonOfRun(run);
    if (!cmp) continue;
    const entry = byId.get(cmp.id) ?? {};
    const prev = entry[cmp.side];
    // A side run twice (resumed elsewhere, say) keeps its latest run.
    if (!prev || prev.startTime < run.startTime) entry[cmp.side] = { ...run, cmp };
    byId.set(cmp.id, entry);
  }
  const out: ComparisonSummary[] = [];
  for (const [id, { a, b }] of byId) {
    const runs = [a, b].filter((r): r is NonNullable<typeof r> => r !== undefined);
    const status: ComparisonSummary['status'] = runs.some((r) => r.status === 'running')
      ? 'running'
      : runs.some((r) => r.status === 'cancelled')
        ? 'cancelled'
        : a && b && a.status === 'done' && b.status === 'done'
          ? 'done'
          : 'incomplete';
    out.push({
      id,
      runA: a?.id ?? null,
      runB: b?.id ?? null,
      labelA: a?.cmp.label ?? 'A',
      labelB: b?.cmp.label ?? 'B',
      specA: a ? variantSpec(a.cmp.variant) : null,
      specB: b ? variantSpec(b.cmp.variant) : null,
      startTime: Math.min(...runs.map((r) => r.startTime)),
      status,
      simulated: runs.some((r) => r.simulated),
    });
  }
  return out.sort((x, y) => y.startTime - x.startTime);
}
