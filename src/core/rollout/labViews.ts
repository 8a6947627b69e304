import { resolve } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { GraphEdgeInfo, GraphNodeInfo, NodeStats, RequestResults, RewardPoint } from '../../shared/protocol';
import { readAgentPrompt } from '../config/loader';
import { ConfigError } from '../errors';
import { describeGraph, type Drawable } from '../graph/introspect';
import { buildResearchLabGraph } from '../graph/researchLab/graph';
import { RESEARCH_LAB_AGENTS } from '../graph/researchLab/outputs';
import type { LookupTable } from '../graph/tools/lookup';
import { researchLabTools } from '../graph/tools/researchLabTools';
import { datasetSearchProvider } from '../graph/tools/search';
import { loadUserGraph } from '../graph/userGraph';
import { RoutedChatModel } from '../llm/routedChatModel';
import { SCORED_STATUSES, isScored } from '../reward/scoredRollouts';
import { agentOfNode } from '../trace/langchainTracer';
import { Attr, type SpanRecord } from '../trace/span';
import type { TraceStore } from '../store/traceStore';
import type { Lab } from './lab';

/*
 * The data behind the graph view and the reward curve: what the extension host
 * answers to `graph/*` and `rewards/series`. Everything reads the trace store
 * or LangGraph's own introspection; nothing here runs a rollout.
 */

/** Rollouts whose spans nodeAggregates reads for tool nodes, newest first. */
export const DEFAULT_SPAN_SAMPLE = 200;

function emptyTable(kind: LookupTable['kind']): LookupTable {
  return { kind, file: null, entries: [], lookup: (query) => ({ found: false, query, message: 'not available while drawing the graph' }) };
}

/**
 * The compiled graph the lab's rollouts would run, built only to be drawn:
 * the same builder and config as Lab.environment, but with tools over empty
 * indexes (never called here) so drawing does not index the dataset.
 */
async function graphForIntrospection(lab: Lab): Promise<Drawable> {
  const { config, workspaceDir } = lab.loaded;
  const tools = researchLabTools({
    search: datasetSearchProvider([]),
    proteins: emptyTable('protein'),
    geneOntology: emptyTable('gene_ontology'),
    topK: config.tools.searchTopK,
  });
  const models = new Map<string, BaseChatModel>();
  const model = (agent: string): BaseChatModel => {
    let m = models.get(agent);
    if (!m) {
      m = new RoutedChatModel({ resolved: config.agents[agent] ? lab.router.forAgent(agent) : lab.router.resolve(agent), agent });
      models.set(agent, m);
    }
    return m;
  };
  // A user factory may read prompts while it builds; they must be at hand synchronously.
  const prompts = new Map<string, string>();
  for (const agent of Object.keys(config.agents)) {
    try {
      prompts.set(agent, (await readAgentPrompt(lab.loaded, agent)).text);
    } catch {
      // A missing prompt file does not change the graph's shape; running it reports the problem.
    }
  }
  const prompt = (agent: string): string => {
    const text = prompts.get(agent);
    if (text === undefined) throw new ConfigError(`agent "${agent}" has no readable prompt in .rollout-lab/lab.json`);
    return text;
  };
  if (config.graph.kind === 'module') {
    const user = await loadUserGraph(resolve(workspaceDir, config.graph.module!), config.graph.export, {
      model,
      tools,
      prompt,
      maxTurns: config.runner.maxTurns,
    });
    return user.graph;
  }
  return buildResearchLabGraph({
    model,
    tools,
    agentTools: (agent) => config.agents[agent]?.tools ?? [],
    prompt,
    maxTurns: config.runner.maxTurns,
    agents: Object.keys(config.agents).length ? Object.keys(config.agents) : [...RESEARCH_LAB_AGENTS],
  });
}

/**
 * Nodes and edges of the graph the lab runs, from LangGraph's introspection,
 * so a user's module graph draws the same way as the research lab. A node
 * belongs to an agent by the tracer's rule (`X_tools` belongs to X), and
 * hasPrompt says whether lab.json configures a prompt for that agent.
 */
export async function describeLabGraph(lab: Lab): Promise<RequestResults['graph/describe']> {
  const d = await describeGraph(await graphForIntrospection(lab));
  const agents = lab.loaded.config.agents;
  const nodes: GraphNodeInfo[] = d.nodes.map((n) => {
    const agent = n.kind === 'start' || n.kind === 'end' ? null : agentOfNode(n.id);
    return { id: n.id, kind: n.kind, agent, hasPrompt: agent !== null && Object.prototype.hasOwnProperty.call(agents, agent) };
  });
  const edges: GraphEdgeInfo[] = d.edges.map((e) => ({ ...e }));
  return { nodes, edges, source: lab.loaded.config.graph.kind === 'module' ? 'module' : 'research-lab' };
}

interface NodeVisit {
  name: string;
  startTime: number;
  step: number;
  durationMs: number;
  /** The node span, or anything under it, ended in error. */
  error: boolean;
}

