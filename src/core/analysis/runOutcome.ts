import type { TraceStore } from '../store/traceStore';

/**
 * Where a run stands, counted from the store: each planned task and sample by
 * its current attempt (the attempts a resume redid are counted apart, as
 * superseded). What the finish and cancel notifications of the editor and the
 * CLI say, so they agree with the tree, the table and the report.
 */
export interface RunOutcome {
  runId: string;
  planned: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  running: number;
  /** Planned rollouts with no attempt in the store. */
  notStarted: number;
  /** Earlier attempts a resume redid: kept in the store, counted in none of the above. */
  superseded: number;
}

export function runOutcome(store: Pick<TraceStore, 'getRun' | 'listRollouts'>, runId: string): RunOutcome {
  const current = store.listRollouts({ runId, superseded: false }).rollouts;
  const count = (status: string): number => current.filter((r) => r.status === status).length;
  const keys = new Set(current.map((r) => `${r.taskId}#${r.sample}`));
  const planned = store.getRun(runId)?.planned ?? keys.size;
  return {
    runId,
    planned,
    succeeded: count('succeeded'),
    failed: count('failed'),
    cancelled: count('cancelled'),
    running: count('running'),
    notStarted: Math.max(0, planned - keys.size),
    superseded: store.listRollouts({ runId, superseded: true, limit: 0 }).total,
  };
}

/** "17 succeeded, 0 failed, 4 cancelled, 39 not started, of 60 planned" (and the superseded attempts, when a resume left some). */
export function runOutcomeText(o: RunOutcome): string {
  const parts = [`${o.succeeded} succeeded`, `${o.failed} failed`];
  if (o.cancelled) parts.push(`${o.cancelled} cancelled`);
  if (o.running) parts.push(`${o.running} still running`);
  if (o.notStarted) parts.push(`${o.notStarted} not started`);
  const superseded = o.superseded ? ` (${o.superseded} earlier attempt${o.superseded === 1 ? '' : 's'} redone, superseded)` : '';
  return `${parts.join(', ')}, of ${o.planned} planned${superseded}`;
}
