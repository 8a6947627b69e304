import ELK from 'elkjs/lib/elk.bundled.js';
import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import type { GraphEdgeInfo, GraphNodeInfo } from '../../src/shared/protocol';

/*
 * Layered layout by ELK (elkjs's bundled build runs in the page: no worker
 * file and no eval, so it works under the panel's CSP). This file only turns
 * the graph into ELK's input and ELK's answer into positions to draw.
 */

export interface Point {
  x: number;
  y: number;
}
export interface PlacedNode {
  info: GraphNodeInfo;
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface PlacedEdge {
  info: GraphEdgeInfo;
  index: number;
  /** Start, ELK's bend/control points, end. */
  points: Point[];
  /** Whether `points` are cubic Bézier control points (spline routing). */
  spline: boolean;
  label: { text: string; x: number; y: number; width: number; height: number } | null;
  /** An edge that returns to an earlier layer: a tool round or a revision loop. */
  back: boolean;
}
export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

export interface Sizes {
  node(n: GraphNodeInfo): { width: number; height: number };
  label(text: string): { width: number; height: number };
}

const elk = new ELK();

export async function layoutGraph(nodes: GraphNodeInfo[], edges: GraphEdgeInfo[], sizes: Sizes): Promise<GraphLayout> {
  // ELK ids are our own, so any node name a user graph has is only ever data.
  const idOf = new Map(nodes.map((n, i) => [n.id, `n${i}`]));
  const known = edges.filter((e) => idOf.has(e.source) && idOf.has(e.target));
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.edgeRouting': 'SPLINES',
      'elk.layered.spacing.nodeNodeBetweenLayers': '46',
      'elk.spacing.nodeNode': '36',
      'elk.spacing.edgeNode': '18',
      'elk.spacing.edgeEdge': '14',
      'elk.spacing.edgeLabel': '4',
      'elk.layered.spacing.edgeNodeBetweenLayers': '18',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.edgeLabels.sideSelection': 'SMART_DOWN',
      'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
      'elk.layered.crossingMinimization.forceNodeModelOrder': 'false',
      'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES',
      'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
      'elk.padding': '[top=16,left=16,bottom=16,right=16]',
    },
    children: nodes.map((n) => ({ id: idOf.get(n.id)!, ...sizes.node(n) })),
    edges: known.map(
      (e, i): ElkExtendedEdge => ({
        id: `e${i}`,
        sources: [idOf.get(e.source)!],
        targets: [idOf.get(e.target)!],
        labels: e.label ? [{ id: `l${i}`, text: e.label, ...sizes.label(e.label) }] : [],
      }),
    ),
  };
  const out = await elk.layout(graph);
  const byElkId = new Map((out.children ?? []).map((c) => [c.id, c]));
  const placed: PlacedNode[] = nodes.map((info) => {
    const c = byElkId.get(idOf.get(info.id)!)!;
    return { info, x: c.x ?? 0, y: c.y ?? 0, width: c.width ?? 0, height: c.height ?? 0 };
  });
  const yOf = new Map(placed.map((p) => [p.info.id, p.y]));
  const placedEdges: PlacedEdge[] = (out.edges ?? []).map((raw, i) => {
    const e = raw as ElkExtendedEdge;
    const info = known[i]!;
    const points: Point[] = [];
    for (const s of e.sections ?? []) {
      if (!points.length) points.push(s.startPoint);
      points.push(...(s.bendPoints ?? []), s.endPoint);
    }
    const l = e.labels?.[0];
    return {
      info,
      index: i,
      points,
      spline: (points.length - 1) % 3 === 0,
      label: l && info.label ? { text: info.label, x: l.x ?? 0, y: l.y ?? 0, width: l.width ?? 0, height: l.height ?? 0 } : null,
      back: (yOf.get(info.target) ?? 0) <= (yOf.get(info.source) ?? 0),
    };
  });
  return { nodes: placed, edges: placedEdges, width: out.width ?? 0, height: out.height ?? 0 };
}
