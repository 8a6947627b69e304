import { ExportTraceServiceRequest, ExportTraceServiceResponse, RpcStatus } from './otlpProto';
import type { OtlpAttrs, OtlpPartialSuccess, OtlpSpan, OtlpTraceRequest, OtlpValue } from './otlpModel';

/** Epoch ms → nanoseconds as a decimal string (exact to the microsecond). */
export function msToNanos(ms: number): string {
  return (BigInt(Math.round(ms * 1000)) * 1000n).toString();
}

function isInt64(n: number): boolean {
  return Number.isSafeInteger(n);
}

// ---- JSON ----------------------------------------------------------------------

function jsonValue(v: OtlpValue): Record<string, unknown> {
  if (v === null) return {};
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return isInt64(v) ? { intValue: String(v) } : { doubleValue: Number.isFinite(v) ? v : String(v) };
  if (v instanceof Uint8Array) return { bytesValue: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(jsonValue) } };
  return { kvlistValue: { values: jsonAttrs(v) } };
}

function jsonAttrs(a: OtlpAttrs): Array<{ key: string; value: Record<string, unknown> }> {
  return [...a].map(([key, value]) => ({ key, value: jsonValue(value) }));
}

function jsonSpan(s: OtlpSpan): Record<string, unknown> {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: msToNanos(s.startMs),
    endTimeUnixNano: msToNanos(s.endMs),
    attributes: jsonAttrs(s.attributes),
    events: s.events.map((e) => ({ timeUnixNano: msToNanos(e.timeMs), name: e.name, attributes: jsonAttrs(e.attributes) })),
    links: s.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: jsonAttrs(l.attributes) })),
    status: { code: s.status.code, ...(s.status.message ? { message: s.status.message } : {}) },
  };
}

export function encodeJsonRequest(req: OtlpTraceRequest): string {
  return JSON.stringify({
    resourceSpans: req.resourceSpans.map((rs) => ({
      resource: { attributes: jsonAttrs(rs.resource) },
      scopeSpans: rs.scopeSpans.map((ss) => ({ scope: ss.scope, spans: ss.spans.map(jsonSpan) })),
    })),
  });
}

// ---- protobuf ------------------------------------------------------------------

function pbValue(v: OtlpValue): Record<string, unknown> {
  if (v === null) return {};
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return isInt64(v) ? { intValue: v } : { doubleValue: v };
  if (v instanceof Uint8Array) return { bytesValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(pbValue) } };
  return { kvlistValue: { values: pbAttrs(v) } };
}

function pbAttrs(a: OtlpAttrs): Array<{ key: string; value: Record<string, unknown> }> {
  return [...a].map(([key, value]) => ({ key, value: pbValue(value) }));
}

const idBytes = (hex: string): Buffer => Buffer.from(hex, 'hex');

function pbSpan(s: OtlpSpan): Record<string, unknown> {
  return {
    traceId: idBytes(s.traceId),
    spanId: idBytes(s.spanId),
    ...(s.parentSpanId ? { parentSpanId: idBytes(s.parentSpanId) } : {}),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: msToNanos(s.startMs),
    endTimeUnixNano: msToNanos(s.endMs),
    attributes: pbAttrs(s.attributes),
    events: s.events.map((e) => ({ timeUnixNano: msToNanos(e.timeMs), name: e.name, attributes: pbAttrs(e.attributes) })),
    links: s.links.map((l) => ({ traceId: idBytes(l.traceId), spanId: idBytes(l.spanId), attributes: pbAttrs(l.attributes) })),
    status: { code: s.status.code, message: s.status.message },
  };
}

export function encodeProtobufRequest(req: OtlpTraceRequest): Uint8Array {
  const msg = {
    resourceSpans: req.resourceSpans.map((rs) => ({
      resource: { attributes: pbAttrs(rs.resource) },
      scopeSpans: rs.scopeSpans.map((ss) => ({ scope: ss.scope, spans: ss.spans.map(pbSpan) })),
    })),
  };
  return ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(msg)).finish();
}

// ---- answers -------------------------------------------------------------------

export function encodeResponse(partial: OtlpPartialSuccess | null, json: boolean): Uint8Array | string {
  const body = partial ? { partialSuccess: { rejectedSpans: partial.rejectedSpans, errorMessage: partial.errorMessage } } : {};
  if (json) return JSON.stringify(partial ? { partialSuccess: { rejectedSpans: String(partial.rejectedSpans), errorMessage: partial.errorMessage } } : {});
  return ExportTraceServiceResponse.encode(ExportTraceServiceResponse.fromObject(body)).finish();
}

/** google.rpc.Status for an error answer; `code` is the gRPC code (3 INVALID_ARGUMENT, 8 RESOURCE_EXHAUSTED…). */
export function encodeRpcStatus(code: number, message: string, json: boolean): Uint8Array | string {
  if (json) return JSON.stringify({ code, message });
  return RpcStatus.encode(RpcStatus.fromObject({ code, message })).finish();
}

/** An ExportTraceServiceResponse as the exporter reads it back (either encoding). */
export function decodeResponse(body: Uint8Array, json: boolean): OtlpPartialSuccess | null {
  if (body.length === 0) return null;
  const obj = json
    ? (JSON.parse(Buffer.from(body).toString('utf8')) as { partialSuccess?: { rejectedSpans?: string | number; errorMessage?: string } })
    : (ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(body), { longs: Number }) as { partialSuccess?: { rejectedSpans?: number; errorMessage?: string } });
  const p = obj.partialSuccess;
  if (!p) return null;
  const rejected = Number(p.rejectedSpans ?? 0);
  if (!rejected && !p.errorMessage) return null;
  return { rejectedSpans: rejected, errorMessage: p.errorMessage ?? '' };
}

/** The message of a google.rpc.Status error body, when there is one. */
export function decodeRpcStatusMessage(body: Uint8Array, json: boolean): string | null {
  try {
    if (json) return String((JSON.parse(Buffer.from(body).toString('utf8')) as { message?: unknown }).message ?? '') || null;
    return (RpcStatus.toObject(RpcStatus.decode(body)) as { message?: string }).message || null;
  } catch {
    return null;
  }
}
