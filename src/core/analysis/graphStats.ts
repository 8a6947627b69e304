import { isScored } from '../reward/scoredRollouts';
import type { AgentAggregate } from '../store/types';
import type { TraceStore } from '../store/traceStore';
import { agentOfNode } from '../trace/langchainTracer';
import { agentTurns, hasGraphSteps, isGraphStep } from '../trace/agentTurns';
import { nodeName } from '../store/agentSummary';
import { Attr, type SpanRecord } from '../trace/span';

/*
 * What the graph view overlays on the graph (`graph/rolloutOverlay`,
 * `graph/aggregate`): node visits, latencies, errors and step traffic read from
 * the trace store; nothing here runs a rollout.
 */

export interface NodeStats {
  node: string;
  visits: number;
  /** Rollouts in which the node ran at least once. */
  rollouts: number;
  meanLatencyMs: number | null;
  errorRate: number | null;
  /** Set when the stats come from the spans of only this many most recent rollouts (tool nodes; see nodeAggregates). */
  sample?: number;
  /** visits / rollouts: how often the node runs in a rollout that reaches it. */
  visitsPerRollout: number | null;
  /** Median and 95th percentile of one visit's duration, over the span sample (null when no visit was read). */
  p50LatencyMs: number | null;
  p95LatencyMs: number | null;
  /** Share of the node's model calls (in the span sample) that needed a retry; null when it made none. */
  retryRate: number | null;
  /** Scored rollouts that ran the node more than once, and their mean final reward. */
  revisited: RewardGroup;
  /** Scored rollouts that ran the node exactly once, and their mean final reward. */
  once: RewardGroup;
}
export interface RewardGroup {
  rollouts: number;
  meanReward: number | null;
}
/** How often the graph went from one node to the next (LangGraph step k to step k + 1) over the span sample. */
export interface EdgeTraffic {
  source: string;
  target: string;
  /** Times the step was taken, over all sampled rollouts. */
  traversals: number;
  /** Sampled rollouts that took it at least once. */
  rollouts: number;
}
/** The nodes one rollout visited, in order, with visit and error counts per node. */
export interface RolloutOverlay {
  visits: Record<string, number>;
  path: string[];
  errors: Record<string, number>;
}
export interface GraphAggregate {
  rollouts: number;
  nodes: NodeStats[];
  agents: AgentAggregate[];
  edges: EdgeTraffic[];
  spanSample: number;
}

/** Rollouts whose spans nodeAggregates reads for tool nodes, newest first. */
export const DEFAULT_SPAN_SAMPLE = 200;

interface NodeVisit {
  name: string;
  startTime: number;
  step: number;
  durationMs: number;
  /** The node span, or anything under it, ended in error. */
  error: boolean;
  /** Model calls under the node, and how many of them needed a retry. */
  llmCalls: number;
  retried: number;
}

/**
 * One entry per node span, in start order, each with whether it or a span
 * under it failed and its model calls; a rollout with no node spans at all
 * gets its agents' turns instead.
 */
function nodeVisits(spans: readonly SpanRecord[]): NodeVisit[] {
  if (!hasGraphSteps(spans)) {
    return agentTurns(spans).map((t) => ({ name: t.agent, startTime: t.startTime, step: Number.MAX_SAFE_INTEGER, durationMs: Math.max(0, t.endTime - t.startTime), error: t.error, llmCalls: t.llmCalls, retried: t.retried }));
  }
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const visits = new Map<string, NodeVisit>();
  for (const s of spans) {
    // A node inside a lab agent's node (a prebuilt agent's `agent`, a subgraph's node) is part of that agent's visit, not a node of the graph.
    if (!isGraphStep(s) || typeof s.attributes[Attr.innerNode] === 'string') continue;
    const step = s.attributes[Attr.nodeStep];
    visits.set(s.spanId, {
      name: nodeName(s),
      startTime: s.startTime,
      step: typeof step === 'number' ? step : Number.MAX_SAFE_INTEGER,
      durationMs: Math.max(0, s.endTime - s.startTime),
      error: s.status === 'error',
      llmCalls: 0,
      retried: 0,
    });
  }
  for (const s of spans) {
    if (s.kind === 'node' || (s.status !== 'error' && s.kind !== 'llm')) continue;
    // A framework's copy of a call that matched no gateway record may repeat one: not counted.
    if (s.attributes[Attr.unmatchedCall] === true) continue;
    // The nearest node above a model or tool call is the visit it belongs to.
    for (let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) {
      const v = visits.get(p.spanId);
      if (v) {
        if (s.status === 'error') v.error = true;
        if (s.kind === 'llm') {
          v.llmCalls++;
          const r = s.attributes[Attr.retries];
          if (typeof r === 'number' && r > 0) v.retried++;
        }
        break;
      }
    }
  }
  return [...visits.values()].sort((a, b) => a.startTime - b.startTime || a.step - b.step || a.name.localeCompare(b.name));
}

