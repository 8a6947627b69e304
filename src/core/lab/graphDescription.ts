import { resolve } from 'node:path';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
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
import { agentOfNode } from '../trace/langchainTracer';
import { END_NODE, START_NODE, nodeAggregates } from '../analysis/graphStats';
import type { Lab } from './lab';

export interface GraphNodeInfo {
  id: string;
  kind: 'agent' | 'tools' | 'start' | 'end' | 'other';
  /** The agent a node belongs to (a tool node `X_tools` belongs to X). */
  agent: string | null;
  /** Whether the agent has a prompt file that can be opened. */
  hasPrompt: boolean;
}
export interface GraphEdgeInfo {
  source: string;
  target: string;
  conditional: boolean;
  label?: string;
}
export interface GraphDescription {
  nodes: GraphNodeInfo[];
  edges: GraphEdgeInfo[];
  /** 'command': drawn from the agents and transitions observed in stored rollouts (a program has no graph to introspect). */
  source: 'research-lab' | 'module' | 'command';
}
/*
 * The graph the lab runs, as the graph view draws it (`graph/describe`), from
 * LangGraph's own introspection; nothing here runs a rollout.
 */

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
export async function describeLabGraph(lab: Lab): Promise<GraphDescription> {
  if (lab.loaded.config.graph.kind === 'command') return observedGraph(lab);
  const d = await describeGraph(await graphForIntrospection(lab));
  const agents = lab.loaded.config.agents;
  const nodes: GraphNodeInfo[] = d.nodes.map((n) => {
    const agent = n.kind === 'start' || n.kind === 'end' ? null : agentOfNode(n.id);
    return { id: n.id, kind: n.kind, agent, hasPrompt: agent !== null && Object.prototype.hasOwnProperty.call(agents, agent) };
  });
  const edges: GraphEdgeInfo[] = d.edges.map((e) => ({ ...e }));
  return { nodes, edges, source: lab.loaded.config.graph.kind === 'module' ? 'module' : 'research-lab' };
}

/**
 * A command agent's graph as observed: its agents (lab.json's, and any other
 * that made calls) and the transitions between their turns in the most recent
 * stored rollouts, with __start__ and __end__. A step with more than one
 * observed successor is drawn as conditional.
 */
function observedGraph(lab: Lab): GraphDescription {
  const agents = lab.loaded.config.agents;
  const { edges: traffic } = nodeAggregates(lab.store);
  const seen = traffic.flatMap((e) => [e.source, e.target]).filter((n) => n !== START_NODE && n !== END_NODE);
  const names = [...new Set([...Object.keys(agents), ...seen])];
  const nodes: GraphNodeInfo[] = [
    { id: START_NODE, kind: 'start', agent: null, hasPrompt: false },
    ...names.map((name) => ({ id: name, kind: 'agent' as const, agent: name, hasPrompt: Object.prototype.hasOwnProperty.call(agents, name) })),
    { id: END_NODE, kind: 'end', agent: null, hasPrompt: false },
  ];
  const successors = new Map<string, number>();
  for (const e of traffic) successors.set(e.source, (successors.get(e.source) ?? 0) + 1);
  const edges: GraphEdgeInfo[] = traffic.map((e) => ({ source: e.source, target: e.target, conditional: (successors.get(e.source) ?? 0) > 1 }));
  return { nodes, edges, source: 'command' };
}
