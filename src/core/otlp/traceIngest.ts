import { summariseAgents } from '../store/agentSummary';
import { isFailureKind } from '../store/failureKinds';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord, Split } from '../store/types';
import type { LiveRollouts } from '../trace/liveRollouts';
import { callMerger, LlmCallMerger } from '../trace/llmCallMerge';
import { requestedToolCalls } from '../trace/requestedToolCalls';
import { Attr, type SpanRecord } from '../trace/span';
import { labAgentStep } from './openInferenceSpans';
import type { OtlpAttrs, OtlpPartialSuccess, OtlpTraceRequest } from './otlpModel';
import { agentRewardSpans } from './agentRewards';
import { readRolloutRecordAttributes } from './rolloutRecordAttributes';
import { normaliseSpan, type Evaluation } from './spanNormalise';
import { SERVICE_NAME_ATTR } from './vercelAiSpans';
import { RequestBudget, runAtOnce, type Sliced } from './otlpSlices';
import { clampSpanTimes } from './spanTimes';

/** The run that receives traces which name none. */
export const IMPORTED_RUN = 'imported';
/** The evaluation name the lab's export gives the final reward (criteria have their own names). */
export const FINAL_REWARD_EVALUATION = 'reward';
/** More traces than this waiting for their root span: the oldest is finished without it. */
const MAX_OPEN_TRACES = 10_000;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export interface IngestResult {
  /** Traces (rollouts) the request added spans to, live rollouts included. */
  traces: number;
  /** Spans stored (including late spans and spans handed to live rollouts). */
  spans: number;
  /** Rollouts finished by this request (their root span arrived). */
  finished: number;
  /** Spans handed to a live rollout's tracer. */
  live: number;
  /** llm spans merged with the recording gateway's record of the same call (one call, one span). */
  duplicates: number;
  /** Spans refused (invalid ids), with why: the answer's partial_success. */
  partial: OtlpPartialSuccess | null;
  /** Spans whose times were out of range and are stored clamped (see clampSpanTimes). */
  clamped: number;
}

/** What the receiver says when a trace waited too long for its root span. */
export const NO_ROOT_ERROR = 'no root span arrived';

interface TraceMeta {
  runId: string;
  taskId: string;
  sample: number;
  split: Split | null;
}

/** A trace being received: its rollout is 'running' until its root span arrives. */
interface OpenTrace {
  record: RolloutRecord;
  /** When its last span arrived (Date.now()): a trace idle past the receiver's idle-end time is finished without its root. */
  lastSpanAt: number;
  spans: Map<string, SpanRecord>;
  evaluations: Evaluation[];
}

type Target = { to: 'trace'; meta: TraceMeta } | { to: 'rollout'; rolloutId: string };

interface Planned {
  record: SpanRecord;
  evaluations: Evaluation[];
  target: Target;
}

const HEX32 = /^[0-9a-f]{32}$/;

/** A rollout's spans by id as this request found them (a command agent's rollout can hold thousands of spans), and the merger of its model calls. */
interface RolloutIndex {
  spans: Map<string, SpanRecord>;
  calls: LlmCallMerger;
}

