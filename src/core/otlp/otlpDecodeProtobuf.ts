import protobuf from 'protobufjs';
import { OTLP_LIMITS, OtlpPayloadError, type OtlpAttrs, type OtlpEvent, type OtlpLink, type OtlpResourceSpans, type OtlpScopeSpans, type OtlpSpan, type OtlpStatusCode, type OtlpTraceRequest, type OtlpValue } from './otlpModel';

/**
 * ExportTraceServiceRequest in protobuf → the request, checked whole (throws
 * OtlpPayloadError). Read field by field with protobufjs's Reader, straight
 * into the request's shape: the field numbers are those of otlpProto.ts (the
 * protocol's); no intermediate message objects, which the receiver's
 * throughput depends on. Unknown fields are skipped, as protobuf requires.
 */
export function decodeProtobufRequest(body: Uint8Array): OtlpTraceRequest {
  const r = protobuf.Reader.create(body);
  try {
    const resourceSpans: OtlpResourceSpans[] = [];
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag === ((1 << 3) | LEN)) resourceSpans.push(readResourceSpans(r, `resourceSpans[${resourceSpans.length}]`));
      else r.skipType(tag & 7);
    }
    return { resourceSpans };
  } catch (err) {
    if (err instanceof OtlpPayloadError) throw err;
    throw new OtlpPayloadError(`the body is not a protobuf ExportTraceServiceRequest (${(err as Error).message}); send OTLP trace data, or JSON with Content-Type application/json`);
  }
}

type Reader = protobuf.Reader;
const VARINT = 0;
const I64 = 1;
const LEN = 2;

/** Runs `field` for each field of the embedded message that starts here; unknown fields and wire types are skipped. */
function message(r: Reader, field: (no: number, wire: number) => boolean): void {
  const end = r.uint32() + r.pos;
  if (end > r.len) throw new RangeError(`a message runs past the end of the body (${end} > ${r.len})`);
  while (r.pos < end) {
    const tag = r.uint32();
    if (!field(tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
  if (r.pos !== end) throw new RangeError('a field runs past the end of its message');
}

function readResourceSpans(r: Reader, where: string): OtlpResourceSpans {
  const resource: OtlpAttrs = new Map();
  const scopeSpans: OtlpScopeSpans[] = [];
  message(r, (no, wire) => {
    if (wire !== LEN) return false;
    if (no === 1) {
      message(r, (n, w) => (n === 1 && w === LEN ? (readKeyValue(r, resource, `${where}.resource`), true) : false));
      if (resource.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where}.resource has more than ${OTLP_LIMITS.maxAttributes} attributes`);
    } else if (no === 2) scopeSpans.push(readScopeSpans(r, `${where}.scopeSpans[${scopeSpans.length}]`));
    else return false;
    return true;
  });
  return { resource, scopeSpans };
}

function readScopeSpans(r: Reader, where: string): OtlpScopeSpans {
  const scope = { name: '', version: '' };
  const spans: OtlpSpan[] = [];
  message(r, (no, wire) => {
    if (wire !== LEN) return false;
    if (no === 1) {
      message(r, (n, w) => {
        if (w !== LEN) return false;
        if (n === 1) scope.name = r.string();
        else if (n === 2) scope.version = r.string();
        else return false;
        return true;
      });
    } else if (no === 2) spans.push(readSpan(r, where, spans.length));
    else return false;
    return true;
  });
  return { scope, spans };
}

function hexId(bytes: Uint8Array, length: number, where: () => string): string {
  if (bytes.length !== length) throw new OtlpPayloadError(`${where()} has ${bytes.length} bytes; OTLP ids are ${length} bytes`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** fixed64 nanoseconds → milliseconds, kept to the microsecond (a double cannot hold epoch nanoseconds exactly). */
function nanosToMs(r: Reader): number {
  const lo = r.fixed32();
  const hi = r.fixed32();
  return Math.round((hi * 4294967296 + lo) / 1e3) / 1e3;
}

function readSpan(r: Reader, scopeWhere: string, index: number): OtlpSpan {
  const where = (): string => `${scopeWhere}.spans[${index}]`;
  let traceId: Uint8Array | null = null;
  let spanId: Uint8Array | null = null;
  let parent: Uint8Array | null = null;
  const span: OtlpSpan = { traceId: '', spanId: '', parentSpanId: null, name: '', kind: 0, startMs: 0, endMs: 0, attributes: new Map(), events: [], links: [], status: { code: 0, message: '' } };
  message(r, (no, wire) => {
    switch (no) {
      case 1:
        if (wire !== LEN) return false;
        traceId = r.bytes();
        return true;
      case 2:
        if (wire !== LEN) return false;
        spanId = r.bytes();
        return true;
      case 4:
        if (wire !== LEN) return false;
        parent = r.bytes();
        return true;
      case 5:
        if (wire !== LEN) return false;
        span.name = r.string();
        return true;
      case 6:
        if (wire !== VARINT) return false;
        span.kind = r.int32();
        return true;
      case 7:
        if (wire !== I64) return false;
        span.startMs = nanosToMs(r);
        return true;
      case 8:
        if (wire !== I64) return false;
        span.endMs = nanosToMs(r);
        return true;
      case 9:
        if (wire !== LEN) return false;
        readKeyValue(r, span.attributes, where);
        if (span.attributes.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxAttributes} attributes`);
        return true;
      case 11:
        if (wire !== LEN) return false;
        if (span.events.length >= OTLP_LIMITS.maxEvents) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxEvents} events`);
        span.events.push(readEvent(r, where));
        return true;
      case 13:
        if (wire !== LEN) return false;
        if (span.links.length >= OTLP_LIMITS.maxLinks) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxLinks} links`);
        span.links.push(readLink(r, where));
        return true;
      case 15:
        if (wire !== LEN) return false;
        message(r, (n, w) => {
          if (n === 2 && w === LEN) span.status.message = r.string();
          else if (n === 3 && w === VARINT) {
            const code = r.int32();
            span.status.code = (code === 1 || code === 2 ? code : 0) as OtlpStatusCode;
          } else return false;
          return true;
        });
        return true;
      default:
        return false;
    }
  });
  span.traceId = hexId(traceId ?? new Uint8Array(), 16, () => `${where()}.traceId`);
  span.spanId = hexId(spanId ?? new Uint8Array(), 8, () => `${where()}.spanId`);
  span.parentSpanId = parent && (parent as Uint8Array).length ? hexId(parent, 8, () => `${where()}.parentSpanId`) : null;
  return span;
}

