import { OTLP_LIMITS, OtlpPayloadError, type OtlpAttrs, type OtlpEvent, type OtlpLink, type OtlpResourceSpans, type OtlpScopeSpans, type OtlpSpan, type OtlpStatusCode, type OtlpTraceRequest, type OtlpValue } from './otlpModel';
import { OtlpLimitError, RequestBudget, runAtOnce, type Sliced } from './otlpSlices';

/**
 * OTLP/JSON ExportTraceServiceRequest → the request, checked whole (throws
 * OtlpPayloadError). Per the OTLP/JSON mapping: ids are hex, 64-bit integers
 * come as strings or numbers, bytesValue is base64, enums are integers, field
 * names are lowerCamelCase and unknown fields are ignored.
 */
export function decodeJsonRequest(text: string, budget = new RequestBudget(OTLP_LIMITS.maxValuesPerRequest)): OtlpTraceRequest {
  return runAtOnce(jsonRequestSteps(text, budget));
}

/** The same decoding as steps that pause between spans and inside large values (see otlpSlices). */
export function* jsonRequestSteps(text: string, b: RequestBudget): Sliced<OtlpTraceRequest> {
  // JSON.parse cannot pause, and a body of tiny nested objects takes it long (16 MB of them, a second):
  // what it is given is bounded first, by a count that can pause. Braces inside strings count too: an over-count only.
  let nodes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 123 || c === 91) nodes++;
    if ((i & 0x3ffff) === 0 && b.dueNow()) yield;
  }
  const maxNodes = OTLP_LIMITS.maxJsonNodesPerRequest;
  if (nodes > maxNodes) {
    throw new OtlpLimitError(
      `the request holds more than ${maxNodes} JSON objects and arrays (the limit maxJsonNodesPerRequest, counted before it is parsed); export smaller batches or smaller attributes, or use http/protobuf`,
      'maxJsonNodesPerRequest',
      maxNodes,
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new OtlpPayloadError(`the body is not JSON (${(err as Error).message}); send an OTLP/JSON ExportTraceServiceRequest`);
  }
  yield;
  const root = obj(doc, 'the request');
  const resourceSpans: OtlpResourceSpans[] = [];
  for (const [i, rsRaw] of list(root.resourceSpans, 'resourceSpans').entries()) {
    const rs = obj(rsRaw, `resourceSpans[${i}]`);
    const resource = rs.resource === undefined || rs.resource === null ? {} : obj(rs.resource, `resourceSpans[${i}].resource`);
    const scopeSpans: OtlpScopeSpans[] = [];
    const resourceAttrs = yield* attrs(resource.attributes, `resourceSpans[${i}].resource`, b);
    for (const [j, ssRaw] of list(rs.scopeSpans, `resourceSpans[${i}].scopeSpans`).entries()) {
      const ss = obj(ssRaw, `resourceSpans[${i}].scopeSpans[${j}]`);
      const scope = ss.scope === undefined || ss.scope === null ? {} : obj(ss.scope, `resourceSpans[${i}].scopeSpans[${j}].scope`);
      const spans: OtlpSpan[] = [];
      for (const [k, sp] of list(ss.spans, `resourceSpans[${i}].scopeSpans[${j}].spans`).entries()) {
        spans.push(yield* span(sp, `resourceSpans[${i}].scopeSpans[${j}].spans[${k}]`, b));
        if (b.dueNow()) yield;
      }
      scopeSpans.push({ scope: { name: str(scope.name, 'scope.name'), version: str(scope.version, 'scope.version') }, spans });
    }
    resourceSpans.push({ resource: resourceAttrs, scopeSpans });
  }
  return { resourceSpans };
}

type Obj = Record<string, unknown>;

function obj(v: unknown, where: string): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new OtlpPayloadError(`${where} is not a JSON object`);
  return v as Obj;
}

function list(v: unknown, where: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new OtlpPayloadError(`${where} is not a JSON array`);
  return v;
}

function str(v: unknown, where: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new OtlpPayloadError(`${where} is not a string`);
  return v;
}

function int(v: unknown, where: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,20}$/.test(v)) return Number(v);
  throw new OtlpPayloadError(`${where} is ${JSON.stringify(v)?.slice(0, 40)}; it must be an integer (a number or a decimal string)`);
}

function nanos(v: unknown, where: string): number {
  const n = int(v, where);
  if (n < 0) throw new OtlpPayloadError(`${where} is negative; times are nanoseconds since the Unix epoch`);
  return Math.round(n / 1e3) / 1e3;
}

function hexId(v: unknown, bytes: number, where: string, optional = false): string {
  if (optional && (v === undefined || v === null || v === '')) return '';
  if (typeof v !== 'string' || v.length !== bytes * 2 || !/^[0-9a-fA-F]+$/.test(v)) {
    throw new OtlpPayloadError(`${where} is ${JSON.stringify(v)?.slice(0, 40) ?? 'missing'}; OTLP/JSON ids are ${bytes * 2} hex characters`);
  }
  return v.toLowerCase();
}

