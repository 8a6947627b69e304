import protobuf from 'protobufjs';
import { OTLP_LIMITS, OtlpPayloadError, type OtlpAttrs, type OtlpEvent, type OtlpLink, type OtlpResourceSpans, type OtlpScopeSpans, type OtlpSpan, type OtlpStatusCode, type OtlpTraceRequest, type OtlpValue } from './otlpModel';
import { RequestBudget, runAtOnce, type Sliced } from './otlpSlices';

/**
 * ExportTraceServiceRequest in protobuf → the request, checked whole (throws
 * OtlpPayloadError, OtlpLimitError past the budget). Read field by field with
 * protobufjs's Reader, straight into the request's shape: the field numbers
 * are those of otlpProto.ts (the protocol's); no intermediate message
 * objects, which the receiver's throughput depends on. Unknown fields are
 * skipped, as protobuf requires.
 */
export function decodeProtobufRequest(body: Uint8Array, budget = new RequestBudget(OTLP_LIMITS.maxValuesPerRequest)): OtlpTraceRequest {
  return runAtOnce(protobufRequestSteps(body, budget));
}

/** The same decoding as steps that pause between spans and inside large values (see otlpSlices). */
export function* protobufRequestSteps(body: Uint8Array, budget: RequestBudget): Sliced<OtlpTraceRequest> {
  const r = protobuf.Reader.create(body);
  try {
    const resourceSpans: OtlpResourceSpans[] = [];
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag === ((1 << 3) | LEN)) resourceSpans.push(yield* readResourceSpans(r, `resourceSpans[${resourceSpans.length}]`, budget));
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

/** Where the embedded message that starts here ends. */
function open(r: Reader): number {
  const end = r.uint32() + r.pos;
  if (end > r.len) throw new RangeError(`a message runs past the end of the body (${end} > ${r.len})`);
  return end;
}

function close(r: Reader, end: number): void {
  if (r.pos !== end) throw new RangeError('a field runs past the end of its message');
}

/** Runs `field` for each field of the embedded message that starts here; unknown fields and wire types are skipped. */
function message(r: Reader, field: (no: number, wire: number) => boolean): void {
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (!field(tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
  close(r, end);
}

function* readResourceSpans(r: Reader, where: string, b: RequestBudget): Sliced<OtlpResourceSpans> {
  const resource: OtlpAttrs = new Map();
  const scopeSpans: OtlpScopeSpans[] = [];
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) {
      const resEnd = open(r);
      while (r.pos < resEnd) {
        const t = r.uint32();
        if (t === ((1 << 3) | LEN)) yield* readKeyValue(r, resource, `${where}.resource`, 0, b);
        else r.skipType(t & 7);
      }
      close(r, resEnd);
      if (resource.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where}.resource has more than ${OTLP_LIMITS.maxAttributes} attributes`);
    } else if (tag === ((2 << 3) | LEN)) scopeSpans.push(yield* readScopeSpans(r, `${where}.scopeSpans[${scopeSpans.length}]`, b));
    else r.skipType(tag & 7);
  }
  close(r, end);
  return { resource, scopeSpans };
}

function* readScopeSpans(r: Reader, where: string, b: RequestBudget): Sliced<OtlpScopeSpans> {
  const scope = { name: '', version: '' };
  const spans: OtlpSpan[] = [];
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) {
      message(r, (n, w) => {
        if (w !== LEN) return false;
        if (n === 1) scope.name = r.string();
        else if (n === 2) scope.version = r.string();
        else return false;
        return true;
      });
    } else if (tag === ((2 << 3) | LEN)) {
      spans.push(yield* readSpan(r, where, spans.length, b));
      if (b.dueNow()) yield;
    } else r.skipType(tag & 7);
  }
  close(r, end);
  return { scope, spans };
}

function hexId(bytes: Uint8Array, length: number, where: () => string, field: string): string {
  if (bytes.length !== length) throw new OtlpPayloadError(`${where()}.${field} has ${bytes.length} bytes; OTLP ids are ${length} bytes`);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

const NO_BYTES = new Uint8Array();

/** fixed64 nanoseconds → milliseconds, kept to the microsecond (a double cannot hold epoch nanoseconds exactly). */
function nanosToMs(r: Reader): number {
  const lo = r.fixed32();
  const hi = r.fixed32();
  return Math.round((hi * 4294967296 + lo) / 1e3) / 1e3;
}

function* readSpan(r: Reader, scopeWhere: string, index: number, b: RequestBudget): Sliced<OtlpSpan> {
  const where = (): string => `${scopeWhere}.spans[${index}]`;
  let traceId: Uint8Array | null = null;
  let spanId: Uint8Array | null = null;
  let parent: Uint8Array | null = null;
  const span: OtlpSpan = { traceId: '', spanId: '', parentSpanId: null, name: '', kind: 0, startMs: 0, endMs: 0, attributes: new Map(), events: [], links: [], status: { code: 0, message: '' } };
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    const wire = tag & 7;
    switch (tag >>> 3) {
      case 1:
        if (wire !== LEN) break;
        traceId = r.bytes();
        continue;
      case 2:
        if (wire !== LEN) break;
        spanId = r.bytes();
        continue;
      case 4:
        if (wire !== LEN) break;
        parent = r.bytes();
        continue;
      case 5:
        if (wire !== LEN) break;
        span.name = r.string();
        continue;
      case 6:
        if (wire !== VARINT) break;
        span.kind = r.int32();
        continue;
      case 7:
        if (wire !== I64) break;
        span.startMs = nanosToMs(r);
        continue;
      case 8:
        if (wire !== I64) break;
        span.endMs = nanosToMs(r);
        continue;
      case 9:
        if (wire !== LEN) break;
        if (!readScalarKeyValue(r, span.attributes, where, b)) yield* readKeyValue(r, span.attributes, where, 0, b);
        if (span.attributes.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxAttributes} attributes`);
        continue;
      case 11:
        if (wire !== LEN) break;
        if (span.events.length >= OTLP_LIMITS.maxEvents) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxEvents} events`);
        span.events.push(yield* readEvent(r, where, b));
        continue;
      case 13:
        if (wire !== LEN) break;
        if (span.links.length >= OTLP_LIMITS.maxLinks) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxLinks} links`);
        span.links.push(yield* readLink(r, where, b));
        continue;
      case 15:
        if (wire !== LEN) break;
        message(r, (n, w) => {
          if (n === 2 && w === LEN) span.status.message = r.string();
          else if (n === 3 && w === VARINT) {
            const code = r.int32();
            span.status.code = (code === 1 || code === 2 ? code : 0) as OtlpStatusCode;
          } else return false;
          return true;
        });
        continue;
    }
    r.skipType(wire);
  }
  close(r, end);
  span.traceId = hexId(traceId ?? NO_BYTES, 16, where, 'traceId');
  span.spanId = hexId(spanId ?? NO_BYTES, 8, where, 'spanId');
  span.parentSpanId = parent && (parent as Uint8Array).length ? hexId(parent, 8, where, 'parentSpanId') : null;
  return span;
}

