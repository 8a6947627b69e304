import type { Graph as DrawableGraph } from '@langchain/core/runnables/graph';
import type { RunnableConfig } from '@langchain/core/runnables';
import { ToolNode } from '@langchain/langgraph/prebuilt';

export type GraphNodeKind = 'agent' | 'tools' | 'start' | 'end' | 'other';

export interface GraphDescription {
  nodes: Array<{ id: string; kind: GraphNodeKind }>;
  edges: Array<{ source: string; target: string; conditional: boolean; label?: string }>;
}

/** Anything LangGraph can draw: a compiled graph, ours or a user's. */
export interface Drawable {
  getGraphAsync(config?: RunnableConfig & { xray?: boolean | number }): Promise<DrawableGraph>;
}

const KINDS: readonly GraphNodeKind[] = ['agent', 'tools', 'start', 'end', 'other'];
const TOOLS_NAME = /(^|[_-])tools?$/i;

/**
 * The kind of a node: `metadata.kind` when the graph sets it (the research lab
 * does; a user graph can, via addNode's `metadata`), else tools for a ToolNode
 * or a node named `tools` / `X_tools`, else agent.
 */
function kindOf(id: string, data: unknown, metadata: Record<string, unknown> | undefined): GraphNodeKind {
  if (id === '__start__') return 'start';
  if (id === '__end__') return 'end';
  const declared = metadata?.kind;
  if (typeof declared === 'string' && (KINDS as readonly string[]).includes(declared)) return declared as GraphNodeKind;
  if (data instanceof ToolNode || TOOLS_NAME.test(id)) return 'tools';
  return 'agent';
}

/**
 * Nodes and edges from LangGraph's own drawable graph, so it works for any
 * compiled graph. A conditional edge is labelled with its path-map key when
 * that differs from the target's name.
 */
export async function describeGraph(graph: Drawable): Promise<GraphDescription> {
  const drawn = await graph.getGraphAsync();
  const nodes = Object.values(drawn.nodes).map((n) => ({ id: n.id, kind: kindOf(n.id, n.data, n.metadata) }));
  const edges = drawn.edges.map((e) => {
    const edge: GraphDescription['edges'][number] = { source: e.source, target: e.target, conditional: Boolean(e.conditional) };
    if (typeof e.data === 'string' && e.data) edge.label = e.data;
    return edge;
  });
  return { nodes, edges };
}