function parsedList(v: unknown): unknown[] | null {
  if (typeof v !== 'string') return null;
  try {
    const parsed: unknown = JSON.parse(v);
    return Array.isArray(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

function isJsonObject(v: unknown): boolean {
  return typeof v === 'string' && v.trimStart().startsWith('{') && parsedList(`[${v}]`) !== null;
}

/** The same arguments, whatever the spacing: JSON-equal objects. */
function sameArguments(a: unknown, b: unknown): boolean {
  const parse = (v: unknown): string | null => {
    const list = typeof v === 'string' ? parsedList(`[${v}]`) : null;
    return list ? JSON.stringify(list[0]) : null;
  };
  const x = parse(a);
  return x !== null && x === parse(b);
}

/**
 * A tool span's call as the model asked for it, from the model calls known now:
 * by its call id (a span whose arguments are not the call's JSON, as
 * LangChain's tool span records only the tool's input, takes the model's
 * arguments), or, without an id, the latest call that ended before the tool
 * started and asked for this tool with these arguments (the Agents SDK's
 * function span names no call id). A tool span that names no agent (a graph's
 * tool node ran it) is the agent's whose call asked for it.
 */
function linkToolCall(rec: SpanRecord, spans: () => Iterable<SpanRecord>): void {
  const id = rec.attributes[Attr.toolCallId];
  const args = rec.attributes[Attr.toolArguments];
  if (typeof id === 'string' && isJsonObject(args) && typeof rec.attributes[Attr.agentName] === 'string') return;
  const name = rec.attributes[Attr.toolName];
  type Found = { id: string; arguments: string; at: number; agent: unknown };
  let found = null as Found | null;
  for (const s of spans()) {
    if (s.kind !== 'llm' || s.attributes[Attr.unmatchedCall] === true) continue;
    for (const c of requestedToolCalls(s)) {
      if (c.arguments === undefined) continue;
      if (typeof id === 'string') {
        if (c.id === id) found = { id, arguments: c.arguments, at: s.endTime, agent: s.attributes[Attr.agentName] };
      } else if (c.name === name && sameArguments(c.arguments, args) && s.endTime <= rec.startTime && (!found || s.endTime > found.at)) {
        found = { id: c.id, arguments: c.arguments, at: s.endTime, agent: s.attributes[Attr.agentName] };
      }
    }
    if (found && typeof id === 'string') break;
  }
  if (!found) return;
  rec.attributes[Attr.toolCallId] = found.id;
  if (!isJsonObject(args)) rec.attributes[Attr.toolArguments] = found.arguments;
  if (typeof rec.attributes[Attr.agentName] !== 'string' && typeof found.agent === 'string') rec.attributes[Attr.agentName] = found.agent;
}

/** The llm spans among a request's spans of a trace and the trace's earlier ones (a span sent again counts once, as this request has it) whose answer asked for tools. */
function toolCallers(list: readonly Planned[], earlier: ReadonlyMap<string, SpanRecord> | undefined): SpanRecord[] {
  const out: SpanRecord[] = [];
  const asks = (s: SpanRecord): boolean => s.kind === 'llm' && s.attributes[Attr.unmatchedCall] !== true && requestedToolCalls(s).length > 0;
  const inList = new Set<string>();
  for (const p of list) {
    inList.add(p.record.spanId);
    if (asks(p.record)) out.push(p.record);
  }
  if (earlier) for (const s of earlier.values()) if (!inList.has(s.spanId) && asks(s)) out.push(s);
  return out;
}

function attr(span: OtlpAttrs, resource: OtlpAttrs, key: string): unknown {
  return span.get(key) ?? resource.get(key);
}

function metaOf(span: OtlpAttrs, resource: OtlpAttrs, traceId: string): TraceMeta {
  const run = attr(span, resource, Attr.runId);
  const task = attr(span, resource, Attr.taskId);
  const sample = Number(attr(span, resource, Attr.sample) ?? 0);
  const split = attr(span, resource, Attr.split);
  return {
    runId: typeof run === 'string' && run.trim() ? run.trim() : IMPORTED_RUN,
    taskId: typeof task === 'string' && task ? task : typeof task === 'number' ? String(task) : traceId,
    sample: Number.isInteger(sample) && sample >= 0 ? sample : 0,
    split: split === 'train' || split === 'val' ? split : null,
  };
}

/** The agent an agent span (invoke_agent, create_agent, OpenInference AGENT) stands for. */
function agentOfAgentSpan(s: SpanRecord): string | null {
  const op = s.attributes[Attr.operationName];
  const isAgent = op === 'invoke_agent' || op === 'create_agent' || s.attributes['openinference.span.kind'] === 'AGENT';
  const name = s.attributes[Attr.agentName];
  return isAgent && typeof name === 'string' ? name : null;
}

/** The nearest agent-span ancestor's agent, among the spans known now. */
function inheritedAgent(s: SpanRecord, lookup: (spanId: string) => SpanRecord | undefined): string | null {
  let parent = s.parentSpanId;
  for (let hops = 0; parent && hops < 1000; hops++) {
    const p = lookup(parent);
    if (!p) return null;
    const agent = agentOfAgentSpan(p);
    if (agent) return agent;
    parent = p.parentSpanId;
  }
  return null;
}

/**
 * Turns OTLP trace requests into rollouts in the store. A trace is a rollout
 * (id = trace id): started ('running') when its first spans arrive, finished
 * when its root span (the one without a parent) does. Spans that name a live
 * rollout (`rollout_lab.rollout.id`) go to that rollout's tracer instead;
 * spans that name a rollout no longer live, or a trace already finished, are
 * written as late spans. Each request is planned whole (normalised, routed)
 * before the first write, so a request that fails to plan stores nothing.
 */
export class OtlpIngest {
  private readonly open = new Map<string, OpenTrace>();
  /** Traces ended for want of a root after the idle time: one whose root (or any span) still comes is taken up again. */
  private readonly idleEnded = new Map<string, OpenTrace>();
  private readonly rootOf = new Map<string, string | null>();
  private readonly runsTouched = new Set<string>();

  constructor(
    private readonly store: TraceStore,
    private readonly live?: LiveRollouts,
  ) {}

  ingest(req: OtlpTraceRequest): IngestResult {
    return runAtOnce(this.ingestSteps(req, new RequestBudget(Infinity)));
  }

  /** The same as steps that pause between spans while planning and between traces while writing (see otlpSlices). */
  *ingestSteps(req: OtlpTraceRequest, budget: RequestBudget): Sliced<IngestResult> {
    const planned: Planned[] = [];
    let rejected = 0;
    let clamped = 0;
    const receivedMs = Date.now();
    for (const rs of req.resourceSpans) {
      for (const ss of rs.scopeSpans) {
        for (const span of ss.spans) {
          if (span.traceId === ZERO_TRACE || span.spanId === ZERO_SPAN) {
            rejected++;
            continue;
          }
          const n = normaliseSpan(span, rs.resource);
          if (clampSpanTimes(n.record, receivedMs)) clamped++;
          const rid = attr(span.attributes, rs.resource, Attr.rolloutId);
          const target: Target =
            typeof rid === 'string' && HEX32.test(rid.toLowerCase())
              ? { to: 'rollout', rolloutId: rid.toLowerCase() }
              : { to: 'trace', meta: metaOf(span.attributes, rs.resource, span.traceId) };
          planned.push({ record: n.record, evaluations: n.evaluations, target });
          if (target.to === 'rollout') for (const reward of agentRewardSpans(span, n.record)) planned.push({ record: reward, evaluations: [], target });
          if (budget.dueNow()) yield;
        }
      }
    }
    const partial = rejected ? { rejectedSpans: rejected, errorMessage: `${rejected} span(s) refused: an all-zero trace or span id is invalid in OTLP` } : null;
    return { ...(yield* this.write(planned, budget)), partial, clamped };
  }

  /** Marks the runs this ingest wrote to as done (the receiver is closing). Traces still waiting for their root stay 'running' and become 'interrupted' when the store closes. */
  close(): void {
    for (const id of this.runsTouched) {
      const run = this.store.getRun(id);
      if (run && run.status === 'running' && run.params.source === 'otlp') this.store.updateRun(id, { status: 'done', endTime: Date.now() });
    }
    this.runsTouched.clear();
  }

  /**
   * Finishes the traces whose last span arrived more than `idleMs` ago and
   * whose root never came (an exporter that crashed, a root dropped): their
   * rollouts end 'interrupted' instead of running until the receiver closes.
   */
  endIdle(idleMs: number, now = Date.now()): number {
    let ended = 0;
    for (const [traceId, trace] of [...this.open]) {
      if (now - trace.lastSpanAt < idleMs) continue;
      const wait = idleMs < 1000 ? `${idleMs} ms` : `${Math.round(idleMs / 1000)} s`;
      this.finishTrace(traceId, trace, null, `${NO_ROOT_ERROR} within ${wait} of its last span; it ended incomplete`);
      if (this.idleEnded.size >= MAX_OPEN_TRACES) this.idleEnded.delete(this.idleEnded.keys().next().value as string);
      this.idleEnded.set(traceId, trace);
      ended++;
    }
    return ended;
  }

  private *write(planned: Planned[], budget: RequestBudget): Sliced<Omit<IngestResult, 'partial' | 'clamped'>> {
    const result = { traces: 0, spans: 0, finished: 0, live: 0, duplicates: 0 };
    const batch = new Map<string, SpanRecord>();
    for (const p of planned) batch.set(p.record.spanId, p.record);
    const touched = new Set<string>();
    const indexes = new Map<string, RolloutIndex>();
    // A live rollout knows its lab's agents: its framework's CHAIN and AGENT spans are read against them before anything inherits from them.
    for (const p of planned) {
      const agents = p.target.to === 'rollout' ? this.live?.get(p.target.rolloutId)?.agents : undefined;
      if (agents) labAgentStep(p.record, this.agentSet(agents));
    }

    const toTraces = new Map<string, Planned[]>();
    for (const p of planned) {
      if (p.target.to === 'rollout') {
        touched.add(p.target.rolloutId);
        const r = this.toRollout(p.record, p.target.rolloutId, batch, indexes);
        if (r === 'duplicate') result.duplicates++;
        else {
          result.spans++;
          if (r === 'live') result.live++;
        }
        if (budget.dueNow()) yield;
        continue;
      }
      let list = toTraces.get(p.record.traceId);
      if (!list) toTraces.set(p.record.traceId, (list = []));
      list.push(p);
    }
    for (const [traceId, list] of toTraces) {
      touched.add(traceId);
      result.spans += list.length;
      if (this.writeTrace(traceId, list, batch)) result.finished++;
      if (budget.dueNow()) yield;
    }
    result.traces = touched.size;
    return result;
  }

  /**
   * A span naming a rollout: into the live rollout's tracer, or written as a
   * late span of that rollout. An llm span meets the gateway's records of the
   * rollout's calls there (LlmCallMerger): the two records of one call become one span.
   */
  private toRollout(rec: SpanRecord, rolloutId: string, batch: Map<string, SpanRecord>, indexes: Map<string, RolloutIndex>): 'live' | 'late' | 'duplicate' {
    const live = this.live?.get(rolloutId);
    // A late span that is no model or tool call needs nothing of what is stored but the root.
    if (!live && rec.kind !== 'llm' && rec.kind !== 'tool') {
      this.fillAgent(rec, (id) => batch.get(id));
      this.store.writeSpan({ ...rec, traceId: rolloutId, parentSpanId: rec.parentSpanId ?? this.rootSpanOf(rolloutId) });
      return 'late';
    }
    let index = indexes.get(rolloutId);
    if (!index) {
      if (live) {
        const spans = new Map(live.tracer.spans().map((s) => [s.spanId, s]));
        index = { spans, calls: callMerger(live) };
      } else {
        const stored = this.store.getRollout(rolloutId) ? this.store.getSpans(rolloutId) : [];
        const write = (s: SpanRecord): void => this.store.writeSpan(s);
        index = { spans: new Map(stored.map((s) => [s.spanId, s])), calls: LlmCallMerger.over(stored, { add: write, replace: write }) };
      }
      indexes.set(rolloutId, index);
    }
    const spans = index.spans;
    const lookup = (id: string): SpanRecord | undefined => batch.get(id) ?? spans.get(id);
    this.fillAgent(rec, lookup, live?.agents);
    const parent = index.calls.resolve(rec.parentSpanId ?? (live ? live.root.spanId : this.rootSpanOf(rolloutId)));
    const added = { ...rec, traceId: rolloutId, parentSpanId: parent };
    if (added.kind === 'tool') linkToolCall(added, () => spans.values());
    if (added.kind === 'llm') {
      const kept = index.calls.frameworkCall(added);
      spans.set(kept.spanId, kept);
      if (kept !== added) return 'duplicate';
    } else {
      if (live) live.tracer.add(added);
      else this.store.writeSpan(added);
      spans.set(added.spanId, added);
    }
    return live ? 'live' : 'late';
  }

  private rootSpanOf(rolloutId: string): string | null {
    if (!this.rootOf.has(rolloutId)) {
      if (this.rootOf.size >= MAX_OPEN_TRACES) this.rootOf.clear();
      const spans = this.store.getRollout(rolloutId) ? this.store.getSpans(rolloutId) : [];
      this.rootOf.set(rolloutId, spans.find((s) => s.parentSpanId === null)?.spanId ?? null);
    }
    return this.rootOf.get(rolloutId)!;
  }

  private readonly agentSets = new WeakMap<readonly string[], ReadonlySet<string>>();

  private agentSet(agents: readonly string[]): ReadonlySet<string> {
    let set = this.agentSets.get(agents);
    if (!set) this.agentSets.set(agents, (set = new Set(agents)));
    return set;
  }

  /** A span's agent, when it names none: its agent-span ancestor's, else the agent of the lab its service is named after. */
  private fillAgent(rec: SpanRecord, lookup: (spanId: string) => SpanRecord | undefined, labAgents?: readonly string[]): void {
    if (typeof rec.attributes[Attr.agentName] === 'string') return;
    const service = rec.attributes[SERVICE_NAME_ATTR];
    const agent = inheritedAgent(rec, lookup) ?? (typeof service === 'string' && labAgents?.includes(service) ? service : null);
    if (agent) rec.attributes[Attr.agentName] = agent;
  }

  /** Writes one trace's spans of this request; true when its root arrived and the rollout was finished. */
  private writeTrace(traceId: string, list: Planned[], batch: Map<string, SpanRecord>): boolean {
    let trace = this.open.get(traceId) ?? this.takeUp(traceId);
    // A trace already in the store (finished here or earlier) takes these as late spans.
    if (!trace && !this.store.getRollout(traceId)) {
      trace = this.startTrace(traceId, list[0]!.target.to === 'trace' ? list[0]!.target.meta : metaOf(new Map(), new Map(), traceId), list);
    }
    if (trace) trace.lastSpanAt = Date.now();
    const lookup = (id: string): SpanRecord | undefined => batch.get(id) ?? trace?.spans.get(id);
    // The model calls of this trace that asked for tools: this request's (in list) and those received before it. Found once, when a tool span first needs them.
    let callers: SpanRecord[] | null = null;
    const modelCalls = (): SpanRecord[] => (callers ??= toolCallers(list, trace?.spans));
    let root: SpanRecord | null = null;
    for (const p of list) {
      const rec = p.record;
      this.fillAgent(rec, lookup);
      if (rec.kind === 'tool') linkToolCall(rec, modelCalls);
      if (rec.parentSpanId === null && trace) {
        if (rec.kind === 'node') rec.kind = 'rollout';
        root = rec;
      }
    }
    // One write for the trace's spans of this request.
    this.store.writeSpans(list.map((p) => p.record));
    if (trace) {
      for (const p of list) {
        trace.spans.set(p.record.spanId, p.record);
        for (const e of p.evaluations) trace.evaluations.push(e);
      }
    }
    if (!trace || !root) return false;
    this.finishTrace(traceId, trace, root);
    return true;
  }

  /** A trace ended by the idle time whose spans come after all: open again, finished anew when its root arrives. */
  private takeUp(traceId: string): OpenTrace | undefined {
    const trace = this.idleEnded.get(traceId);
    if (!trace) return undefined;
    this.idleEnded.delete(traceId);
    Object.assign(trace.record, { status: 'running', failure: null, error: null, endTime: null });
    this.open.set(traceId, trace);
    return trace;
  }

  private startTrace(traceId: string, meta: TraceMeta, list: Planned[]): OpenTrace {
    this.ensureRun(meta.runId);
    if (this.open.size >= MAX_OPEN_TRACES) {
      const [oldestId, oldest] = this.open.entries().next().value as [string, OpenTrace];
      this.finishTrace(oldestId, oldest, null, `${NO_ROOT_ERROR} before ${MAX_OPEN_TRACES} newer traces did`);
    }
    const record: RolloutRecord = {
      id: traceId,
      runId: meta.runId,
      taskId: meta.taskId,
      split: meta.split,
      sample: meta.sample,
      status: 'running',
      failure: null,
      finalReward: null,
      criteria: null,
      judgeFailed: false,
      decision: null,
      expectedDecision: null,
      turns: null,
      error: null,
      simulated: false,
      startTime: list.reduce((t, p) => Math.min(t, p.record.startTime), Infinity),
      endTime: null,
      spanCount: 0,
      agents: [],
    };
    this.store.startRollout(record);
    const trace: OpenTrace = { record, lastSpanAt: Date.now(), spans: new Map(), evaluations: [] };
    this.open.set(traceId, trace);
    return trace;
  }

  private ensureRun(runId: string): void {
    if (this.runsTouched.has(runId)) return;
    const run = this.store.getRun(runId);
    if (!run) {
      this.store.startRun({ id: runId, startTime: Date.now(), endTime: null, status: 'running', params: { source: 'otlp' }, simulated: false, planned: 0 });
    } else if (run.params.source === 'otlp' && run.status !== 'running') {
      this.store.updateRun(runId, { status: 'running', endTime: null });
    }
    this.runsTouched.add(runId);
  }

  /**
   * The rollout's outcome from its root span: `rollout_lab.failure` when it
   * names one (the lab's own export), else 'failed' ('other', with the status
   * message as the error) when the root ended with an error status, else
   * 'succeeded'. Without a root (evicted), 'failed' ('interrupted').
   */
  private finishTrace(traceId: string, trace: OpenTrace, root: SpanRecord | null, noRoot = NO_ROOT_ERROR): void {
    this.open.delete(traceId);
    const spans = [...trace.spans.values()];
    const r = trace.record;
    const ra = root?.attributes ?? {};
    const failure = ra[Attr.failure];
    if (!root) Object.assign(r, { status: 'failed', failure: 'interrupted', error: noRoot });
    else if (isFailureKind(failure)) Object.assign(r, { status: failure === 'cancelled' ? 'cancelled' : 'failed', failure, error: root.statusMessage ?? null });
    else if (root.status === 'error') Object.assign(r, { status: 'failed', failure: 'other', error: root.statusMessage || 'the root span ended with an error status' });
    else Object.assign(r, { status: 'succeeded', failure: null });

    const evals = trace.evaluations;
    const final = typeof ra[Attr.rewardValue] === 'number' ? (ra[Attr.rewardValue] as number) : (evals.find((e) => e.name === FINAL_REWARD_EVALUATION)?.score ?? (evals.length === 1 ? evals[0]!.score : null));
    const criteria = evals.filter((e) => e.name !== FINAL_REWARD_EVALUATION && !(evals.length === 1 && final !== null));
    r.finalReward = final;
    r.criteria = criteria.length ? Object.fromEntries(criteria.map((e) => [e.name, e.score])) : null;
    if (typeof ra[Attr.decision] === 'string') r.decision = ra[Attr.decision] as string;
    if (typeof ra[Attr.expectedDecision] === 'string') r.expectedDecision = ra[Attr.expectedDecision] as string;
    if (typeof ra[Attr.turn] === 'number') r.turns = ra[Attr.turn] as number;
    r.simulated = ra[Attr.simulated] === true;
    // The rest of the record, from a root the lab exported (custom reward breakdown, agents' versions…).
    const recorded = readRolloutRecordAttributes(ra);
    Object.assign(r, recorded.fields);
    // Loops, not Math.min(...spans): a trace can hold more spans than a call takes arguments.
    r.startTime = spans.reduce((t, s) => Math.min(t, s.startTime), r.startTime);
    r.endTime = root?.endTime ?? spans.reduce((t, s) => Math.max(t, s.endTime), r.startTime);
    r.spanCount = spans.length;
    const llm = spans.filter((s) => s.kind === 'llm');
    r.truncatedAnswers = llm.filter((s) => s.attributes[Attr.truncated] === true).length;
    r.truncatedPrompts = llm.filter((s) => s.attributes[Attr.promptTruncated] === true).length;
    r.agents = summariseAgents(agentView(spans), recorded.versions);
    this.store.finishRollout(r);
  }
}

/**
 * The spans as the per-agent summary reads them: every span carries the agent
 * of its nearest agent-span ancestor (now that the whole tree is known), and an
 * agent span is named after its agent, so it counts as a visit.
 */
function agentView(spans: SpanRecord[]): SpanRecord[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  return spans.map((s) => {
    const own = agentOfAgentSpan(s);
    if (own) return { ...s, kind: 'node', name: own };
    if (typeof s.attributes[Attr.agentName] === 'string') return s;
    const agent = inheritedAgent(s, (id) => byId.get(id));
    return agent ? { ...s, attributes: { ...s.attributes, [Attr.agentName]: agent } } : s;
  });
}