function* span(raw: unknown, where: string, b: RequestBudget): Sliced<OtlpSpan> {
  const s = obj(raw, where);
  const events = list(s.events, `${where}.events`);
  const links = list(s.links, `${where}.links`);
  if (events.length > OTLP_LIMITS.maxEvents) throw new OtlpPayloadError(`${where} has ${events.length} events, more than ${OTLP_LIMITS.maxEvents}`);
  if (links.length > OTLP_LIMITS.maxLinks) throw new OtlpPayloadError(`${where} has ${links.length} links, more than ${OTLP_LIMITS.maxLinks}`);
  const status = s.status === undefined || s.status === null ? {} : obj(s.status, `${where}.status`);
  const code = int(status.code, `${where}.status.code`);
  const attributes = yield* attrs(s.attributes, where, b);
  const eventList: OtlpEvent[] = [];
  for (const [n, e] of events.entries()) {
    const ev = obj(e, `${where}.events[${n}]`);
    eventList.push({ name: str(ev.name, `${where}.events[${n}].name`), timeMs: nanos(ev.timeUnixNano, `${where}.events[${n}].timeUnixNano`), attributes: yield* attrs(ev.attributes, `${where}.events[${n}]`, b) });
  }
  const linkList: OtlpLink[] = [];
  for (const [n, l] of links.entries()) {
    const link = obj(l, `${where}.links[${n}]`);
    linkList.push({
      traceId: hexId(link.traceId, 16, `${where}.links[${n}].traceId`),
      spanId: hexId(link.spanId, 8, `${where}.links[${n}].spanId`),
      attributes: yield* attrs(link.attributes, `${where}.links[${n}]`, b),
    });
  }
  return {
    traceId: hexId(s.traceId, 16, `${where}.traceId`),
    spanId: hexId(s.spanId, 8, `${where}.spanId`),
    parentSpanId: hexId(s.parentSpanId, 8, `${where}.parentSpanId`, true) || null,
    name: str(s.name, `${where}.name`),
    kind: int(s.kind, `${where}.kind`),
    startMs: nanos(s.startTimeUnixNano, `${where}.startTimeUnixNano`),
    endMs: nanos(s.endTimeUnixNano, `${where}.endTimeUnixNano`),
    attributes,
    events: eventList,
    links: linkList,
    status: { code: (code === 1 || code === 2 ? code : 0) as OtlpStatusCode, message: str(status.message, `${where}.status.message`) },
  };
}

function* attrs(v: unknown, where: string, b: RequestBudget): Sliced<OtlpAttrs> {
  const kvs = list(v, `${where}.attributes`);
  if (kvs.length > OTLP_LIMITS.maxAttributes) throw new OtlpPayloadError(`${where} has ${kvs.length} attributes, more than ${OTLP_LIMITS.maxAttributes}`);
  return yield* keyValues(kvs, 0, where, b);
}

function* keyValues(kvs: unknown[], depth: number, where: string, b: RequestBudget): Sliced<OtlpAttrs> {
  const out: OtlpAttrs = new Map();
  for (const raw of kvs) {
    const kv = obj(raw, `${where} attribute`);
    if (typeof kv.key !== 'string') throw new OtlpPayloadError(`${where} has an attribute without a string key`);
    if (kv.key === '__proto__') throw new OtlpPayloadError(`${where} has an attribute named "__proto__", which is refused; rename it`);
    const at = `${where} attribute "${kv.key.slice(0, 80)}"`;
    const v = leaf(kv.value, at, b);
    out.set(kv.key, v === CONTAINER ? yield* container(kv.value as Obj, depth, at, b) : v);
    if (b.due()) yield;
  }
  return out;
}

const CONTAINER = Symbol('array or key-value list');

/** One AnyValue that is no array or list (one unit of the request's budget, see RequestBudget), else CONTAINER. */
function leaf(raw: unknown, where: string, b: RequestBudget): OtlpValue | typeof CONTAINER {
  b.spend(1, () => where);
  if (raw === undefined || raw === null) return null;
  const v = obj(raw, where);
  return v.arrayValue === undefined && v.kvlistValue === undefined ? scalarValue(v, where) : CONTAINER;
}

/** An array or key-value list: one unit more; the steps pause between elements when the slice has run its time. */
function* container(v: Obj, depth: number, where: string, b: RequestBudget): Sliced<OtlpValue> {
  if (depth >= OTLP_LIMITS.maxValueDepth) throw new OtlpPayloadError(`${where} nests arrays or key-value lists deeper than ${OTLP_LIMITS.maxValueDepth} levels`);
  b.spend(1, () => where);
  if (v.arrayValue !== undefined) {
    const values = list(obj(v.arrayValue, where).values, where);
    if (values.length > OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where} has ${values.length} elements, more than ${OTLP_LIMITS.maxArrayLength}`);
    const out: OtlpValue[] = [];
    for (const x of values) {
      const e = leaf(x, where, b);
      out.push(e === CONTAINER ? yield* container(x as Obj, depth + 1, where, b) : e);
      if (b.due()) yield;
    }
    return out;
  }
  const values = list(obj(v.kvlistValue, where).values, where);
  if (values.length > OTLP_LIMITS.maxArrayLength) throw new OtlpPayloadError(`${where} has ${values.length} entries, more than ${OTLP_LIMITS.maxArrayLength}`);
  return yield* keyValues(values, depth + 1, where, b);
}

function scalarValue(v: Obj, where: string): OtlpValue {
  if (v.stringValue !== undefined) return str(v.stringValue, where);
  if (v.boolValue !== undefined) {
    if (typeof v.boolValue !== 'boolean') throw new OtlpPayloadError(`${where}: boolValue is not true or false`);
    return v.boolValue;
  }
  if (v.intValue !== undefined) return int(v.intValue, where);
  if (v.doubleValue !== undefined) {
    const d = typeof v.doubleValue === 'string' ? Number(v.doubleValue) : v.doubleValue;
    if (typeof d !== 'number' || Number.isNaN(d) !== (v.doubleValue === 'NaN')) throw new OtlpPayloadError(`${where}: doubleValue is not a number`);
    return d;
  }
  if (v.bytesValue !== undefined) {
    if (typeof v.bytesValue !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(v.bytesValue)) throw new OtlpPayloadError(`${where}: bytesValue is not base64`);
    return new Uint8Array(Buffer.from(v.bytesValue, 'base64'));
  }
  return null;
}
