import type { LiveRollout } from './liveRollouts';
import { Attr, type AttributeValue, type Attributes, type SpanRecord } from './span';

/** How the gateway's record of a call and a framework's span of it were found to be one call. */
export type CallMatch = 'response_id' | 'trace_context' | 'content';

/** Where a merger writes: a live rollout's tracer, or the store for a finished rollout's late spans. */
export interface CallSink {
  add(span: SpanRecord): void;
  /** Writes a span again under its id (it supersedes the earlier copy). */
  replace(span: SpanRecord): void;
}

// The two records come from two processes on one machine, at millisecond (gateway) and nanosecond (OTLP) resolution.
const CLOCK_SLACK_MS = 50;
const STRENGTH: Record<CallMatch, number> = { response_id: 3, trace_context: 2, content: 1 };

/** The framework's raw copies of what the gateway recorded better (messages, the raw answer): the merged span keeps the gateway's. */
function isRawCopy(key: string): boolean {
  return key === 'input.value' || key === 'output.value' || key.startsWith('llm.input_messages.') || key.startsWith('llm.output_messages.');
}

function contains(outer: SpanRecord, inner: SpanRecord): boolean {
  return outer.startTime - CLOCK_SLACK_MS <= inner.startTime && inner.endTime <= outer.endTime + CLOCK_SLACK_MS;
}

/** The prompt as roles and texts: what both records of a call agree on, whatever each makes of tool calls. */
function promptKey(v: AttributeValue | undefined): string | null {
  if (typeof v !== 'string') return null;
  try {
    const list: unknown = JSON.parse(v);
    if (!Array.isArray(list) || !list.length) return null;
    return JSON.stringify(
      list.map((m: { role?: unknown; content?: unknown }) => [m.role === 'developer' ? 'system' : m.role, typeof m.content === 'string' ? m.content.trim() : m.content == null ? '' : JSON.stringify(m.content)]),
    );
  } catch {
    return null;
  }
}

/**
 * Whether a framework's llm span and the gateway's record describe the same
 * model call, and by which rule:
 * 1. response id: both carry the same `gen_ai.response.id`.
 * 2. trace context: the gateway received a `traceparent` whose span is the
 *    framework's llm span itself (the span was current during the request).
 *    Two different response ids are two calls: no rule below applies to them.
 *    Else the `traceparent` span is the framework span's parent and the
 *    framework span's time contains the gateway's.
 * 3. content: the same prompt (roles and texts, in order) and the framework
 *    span's time contains the gateway's.
 */
export function matchCall(framework: SpanRecord, gateway: SpanRecord): CallMatch | null {
  const fid = framework.attributes[Attr.responseId];
  const gid = gateway.attributes[Attr.responseId];
  const bothIds = typeof fid === 'string' && fid !== '' && typeof gid === 'string' && gid !== '';
  if (bothIds && fid === gid) return 'response_id';
  const caller = gateway.attributes[Attr.callerSpanId];
  // The span that was current while the request went out is that call's, whatever id the framework gave it.
  if (typeof caller === 'string' && caller === framework.spanId) return 'trace_context';
  if (bothIds) return null;
  if (typeof caller === 'string' && caller === framework.parentSpanId && contains(framework, gateway)) return 'trace_context';
  const prompt = promptKey(framework.attributes[Attr.inputMessages]);
  if (prompt !== null && prompt === promptKey(gateway.attributes[Attr.inputMessages]) && contains(framework, gateway)) return 'content';
  return null;
}

function revision(s: SpanRecord): number {
  return Number(s.attributes[Attr.spanRevision] ?? 0) || 0;
}

/**
 * The one llm span two records of a call become: the gateway's tokens, ids,
 * logprobs, token ids and messages; the framework's span name, agent (when it
 * is one of the lab's), parent and times. It keeps the id `keepId` (the record
 * written first), so nothing already stored points at a span that is gone.
 */
export function mergedCall(framework: SpanRecord, gateway: SpanRecord, by: CallMatch, keepId: string, labAgents?: ReadonlySet<string>): SpanRecord {
  const attributes: Attributes = {};
  for (const [k, v] of Object.entries(framework.attributes)) if (!isRawCopy(k) && k !== Attr.unmatchedCall) attributes[k] = v;
  for (const [k, v] of Object.entries(gateway.attributes)) if (k !== Attr.unmatchedCall) attributes[k] = v;
  const agent = framework.attributes[Attr.agentName];
  if (typeof agent === 'string' && agent && (!labAgents || labAgents.has(agent))) attributes[Attr.agentName] = agent;
  attributes[Attr.matchedBy] = by;
  attributes[Attr.mergedSpanId] = keepId === gateway.spanId ? framework.spanId : gateway.spanId;
  attributes[Attr.spanRevision] = Math.max(revision(framework), revision(gateway)) + 1;
  const record: SpanRecord = {
    traceId: gateway.traceId,
    spanId: keepId,
    parentSpanId: framework.parentSpanId,
    name: framework.name,
    kind: 'llm',
    startTime: Math.min(framework.startTime, gateway.startTime),
    endTime: Math.max(framework.endTime, gateway.endTime),
    status: gateway.status === 'error' ? 'error' : framework.status,
    attributes,
  };
  const message = gateway.status === 'error' ? gateway.statusMessage : framework.statusMessage;
  if (message !== undefined) record.statusMessage = message;
  return record;
}