/**
 * The path one rollout took through the graph: node names in start order
 * (a name that repeats is a tool round or a revision loop), visits per node,
 * and per node the visits that failed (the node or a model/tool call in it).
 */
export function rolloutOverlay(spans: SpanRecord[]): RolloutOverlay {
  const path: string[] = [];
  const visits: Record<string, number> = {};
  const errors: Record<string, number> = {};
  for (const v of nodeVisits(spans)) {
    path.push(v.name);
    visits[v.name] = (visits[v.name] ?? 0) + 1;
    if (v.error) errors[v.name] = (errors[v.name] ?? 0) + 1;
  }
  return { visits, path, errors };
}

/** LangGraph's ids of the graph's entry and exit. */
export const START_NODE = '__start__';
export const END_NODE = '__end__';

/**
 * The steps one rollout took from node to node: every node that ran in
 * LangGraph step k leads to every node of step k + 1 (parallel branches fan
 * out and join, so some of these pairs are not edges of the graph; the view
 * draws only the ones that are), START to the first step and the last step to
 * END. Visits without a step (a graph that does not report one) follow each
 * other in start order.
 */
export function stepTransitions(visits: ReadonlyArray<Pick<NodeVisit, 'name' | 'step'>>): Array<[string, string]> {
  const groups: string[][] = [];
  let lastStep: number | null = null;
  for (const v of visits) {
    const step = v.step === Number.MAX_SAFE_INTEGER ? null : v.step;
    if (step !== null && step === lastStep) groups[groups.length - 1]!.push(v.name);
    else groups.push([v.name]);
    lastStep = step;
  }
  if (!groups.length) return [];
  const out: Array<[string, string]> = [];
  for (const t of groups[0]!) out.push([START_NODE, t]);
  for (let i = 0; i + 1 < groups.length; i++) for (const s of groups[i]!) for (const t of groups[i + 1]!) out.push([s, t]);
  for (const s of groups[groups.length - 1]!) out.push([s, END_NODE]);
  return out;
}

