import { ExportTraceServiceRequest, type PbAnyValue, type PbKeyValue, type PbLong, type PbRequest, type PbSpan } from './otlpProto';
import { OTLP_LIMITS, OtlpPayloadError, type OtlpAttrs, type OtlpSpan, type OtlpStatusCode, type OtlpTraceRequest, type OtlpValue } from './otlpModel';

/** ExportTraceServiceRequest in protobuf → the request, checked whole (throws OtlpPayloadError). */
export function decodeProtobufRequest(body: Uint8Array): OtlpTraceRequest {
  let msg: PbRequest;
  try {
    msg = ExportTraceServiceRequest.decode(body) as unknown as PbRequest;
  } catch (err) {
    throw new OtlpPayloadError(`the body is not a protobuf ExportTraceServiceRequest (${(err as Error).message}); send OTLP trace data, or JSON with Content-Type application/json`);
  }
  return {
    resourceSpans: (msg.resourceSpans ?? []).map((rs, i) => ({
      resource: attrsFromPb(rs.resource?.attributes, `resourceSpans[${i}].resource`),
      scopeSpans: (rs.scopeSpans ?? []).map((ss, j) => ({
        scope: { name: ss.scope?.name ?? '', version: ss.scope?.version ?? '' },
        spans: (ss.spans ?? []).map((s, k) => spanFromPb(s, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]`)),
      })),
    })),
  };
}

function spanFromPb(s: PbSpan, where: string): OtlpSpan {
  const events = s.events ?? [];
  const links = s.links ?? [];
  if (events.length > OTLP_LIMITS.maxEvents) throw new OtlpPayloadError(`${where} has ${events.length} events, more than ${OTLP_LIMITS.maxEvents}`);
  if (links.length > OTLP_LIMITS.maxLinks) throw new OtlpPayloadError(`${where} has ${links.length} links, more than ${OTLP_LIMITS.maxLinks}`);
  const code = s.status?.code ?? 0;
  return {
    traceId: idHex(s.traceId, 16, `${where}.traceId`),
    spanId: idHex(s.spanId, 8, `${where}.spanId`),
    parentSpanId: s.parentSpanId?.length ? idHex(s.parentSpanId, 8, `${where}.parentSpanId`) : null,
    name: s.name ?? '',
    kind: s.kind ?? 0,
    startMs: nanosToMs(s.startTimeUnixNano),
    endMs: nanosToMs(s.endTimeUnixNano),
    attributes: attrsFromPb(s.attributes, where),
    events: events.map((e, n) => ({ name: e.name ?? '', timeMs: nanosToMs(e.timeUnixNano), attributes: attrsFromPb(e.attributes, `${where}.events[${n}]`) })),
    links: links.map((l, n) => ({
      traceId: idHex(l.traceId, 16, `${where}.links[${n}].traceId`),
      spanId: idHex(l.spanId, 8, `${where}.links[${n}].spanId`),
      attributes: attrsFromPb(l.attributes, `${where}.links[${n}]`),
    })),
    status: { code: (code === 1 || code === 2 ? code : 0) as OtlpStatusCode, message: s.status?.message ?? '' },
  };
}

function idHex(bytes: Uint8Array | undefined, length: number, where: string): string {
  if (!bytes || bytes.length !== length) throw new OtlpPayloadError(`${where} has ${bytes?.length ?? 0} bytes; OTLP ids are ${length} bytes`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function longToNumber(v: PbLong | number): number {
  if (typeof v === 'number') return v;
  return v.unsigned ? (v.high >>> 0) * 4294967296 + (v.low >>> 0) : v.high * 4294967296 + (v.low >>> 0);
}

/** Nanoseconds → milliseconds, kept to the microsecond (a double cannot hold epoch nanoseconds exactly). */
export function nanosToMs(v: PbLong | number | undefined): number {
  if (v === undefined) return 0;
  return Math.round(longToNumber(v) / 1e3) / 1e3;
}

function attrsFromPb(kvs: PbKeyValue[] | undefined, where: string): OtlpAttrs {
  const out: OtlpAttrs = new Map();
  if (!kvs) return out;
  if (kvs.length > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where} has ${kvs.length} attributes, more than ${OTLP_LIMITS.maxAttributes}`);
  for (const kv of kvs) out.set(checkedKey(kv.key, where), valueFromPb(kv.value, 0, `${where} attribute "${kv.key.slice(0, 80)}"`));
  return out;
}

function checkedKey(key: string, where: string): string {
  if (key === '__proto__') throw new OtlpPayloadError(`${where} has an attribute named "__proto__", which is refused; rename it`);
  return key;
}

function valueFromPb(v: PbAnyValue | null | undefined, depth: number, where: string): OtlpValue {
  if (!v) return null;
  if (depth > OTLP_LIMITS.maxValueDepth) throw new OtlpPayloadError(`${where} nests arrays or key-value lists deeper than ${OTLP_LIMITS.maxValueDepth} levels`);
  switch (v.value) {
    case 'stringValue':
      return v.stringValue ?? '';
    case 'boolValue':
      return v.boolValue ?? false;
    case 'intValue': {
      const n = longToNumber(v.intValue ?? 0);
      return n;
    }
    case 'doubleValue':
      return v.doubleValue ?? 0;
    case 'bytesValue':
      return v.bytesValue ?? new Uint8Array();
    case 'arrayValue': {
      const values = v.arrayValue?.values ?? [];
      if (values.length > OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where} has ${values.length} elements, more than ${OTLP_LIMITS.maxArrayLength}`);
      return values.map((x) => valueFromPb(x, depth + 1, where));
    }
    case 'kvlistValue': {
      const values = v.kvlistValue?.values ?? [];
      if (values.length > OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where} has ${values.length} entries, more than ${OTLP_LIMITS.maxArrayLength}`);
      const m: OtlpAttrs = new Map();
      for (const kv of values) m.set(checkedKey(kv.key, where), valueFromPb(kv.value, depth + 1, where));
      return m;
    }
    default:
      return null;
  }
}
