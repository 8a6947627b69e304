import type { Attributes, SpanKind, SpanRecord, SpanStatus } from './span';
import { newSpanId } from './ids';

/** Where ended spans go (the trace store implements this). */
export interface SpanWriter {
  writeSpan(span: SpanRecord): void;
}

/** A span that has started and not yet ended. */
export interface OpenSpan {
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly name: string;
  readonly kind: SpanKind;
  readonly startTime: number;
  attributes: Attributes;
}

/**
 * Records the spans of one rollout (one trace). Ended spans go to the writer at
 * once, so a live viewer sees them, and are also kept here so the runner can
 * summarise the rollout (per-agent facts, AIR rules) without reading them back.
 */
export class RolloutTracer {
  private readonly ended: SpanRecord[] = [];

  constructor(
    readonly traceId: string,
    private readonly writer: SpanWriter | null,
  ) {}

  start(name: string, kind: SpanKind, parent: OpenSpan | string | null, attributes: Attributes = {}, startTime = Date.now()): OpenSpan {
    return {
      spanId: newSpanId(),
      parentSpanId: typeof parent === 'string' ? parent : (parent?.spanId ?? null),
      name,
      kind,
      startTime,
      attributes,
    };
  }

  end(span: OpenSpan, status: SpanStatus = 'ok', statusMessage?: string, endTime = Date.now()): SpanRecord {
    const record = this.record(span, status, statusMessage, endTime);
    this.ended.push(record);
    this.writer?.writeSpan(record);
    return record;
  }

  /** The ended span as a record, neither kept nor written: for a caller that decides how it is recorded (add, or merged into another record). */
  record(span: OpenSpan, status: SpanStatus = 'ok', statusMessage?: string, endTime = Date.now()): SpanRecord {
    const record: SpanRecord = {
      traceId: this.traceId,
      spanId: span.spanId,
      parentSpanId: span.parentSpanId,
      name: span.name,
      kind: span.kind,
      startTime: span.startTime,
      endTime,
      status,
      attributes: span.attributes,
    };
    if (statusMessage !== undefined) record.statusMessage = statusMessage;
    return record;
  }

  /**
   * Records a span that started and ended outside this process (a command
   * agent's span received over OTLP): kept and written like the tracer's own.
   * Its trace id must be this rollout's.
   */
  add(span: SpanRecord): void {
    if (span.traceId !== this.traceId) throw new Error(`span ${span.spanId} belongs to trace ${span.traceId}, not to rollout ${this.traceId}`);
    this.ended.push(span);
    this.writer?.writeSpan(span);
  }

  /**
   * Writes a span again under the id it already has (a merge of two records of
   * one model call): it takes the old one's place here, and its copy in the
   * store wins over the old one by its higher `rollout_lab.span.revision`.
   */
  replace(span: SpanRecord): void {
    if (span.traceId !== this.traceId) throw new Error(`span ${span.spanId} belongs to trace ${span.traceId}, not to rollout ${this.traceId}`);
    const at = this.ended.findIndex((s) => s.spanId === span.spanId);
    if (at >= 0) this.ended[at] = span;
    else this.ended.push(span);
    this.writer?.writeSpan(span);
  }

  /** Spans ended so far, in end order. */
  spans(): readonly SpanRecord[] {
    return this.ended;
  }
}
