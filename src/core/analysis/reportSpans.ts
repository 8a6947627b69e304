import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import type { SpanRecord } from '../trace/span';

/** How many rollouts' spans a report may still read, and how many it read or left unread. */
export interface SpanBudget {
  left: number;
  read: number;
  unread: number;
}

/** A rollout's spans, counted against the budget; null when the budget is spent or they cannot be read. */
export function readSpans(store: TraceStore, r: RolloutRecord, budget: SpanBudget): SpanRecord[] | null {
  if (budget.left <= 0) {
    budget.unread++;
    return null;
  }
  budget.left--;
  budget.read++;
  try {
    return store.getSpans(r.id);
  } catch {
    // A rollout whose spans cannot be read still counts by its record.
    return null;
  }
}