function readEvent(r: Reader, spanWhere: () => string): OtlpEvent {
  const e: OtlpEvent = { name: '', timeMs: 0, attributes: new Map() };
  const where = (): string => `${spanWhere()} event`;
  message(r, (no, wire) => {
    if (no === 1 && wire === I64) e.timeMs = nanosToMs(r);
    else if (no === 2 && wire === LEN) e.name = r.string();
    else if (no === 3 && wire === LEN) readKeyValue(r, e.attributes, where);
    else return false;
    return true;
  });
  if (e.attributes.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxAttributes} attributes`);
  return e;
}

function readLink(r: Reader, spanWhere: () => string): OtlpLink {
  let traceId: Uint8Array = new Uint8Array();
  let spanId: Uint8Array = new Uint8Array();
  const attributes: OtlpAttrs = new Map();
  const where = (): string => `${spanWhere()}.links`;
  message(r, (no, wire) => {
    if (no === 1 && wire === LEN) traceId = r.bytes();
    else if (no === 2 && wire === LEN) spanId = r.bytes();
    else if (no === 4 && wire === LEN) readKeyValue(r, attributes, where);
    else return false;
    return true;
  });
  return { traceId: hexId(traceId, 16, () => `${where()}.traceId`), spanId: hexId(spanId, 8, () => `${where()}.spanId`), attributes };
}

/** One KeyValue into `into`; `where` builds the error text only when there is an error. (A plain loop: this runs for every attribute.) */
function readKeyValue(r: Reader, into: OtlpAttrs, where: string | (() => string), depth = 0): void {
  let key = '';
  let value: OtlpValue = null;
  const end = r.uint32() + r.pos;
  if (end > r.len) throw new RangeError(`a message runs past the end of the body (${end} > ${r.len})`);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) key = r.string();
    else if (tag === ((2 << 3) | LEN)) value = readAnyValue(r, depth, () => `${typeof where === 'string' ? where : where()} attribute "${key.slice(0, 80)}"`);
    else r.skipType(tag & 7);
  }
  if (r.pos !== end) throw new RangeError('a field runs past the end of its message');
  if (key === '__proto__') throw new OtlpPayloadError(`${typeof where === 'string' ? where : where()} has an attribute named "__proto__", which is refused; rename it`);
  into.set(key, value);
}

function readAnyValue(r: Reader, depth: number, where: () => string): OtlpValue {
  if (depth > OTLP_LIMITS.maxValueDepth) throw new OtlpPayloadError(`${where()} nests arrays or key-value lists deeper than ${OTLP_LIMITS.maxValueDepth} levels`);
  // Most values are one string: read it without the general loop.
  const start = r.pos;
  const length = r.uint32();
  if (r.pos + length <= r.len && length > 0 && r.buf[r.pos] === ((1 << 3) | LEN)) {
    const end = r.pos + length;
    r.pos++;
    const text = r.string();
    if (r.pos === end) return text;
  }
  r.pos = start;
  let value: OtlpValue = null;
  message(r, (no, wire) => {
    switch (no) {
      case 1:
        if (wire !== LEN) return false;
        value = r.string();
        return true;
      case 2:
        if (wire !== VARINT) return false;
        value = r.bool();
        return true;
      case 3: {
        if (wire !== VARINT) return false;
        const v = r.int64() as unknown as number | { low: number; high: number };
        value = typeof v === 'number' ? v : v.high * 4294967296 + (v.low >>> 0);
        return true;
      }
      case 4:
        if (wire !== I64) return false;
        value = r.double();
        return true;
      case 5: {
        if (wire !== LEN) return false;
        const list: OtlpValue[] = [];
        message(r, (n, w) => {
          if (n !== 1 || w !== LEN) return false;
          if (list.length >= OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxArrayLength} elements`);
          list.push(readAnyValue(r, depth + 1, where));
          return true;
        });
        value = list;
        return true;
      }
      case 6: {
        if (wire !== LEN) return false;
        const map: OtlpAttrs = new Map();
        message(r, (n, w) => {
          if (n !== 1 || w !== LEN) return false;
          if (map.size >= OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxArrayLength} entries`);
          readKeyValue(r, map, where, depth + 1);
          return true;
        });
        value = map;
        return true;
      }
      case 7:
        if (wire !== LEN) return false;
        value = r.bytes();
        return true;
      default:
        return false;
    }
  });
  return value;
}