interface Candidate {
  span: SpanRecord;
  by: CallMatch;
}

function best(list: SpanRecord[], match: (s: SpanRecord) => CallMatch | null, near: SpanRecord): Candidate | null {
  let found: Candidate | null = null;
  for (const span of list) {
    const by = match(span);
    if (!by) continue;
    const better =
      !found || STRENGTH[by] > STRENGTH[found.by] || (STRENGTH[by] === STRENGTH[found.by] && Math.abs(span.startTime - near.startTime) < Math.abs(found.span.startTime - near.startTime));
    if (better) found = { span, by };
  }
  if (found) list.splice(list.indexOf(found.span), 1);
  return found;
}

/**
 * One model call, one llm span: the gateway's records of a rollout's calls and
 * the llm spans its framework exports meet here, in whichever order they come.
 * A pair that matches (see matchCall) is written as one span under the id of
 * the one written first; a framework span that matches no gateway record in a
 * rollout whose calls go through the gateway is flagged `rollout_lab.llm.unmatched`
 * (it may repeat a call the gateway has: exports and call counts skip it) until
 * a gateway record of it arrives.
 */
export class LlmCallMerger {
  private readonly gatewayCalls: SpanRecord[] = [];
  private readonly frameworkCalls: SpanRecord[] = [];
  private gatewaySeen = 0;
  /** Ids of records merged into another span: a span under one of them hangs under the merged span. */
  private readonly aliases = new Map<string, string>();

  constructor(
    private readonly sink: CallSink,
    private readonly labAgents?: ReadonlySet<string>,
  ) {}

  /** A merger over a finished rollout's stored spans, for late spans: its unmatched records wait for their pair. */
  static over(spans: readonly SpanRecord[], sink: CallSink, labAgents?: ReadonlySet<string>): LlmCallMerger {
    const m = new LlmCallMerger(sink, labAgents);
    for (const s of spans) {
      if (s.kind !== 'llm') continue;
      const merged = s.attributes[Attr.mergedSpanId];
      if (typeof merged === 'string') m.aliases.set(merged, s.spanId);
      if (s.attributes[Attr.callSource] === 'gateway') {
        m.gatewaySeen++;
        if (s.attributes[Attr.matchedBy] === undefined) m.gatewayCalls.push(s);
      } else if (s.attributes[Attr.matchedBy] === undefined) m.frameworkCalls.push(s);
    }
    return m;
  }

  /** The span a record's id now stands for (itself, or the merged span it became). */
  resolve(spanId: string | null): string | null {
    return spanId === null ? null : (this.aliases.get(spanId) ?? spanId);
  }

  /** The gateway's record of a call as it ends: merged into the framework's span of it if that came first, else written as it is. */
  gatewayCall(rec: SpanRecord): SpanRecord {
    this.gatewaySeen++;
    const f = best(this.frameworkCalls, (c) => matchCall(c, rec), rec);
    if (!f) {
      this.gatewayCalls.push(rec);
      this.sink.add(rec);
      return rec;
    }
    const merged = mergedCall(f.span, rec, f.by, f.span.spanId, this.labAgents);
    this.aliases.set(rec.spanId, merged.spanId);
    this.sink.replace(merged);
    return merged;
  }

  /** A framework's llm span: merged into the gateway's record of the call, else written (flagged when the rollout's calls go through the gateway). */
  frameworkCall(rec: SpanRecord): SpanRecord {
    const g = best(this.gatewayCalls, (c) => matchCall(rec, c), rec);
    if (!g) {
      if (this.gatewaySeen > 0) rec.attributes[Attr.unmatchedCall] = true;
      this.frameworkCalls.push(rec);
      this.sink.add(rec);
      return rec;
    }
    const merged = mergedCall(rec, g.span, g.by, g.span.spanId, this.labAgents);
    this.aliases.set(rec.spanId, merged.spanId);
    this.sink.replace(merged);
    return merged;
  }

  /**
   * After the agent's program ended (its spans are in): a gateway record whose
   * caller span never arrived (an agent that sends `traceparent` but exports
   * no spans) hangs under `rootSpanId` instead of nothing.
   */
  settle(known: ReadonlySet<string>, rootSpanId: string): void {
    // The root is still open (not among the ended spans) while the program's spans come in.
    const isKnown = (id: string | null): id is string => id !== null && (id === rootSpanId || known.has(id));
    for (const [i, g] of this.gatewayCalls.entries()) {
      const parent = this.resolve(g.parentSpanId);
      if (isKnown(parent) && parent === g.parentSpanId) continue;
      const moved = { ...g, parentSpanId: isKnown(parent) ? parent : rootSpanId, attributes: { ...g.attributes, [Attr.spanRevision]: revision(g) + 1 } };
      this.gatewayCalls[i] = moved;
      this.sink.replace(moved);
    }
  }
}

const mergers = new WeakMap<LiveRollout['tracer'], LlmCallMerger>();

/** The merger of a live rollout's calls, shared by the gateway and the OTLP receiver. */
export function callMerger(rollout: LiveRollout): LlmCallMerger {
  let m = mergers.get(rollout.tracer);
  if (!m) {
    const tracer = rollout.tracer;
    m = new LlmCallMerger({ add: (s) => tracer.add(s), replace: (s) => tracer.replace(s) }, rollout.agents ? new Set(rollout.agents) : undefined);
    mergers.set(tracer, m);
  }
  return m;
}
