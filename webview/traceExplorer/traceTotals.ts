import { Attr, type SpanRecord } from '../../src/core/trace/span';

export interface TraceTotals {
  spans: number;
  modelCalls: number;
  toolCalls: number;
  errors: number;
  inputTokens: number;
  outputTokens: number;
  /** Wall-clock time from the first span's start to the last span's end. */
  durationMs: number;
  /** Sum of model-call latencies (calls in parallel branches overlap, so it can exceed durationMs). */
  modelTimeMs: number;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

export function computeTotals(spans: readonly SpanRecord[]): TraceTotals {
  const t: TraceTotals = { spans: spans.length, modelCalls: 0, toolCalls: 0, errors: 0, inputTokens: 0, outputTokens: 0, durationMs: 0, modelTimeMs: 0 };
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of spans) {
    if (s.startTime < t0) t0 = s.startTime;
    if (s.endTime > t1) t1 = s.endTime;
    if (s.status === 'error') t.errors++;
    if (s.kind === 'llm') {
      t.modelCalls++;
      t.inputTokens += num(s.attributes[Attr.inputTokens]);
      t.outputTokens += num(s.attributes[Attr.outputTokens]);
      const lat = s.attributes[Attr.latencyMs];
      t.modelTimeMs += typeof lat === 'number' ? lat : Math.max(0, s.endTime - s.startTime);
    } else if (s.kind === 'tool') {
      t.toolCalls++;
    }
  }
  t.durationMs = spans.length ? Math.max(0, t1 - t0) : 0;
  return t;
}