function quantile(sorted: readonly number[], q: number): number | null {
  if (!sorted.length) return null;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

interface RewardAcc {
  rollouts: number;
  sum: number;
}
interface NodeAcc {
  visits: number;
  rollouts: number;
  latencyMs: number;
  failedRollouts: number;
  sample?: number;
  revisited: RewardAcc;
  once: RewardAcc;
}
interface SpanAcc {
  durations: number[];
  llmCalls: number;
  retried: number;
}

const rewardGroup = (a: RewardAcc): { rollouts: number; meanReward: number | null } => ({ rollouts: a.rollouts, meanReward: a.rollouts ? a.sum / a.rollouts : null });

/**
 * Per node over many rollouts (those no longer running, of one run or all):
 * visits, rollouts that visited it, visits per rollout, mean latency per
 * visit, error rate as the share of those rollouts in which the node recorded
 * an error, and the mean final reward of the scored rollouts that ran it more
 * than once against those that ran it once (every agent runs in every
 * rollout, so its plain mean reward would be the same for all of them).
 *
 * Why two sources: reading every span of 10,000 rollouts would take seconds,
 * while each rollout row already carries per-agent facts. Every node that is
 * not a tool node is its own agent in those facts (the tracer names an agent
 * after its node), so its visits, latency, errors and revisit rewards come
 * from the rows of ALL matching rollouts; its errors there include its model
 * and tool calls. A tool node (`X_tools`) is folded into agent X in the rows,
 * so tool nodes are counted from the spans of the `maxRollouts` most recent
 * matching rollouts, and carry `sample` = how many rollouts were read. The
 * same span sample gives every node's latency percentiles and retry rate, and
 * the traffic along the edges (see stepTransitions). Per agent, the mean
 * final reward by prompt version comes from the store's aggregate.
 */
export function nodeAggregates(store: TraceStore, opts: { runId?: string; maxRollouts?: number } = {}): GraphAggregate {
  const { rollouts } = store.listRollouts({
    runId: opts.runId,
    status: ['succeeded', 'failed', 'cancelled'],
    sort: 'startTime',
    order: 'desc',
  });
  const acc = new Map<string, NodeAcc>();
  const newAcc = (sample?: number): NodeAcc => ({
    visits: 0,
    rollouts: 0,
    latencyMs: 0,
    failedRollouts: 0,
    ...(sample === undefined ? {} : { sample }),
    revisited: { rollouts: 0, sum: 0 },
    once: { rollouts: 0, sum: 0 },
  });
  const addReward = (n: NodeAcc, visits: number, reward: number | null): void => {
    if (reward === null) return;
    const g = visits > 1 ? n.revisited : n.once;
    g.rollouts++;
    g.sum += reward;
  };
  for (const r of rollouts) {
    const reward = isScored(r) ? r.finalReward : null;
    for (const a of r.agents) {
      if (a.visits <= 0) continue;
      let n = acc.get(a.agent);
      if (!n) acc.set(a.agent, (n = newAcc()));
      n.visits += a.visits;
      n.rollouts++;
      n.latencyMs += a.latencyMs;
      if (a.errors > 0) n.failedRollouts++;
      addReward(n, a.visits, reward);
    }
  }

  const sampleSize = Math.max(0, opts.maxRollouts ?? DEFAULT_SPAN_SAMPLE);
  const sample = rollouts.slice(0, sampleSize);
  const toolAcc = new Map<string, NodeAcc>();
  const spanAcc = new Map<string, SpanAcc>();
  const edges = new Map<string, { source: string; target: string; traversals: number; rollouts: number }>();
  for (const r of sample) {
    const visits = nodeVisits(store.getSpans(r.id));
    const reward = isScored(r) ? r.finalReward : null;
    const seen = new Map<string, { visits: number; failed: boolean }>();
    for (const v of visits) {
      let sp = spanAcc.get(v.name);
      if (!sp) spanAcc.set(v.name, (sp = { durations: [], llmCalls: 0, retried: 0 }));
      sp.durations.push(v.durationMs);
      sp.llmCalls += v.llmCalls;
      sp.retried += v.retried;
      if (agentOfNode(v.name) === v.name) continue;
      let t = toolAcc.get(v.name);
      if (!t) toolAcc.set(v.name, (t = newAcc(sample.length)));
      t.visits++;
      t.latencyMs += v.durationMs;
      const k = seen.get(v.name) ?? { visits: 0, failed: false };
      k.visits++;
      k.failed ||= v.error;
      seen.set(v.name, k);
    }
    for (const [name, k] of seen) {
      const t = toolAcc.get(name)!;
      t.rollouts++;
      if (k.failed) t.failedRollouts++;
      addReward(t, k.visits, reward);
    }
    const taken = new Set<string>();
    for (const [source, target] of stepTransitions(visits)) {
      const key = `${source}\u0000${target}`;
      let e = edges.get(key);
      if (!e) edges.set(key, (e = { source, target, traversals: 0, rollouts: 0 }));
      e.traversals++;
      if (!taken.has(key)) {
        taken.add(key);
        e.rollouts++;
      }
    }
  }
  for (const [name, t] of toolAcc) acc.set(name, t);

  const nodes: NodeStats[] = [...acc.entries()]
    .map(([node, a]) => {
      const sp = spanAcc.get(node);
      const sorted = sp ? [...sp.durations].sort((x, y) => x - y) : [];
      const s: NodeStats = {
        node,
        visits: a.visits,
        rollouts: a.rollouts,
        meanLatencyMs: a.visits ? a.latencyMs / a.visits : null,
        errorRate: a.rollouts ? a.failedRollouts / a.rollouts : null,
        visitsPerRollout: a.rollouts ? a.visits / a.rollouts : null,
        p50LatencyMs: quantile(sorted, 0.5),
        p95LatencyMs: quantile(sorted, 0.95),
        retryRate: sp && sp.llmCalls ? sp.retried / sp.llmCalls : null,
        revisited: rewardGroup(a.revisited),
        once: rewardGroup(a.once),
      };
      if (a.sample !== undefined) s.sample = a.sample;
      return s;
    })
    .sort((x, y) => x.node.localeCompare(y.node));
  const edgeList = [...edges.values()].sort((x, y) => x.source.localeCompare(y.source) || x.target.localeCompare(y.target));
  return { rollouts: rollouts.length, nodes, agents: store.aggregateByAgent({ runId: opts.runId }), edges: edgeList, spanSample: sample.length };
}
