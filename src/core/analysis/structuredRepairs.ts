import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import { Attr, type SpanRecord } from '../trace/span';
import { readSpans, type SpanBudget } from './reportSpans';

/**
 * Structured answers (an agent's, the judge's) that were not usable as the
 * server sent them: repaired here (near-JSON read by jsonrepair) or after a
 * repair request to the model. Many of either say the server's structured
 * output is broken, though every rollout may have succeeded.
 */
export interface StructuredRepairs {
  local: number;
  request: number;
  /** Rollouts whose spans were counted, of `rollouts`: a large run is counted on the spans the report may read. */
  rolloutsRead: number;
  rollouts: number;
}

/** How one rollout's structured answers were repaired. Before repairs said how, a repaired answer had had a repair request. */
export function repairsIn(spans: readonly SpanRecord[]): { local: number; request: number } {
  let local = 0;
  let request = 0;
  for (const s of spans) {
    const node = s.kind === 'node' && s.attributes[Attr.outputRepaired] === true;
    const judge = s.kind === 'reward' && s.attributes[Attr.judgeRepaired] === true;
    if (!node && !judge) continue;
    const how = s.attributes[node ? Attr.outputRepair : Attr.judgeRepair];
    if (how === 'local') local++;
    else request++;
  }
  return { local, request };
}

/** The repairs over a run's finished rollouts, reading at most the budget's spans. */
export function structuredRepairs(store: TraceStore, finished: readonly RolloutRecord[], budget: SpanBudget): StructuredRepairs {
  const out: StructuredRepairs = { local: 0, request: 0, rolloutsRead: 0, rollouts: finished.length };
  for (const r of finished) {
    const spans = readSpans(store, r, budget);
    if (!spans) continue;
    out.rolloutsRead++;
    const n = repairsIn(spans);
    out.local += n.local;
    out.request += n.request;
  }
  return out;
}

/** The report's note: "3 structured answers repaired locally, 1 after a repair request"; null when none was. */
export function repairsNote(r: StructuredRepairs): string | null {
  if (!r.local && !r.request) return null;
  const answers = (n: number): string => `${n} structured answer${n === 1 ? '' : 's'}`;
  const partial = r.rolloutsRead < r.rollouts ? ` (counted in the ${r.rolloutsRead} of ${r.rollouts} rollouts whose spans were read)` : '';
  return (
    `${answers(r.local)} repaired locally, ${r.request} after a repair request${partial}: the server's structured output was not valid as sent — ` +
    "each repaired answer's span keeps the original (rollout_lab.output.original); models.<name>.repair: \"request\" sends malformed answers back to the model"
  );
}