function* readEvent(r: Reader, spanWhere: () => string, b: RequestBudget): Sliced<OtlpEvent> {
  const e: OtlpEvent = { name: '', timeMs: 0, attributes: new Map() };
  const where = (): string => `${spanWhere()} event`;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | I64)) e.timeMs = nanosToMs(r);
    else if (tag === ((2 << 3) | LEN)) e.name = r.string();
    else if (tag === ((3 << 3) | LEN)) {
      if (!readScalarKeyValue(r, e.attributes, where, b)) yield* readKeyValue(r, e.attributes, where, 0, b);
    }
    else r.skipType(tag & 7);
  }
  close(r, end);
  if (e.attributes.size > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxAttributes} attributes`);
  return e;
}

function* readLink(r: Reader, spanWhere: () => string, b: RequestBudget): Sliced<OtlpLink> {
  let traceId: Uint8Array = new Uint8Array();
  let spanId: Uint8Array = new Uint8Array();
  const attributes: OtlpAttrs = new Map();
  const where = (): string => `${spanWhere()}.links`;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) traceId = r.bytes();
    else if (tag === ((2 << 3) | LEN)) spanId = r.bytes();
    else if (tag === ((4 << 3) | LEN)) {
      if (!readScalarKeyValue(r, attributes, where, b)) yield* readKeyValue(r, attributes, where, 0, b);
    }
    else r.skipType(tag & 7);
  }
  close(r, end);
  return { traceId: hexId(traceId, 16, where, 'traceId'), spanId: hexId(spanId, 8, where, 'spanId'), attributes };
}

function attributeWhere(where: string | (() => string), key: string): string {
  return `${typeof where === 'string' ? where : where()} attribute "${key.slice(0, 80)}"`;
}

/**
 * One KeyValue whose value holds no array or list into `into`, read at once
 * (most attributes are: no steps to create for them); false, with the reader
 * back where it was and nothing spent, when the value is an array or list
 * (readKeyValue reads it then).
 */
function readScalarKeyValue(r: Reader, into: OtlpAttrs, where: string | (() => string), b: RequestBudget): boolean {
  const start = r.pos;
  let key = '';
  let value: OtlpValue = null;
  let values = 0;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) key = r.string();
    else if (tag === ((2 << 3) | LEN)) {
      const v = scalarAnyValue(r);
      if (v === CONTAINER) {
        r.pos = start;
        return false;
      }
      values++;
      value = v;
    } else r.skipType(tag & 7);
  }
  close(r, end);
  if (!b.take(values)) throw b.exceeded(attributeWhere(where, key));
  if (key === '__proto__') throw new OtlpPayloadError(`${typeof where === 'string' ? where : where()} has an attribute named "__proto__", which is refused; rename it`);
  into.set(key, value);
  return true;
}

/** One KeyValue into `into`; `where` builds the error text only when there is an error. */
function* readKeyValue(r: Reader, into: OtlpAttrs, where: string | (() => string), depth: number, b: RequestBudget): Sliced<void> {
  let key = '';
  let value: OtlpValue = null;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag === ((1 << 3) | LEN)) key = r.string();
    else if (tag === ((2 << 3) | LEN)) {
      const at = (): string => attributeWhere(where, key);
      b.spend(1, at);
      const v = scalarAnyValue(r);
      value = v === CONTAINER ? yield* readContainer(r, depth, at, b) : v;
    }
    else r.skipType(tag & 7);
  }
  close(r, end);
  if (key === '__proto__') throw new OtlpPayloadError(`${typeof where === 'string' ? where : where()} has an attribute named "__proto__", which is refused; rename it`);
  into.set(key, value);
}

/** A scalar AnyValue field (string, bool, int, double, bytes); undefined for arrays, lists and unknown fields. */
function scalar(r: Reader, no: number, wire: number): OtlpValue | undefined {
  switch (no) {
    case 1:
      return wire === LEN ? r.string() : undefined;
    case 2:
      return wire === VARINT ? r.bool() : undefined;
    case 3: {
      if (wire !== VARINT) return undefined;
      const v = r.int64() as unknown as number | { low: number; high: number };
      return typeof v === 'number' ? v : v.high * 4294967296 + (v.low >>> 0);
    }
    case 4:
      return wire === I64 ? r.double() : undefined;
    case 7:
      return wire === LEN ? r.bytes() : undefined;
    default:
      return undefined;
  }
}

const CONTAINER = Symbol('array or key-value list');

/**
 * An AnyValue that holds no array or list, read at once (the common case: no
 * steps to create); CONTAINER, with the reader back where it was, otherwise.
 */
function scalarAnyValue(r: Reader): OtlpValue | typeof CONTAINER {
  const start = r.pos;
  const length = r.uint32();
  // Most values are one string: read it without the general loop.
  if (r.pos + length <= r.len && length > 0 && r.buf[r.pos] === ((1 << 3) | LEN)) {
    const end = r.pos + length;
    r.pos++;
    const text = r.string();
    if (r.pos === end) return text;
  }
  r.pos = start;
  let value: OtlpValue = null;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    const no = tag >>> 3;
    const wire = tag & 7;
    if ((no === 5 || no === 6) && wire === LEN) {
      r.pos = start;
      return CONTAINER;
    }
    const v = scalar(r, no, wire);
    if (v === undefined) r.skipType(wire);
    else value = v;
  }
  close(r, end);
  return value;
}

/**
 * An array or key-value list. Each value spends a unit of the request's
 * budget and each array or list one more; the steps pause between elements
 * when the slice has run its time, so one huge value cannot hold the receiver.
 */
function* readContainer(r: Reader, depth: number, where: () => string, b: RequestBudget): Sliced<OtlpValue> {
  if (depth >= OTLP_LIMITS.maxValueDepth) throw new OtlpPayloadError(`${where()} nests arrays or key-value lists deeper than ${OTLP_LIMITS.maxValueDepth} levels`);
  let value: OtlpValue = null;
  const end = open(r);
  while (r.pos < end) {
    const tag = r.uint32();
    const no = tag >>> 3;
    const wire = tag & 7;
    if (no === 5 && wire === LEN) {
      b.spend(1, where);
      const list: OtlpValue[] = [];
      const listEnd = open(r);
      while (r.pos < listEnd) {
        const t = r.uint32();
        if (t !== ((1 << 3) | LEN)) {
          r.skipType(t & 7);
          continue;
        }
        if (list.length >= OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxArrayLength} elements`);
        b.spend(1, where);
        const v = scalarAnyValue(r);
        list.push(v === CONTAINER ? yield* readContainer(r, depth + 1, where, b) : v);
        if (b.due()) yield;
      }
      close(r, listEnd);
      value = list;
    } else if (no === 6 && wire === LEN) {
      b.spend(1, where);
      const map: OtlpAttrs = new Map();
      const mapEnd = open(r);
      while (r.pos < mapEnd) {
        const t = r.uint32();
        if (t !== ((1 << 3) | LEN)) {
          r.skipType(t & 7);
          continue;
        }
        if (map.size >= OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where()} has more than ${OTLP_LIMITS.maxArrayLength} entries`);
        yield* readKeyValue(r, map, where, depth + 1, b);
        if (b.due()) yield;
      }
      close(r, mapEnd);
      value = map;
    } else {
      const v = scalar(r, no, wire);
      if (v === undefined) r.skipType(wire);
      else value = v;
    }
  }
  close(r, end);
  return value;
}
