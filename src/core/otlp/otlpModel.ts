/**
 * One shape for an OTLP trace request, whichever encoding it came in: ids as
 * lowercase hex, times in epoch milliseconds, attributes as Maps (a key such
 * as "__proto__" is just a key). Decoders produce it only after the whole
 * request has been checked; encoders take it.
 */
export type OtlpValue = string | number | boolean | null | Uint8Array | OtlpValue[] | OtlpAttrs;
export type OtlpAttrs = Map<string, OtlpValue>;

export interface OtlpEvent {
  name: string;
  timeMs: number;
  attributes: OtlpAttrs;
}

export interface OtlpLink {
  traceId: string;
  spanId: string;
  attributes: OtlpAttrs;
}

/** OTLP status codes: 0 unset, 1 ok, 2 error. */
export type OtlpStatusCode = 0 | 1 | 2;

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: OtlpAttrs;
  events: OtlpEvent[];
  links: OtlpLink[];
  status: { code: OtlpStatusCode; message: string };
}

export interface OtlpScopeSpans {
  scope: { name: string; version: string };
  spans: OtlpSpan[];
}

export interface OtlpResourceSpans {
  resource: OtlpAttrs;
  scopeSpans: OtlpScopeSpans[];
}

export interface OtlpTraceRequest {
  resourceSpans: OtlpResourceSpans[];
}

/** What the receiver answers in ExportTraceServiceResponse.partial_success. */
export interface OtlpPartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

/** A payload that cannot be accepted: the receiver answers 400 with this message and stores nothing. */
export class OtlpPayloadError extends Error {
  override name = 'OtlpPayloadError';
}

/** Bounds on one request, so a hostile payload cannot exhaust the stack or the memory. */
export const OTLP_LIMITS = {
  /** Nesting of AnyValue arrays and key-value lists. */
  maxValueDepth: 16,
  /** Attributes of one span, event, link or resource. */
  maxAttributes: 1024,
  /** Elements of one array or key-value list value. */
  maxArrayLength: 100_000,
  maxEvents: 1024,
  maxLinks: 1024,
  /**
   * Values in one request, counted while it is decoded (see RequestBudget):
   * bounds what a request of many tiny nested values costs to decode,
   * normalise and store, which its byte size does not.
   */
  maxValuesPerRequest: 1_000_000,
  /**
   * JSON objects and arrays in one OTLP/JSON request, counted before it is
   * parsed: JSON.parse cannot pause, so what it is given is bounded to what it
   * parses in about a tenth of a second (protobuf has no such step).
   */
  maxJsonNodesPerRequest: 250_000,
};

export function spanCount(req: OtlpTraceRequest): number {
  let n = 0;
  for (const rs of req.resourceSpans) for (const ss of rs.scopeSpans) n += ss.spans.length;
  return n;
}