/** One entry per node span, in start order, each with whether it or a span under it failed. */
function nodeVisits(spans: readonly SpanRecord[]): NodeVisit[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const visits = new Map<string, NodeVisit>();
  for (const s of spans) {
    if (s.kind !== 'node') continue;
    const step = s.attributes[Attr.nodeStep];
    visits.set(s.spanId, {
      name: s.name,
      startTime: s.startTime,
      step: typeof step === 'number' ? step : Number.MAX_SAFE_INTEGER,
      durationMs: Math.max(0, s.endTime - s.startTime),
      error: s.status === 'error',
    });
  }
  for (const s of spans) {
    if (s.status !== 'error' || s.kind === 'node') continue;
    // The nearest node above a failed llm/tool span is the visit it belongs to.
    for (let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) {
      const v = visits.get(p.spanId);
      if (v) {
        v.error = true;
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
export function rolloutOverlay(spans: SpanRecord[]): Omit<RequestResults['graph/rolloutOverlay'], 'rolloutId'> {
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

interface NodeAcc {
  visits: number;
  rollouts: number;
  latencyMs: number;
  failedRollouts: number;
  sample?: number;
}

/**
 * Per node over many rollouts (those no longer running, of one run or all):
 * visits, rollouts that visited it, mean latency per visit, and error rate as
 * the share of those rollouts in which the node recorded an error.
 *
 * Why two sources: reading every span of 10,000 rollouts would take seconds,
 * while each rollout row already carries per-agent facts. Every node that is
 * not a tool node is its own agent in those facts (the tracer names an agent
 * after its node), so its visits and latency come from the rows of ALL
 * matching rollouts; its errors there include its model and tool calls. A
 * tool node (`X_tools`) is folded into agent X in the rows, so tool nodes are
 * counted from the spans of the `maxRollouts` most recent matching rollouts
 * that made tool calls, and carry `sample` = how many rollouts were read.
 * Per agent, the mean final reward comes from the store's aggregate by agent
 * and prompt version.
 */
export function nodeAggregates(store: TraceStore, opts: { runId?: string; maxRollouts?: number } = {}): RequestResults['graph/aggregate'] {
  const { rollouts } = store.listRollouts({
    runId: opts.runId,
    status: ['succeeded', 'failed', 'cancelled'],
    sort: 'startTime',
    order: 'desc',
  });
  const acc = new Map<string, NodeAcc>();
  const get = (node: string): NodeAcc => {
    let a = acc.get(node);
    if (!a) acc.set(node, (a = { visits: 0, rollouts: 0, latencyMs: 0, failedRollouts: 0 }));
    return a;
  };
  for (const r of rollouts) {
    for (const a of r.agents) {
      if (a.visits <= 0) continue;
      const n = get(a.agent);
      n.visits += a.visits;
      n.rollouts++;
      n.latencyMs += a.latencyMs;
      if (a.errors > 0) n.failedRollouts++;
    }
  }

  const sampleSize = Math.max(0, opts.maxRollouts ?? DEFAULT_SPAN_SAMPLE);
  const sample = rollouts.slice(0, sampleSize);
  const toolAcc = new Map<string, NodeAcc>();
  for (const r of sample) {
    // A tool node runs only when its agent asked for tools: rollouts without tool calls need no span read.
    if (!r.agents.some((a) => a.toolCalls > 0)) continue;
    const seen = new Map<string, boolean>();
    for (const v of nodeVisits(store.getSpans(r.id))) {
      if (agentOfNode(v.name) === v.name) continue;
      let t = toolAcc.get(v.name);
      if (!t) toolAcc.set(v.name, (t = { visits: 0, rollouts: 0, latencyMs: 0, failedRollouts: 0, sample: sample.length }));
      t.visits++;
      t.latencyMs += v.durationMs;
      seen.set(v.name, (seen.get(v.name) ?? false) || v.error);
    }
    for (const [name, failed] of seen) {
      const t = toolAcc.get(name)!;
      t.rollouts++;
      if (failed) t.failedRollouts++;
    }
  }
  for (const [name, t] of toolAcc) acc.set(name, t);

  const nodes: NodeStats[] = [...acc.entries()]
    .map(([node, a]) => {
      const s: NodeStats = {
        node,
        visits: a.visits,
        rollouts: a.rollouts,
        meanLatencyMs: a.visits ? a.latencyMs / a.visits : null,
        errorRate: a.rollouts ? a.failedRollouts / a.rollouts : null,
      };
      if (a.sample !== undefined) s.sample = a.sample;
      return s;
    })
    .sort((x, y) => x.node.localeCompare(y.node));
  return { rollouts: rollouts.length, nodes, agents: store.aggregateByAgent({ runId: opts.runId }) };
}

/**
 * Finished rollouts with a reward (isScored: the rollouts every mean reward is over), oldest first, each with its criterion
 * scores and, per agent, the prompt version (content hash) and model version
 * it ran. A model version is the logical model, with `@version` when the
 * config pins one, so switching an agent to another model or to a newly
 * trained version both show as a change. `criteria` lists the configured
 * criteria first, then any other criterion found in the rollouts.
 */
export function rewardSeries(store: TraceStore, criteria: string[], opts: { runId?: string } = {}): RequestResults['rewards/series'] {
  const { rollouts } = store.listRollouts({ runId: opts.runId, status: [...SCORED_STATUSES], sort: 'startTime', order: 'asc' });
  const names = [...criteria];
  const extra = new Set<string>();
  const points: RewardPoint[] = [];
  for (const r of rollouts) {
    if (!isScored(r) || r.finalReward === null) continue;
    for (const k of Object.keys(r.criteria ?? {})) if (!names.includes(k)) extra.add(k);
    const promptVersions: Record<string, string | null> = {};
    const modelVersions: Record<string, string | null> = {};
    for (const a of r.agents) {
      promptVersions[a.agent] = a.promptVersion;
      modelVersions[a.agent] = a.model === null ? a.modelVersion : a.modelVersion ? `${a.model}@${a.modelVersion}` : a.model;
    }
    points.push({
      rolloutId: r.id,
      runId: r.runId,
      taskId: r.taskId,
      startTime: r.startTime,
      finalReward: r.finalReward,
      criteria: r.criteria,
      promptVersions,
      modelVersions,
      simulated: r.simulated,
    });
  }
  return { points, criteria: [...names, ...[...extra].sort()] };
}
