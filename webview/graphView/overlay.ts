import type { AgentAggregate } from '../../src/core/store/types';
import type { GraphEdgeInfo, GraphNodeInfo, NodeStats, RequestResults } from '../../src/shared/protocol';

/*
 * What each overlay shows on a node and an edge, worked out from the host's
 * answers. Pure functions: the drawing code only applies them.
 */

export type GraphMode = 'structure' | 'rollout' | 'aggregate';
export const GRAPH_MODES: readonly GraphMode[] = ['structure', 'rollout', 'aggregate'];

export type RolloutOverlay = RequestResults['graph/rolloutOverlay'];
export type AggregateOverlay = RequestResults['graph/aggregate'];

/**
 * Edges a rollout went along. The path has node names in start order but no
 * parent links (parallel branches interleave), so an edge s → t counts as
 * taken when t ran after s at some point; from START, when t ran at all; to
 * END, when s was the last node to run.
 */
export function takenEdges(edges: readonly GraphEdgeInfo[], nodes: readonly GraphNodeInfo[], overlay: RolloutOverlay): Set<number> {
  const kind = new Map(nodes.map((n) => [n.id, n.kind]));
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  overlay.path.forEach((name, i) => {
    if (!first.has(name)) first.set(name, i);
    last.set(name, i);
  });
  const final = overlay.path[overlay.path.length - 1];
  const taken = new Set<number>();
  edges.forEach((e, i) => {
    if (kind.get(e.source) === 'start') {
      if (first.has(e.target)) taken.add(i);
    } else if (kind.get(e.target) === 'end') {
      if (final !== undefined && e.source === final) taken.add(i);
    } else if (first.has(e.source) && last.has(e.target) && first.get(e.source)! < last.get(e.target)!) {
      taken.add(i);
    }
  });
  return taken;
}

/** Whether a node counts as visited in a rollout (START and END: when the rollout got there). */
export function visitedIn(node: GraphNodeInfo, overlay: RolloutOverlay, edges: readonly GraphEdgeInfo[]): boolean {
  if (node.kind === 'start') return overlay.path.length > 0;
  if (node.kind === 'end') {
    const final = overlay.path[overlay.path.length - 1];
    return final !== undefined && edges.some((e) => e.source === final && e.target === node.id);
  }
  return (overlay.visits[node.id] ?? 0) > 0;
}

/** Mean final reward of the rollouts an agent took part in, over all its prompt versions. */
export function agentReward(agents: readonly AgentAggregate[], agent: string): { meanReward: number; rollouts: number } | null {
  let sum = 0;
  let n = 0;
  for (const a of agents) {
    if (a.agent !== agent || a.meanReward === null) continue;
    sum += a.meanReward * a.rollouts;
    n += a.rollouts;
  }
  return n ? { meanReward: sum / n, rollouts: n } : null;
}

export function formatMs(ms: number | null): string {
  if (ms === null) return '–';
  if (ms >= 10_000) return `${(ms / 1000).toFixed(0)} s`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.round(ms)} ms`;
}

export function formatRate(r: number | null): string {
  return r === null ? '–' : `${Math.round(r * 100)}%`;
}

export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** The detail line under a node's name. */
export function detailLine(
  node: GraphNodeInfo,
  mode: GraphMode,
  data: { rollout: RolloutOverlay | null; aggregate: AggregateOverlay | null; edges: readonly GraphEdgeInfo[] },
): string {
  if (node.kind === 'start' || node.kind === 'end') return '';
  if (mode === 'rollout' && data.rollout) {
    const v = data.rollout.visits[node.id] ?? 0;
    const err = data.rollout.errors[node.id] ?? 0;
    if (!v) return 'not visited';
    return `visited ${v}×${err ? ` · ${err} error${err > 1 ? 's' : ''}` : ''}`;
  }
  if (mode === 'aggregate' && data.aggregate) {
    const s = statsOf(data.aggregate, node.id);
    if (!s || !s.visits) return 'never visited';
    return `${formatCount(s.visits)} visits · ${formatMs(s.meanLatencyMs)} · ${formatRate(s.errorRate)} err`;
  }
  if (node.kind === 'tools') return node.agent ? `tools of ${node.agent}` : 'tool node';
  if (node.kind === 'agent') return node.hasPrompt ? 'agent · prompt' : 'agent';
  return 'node';
}

export function statsOf(aggregate: AggregateOverlay, node: string): NodeStats | undefined {
  return aggregate.nodes.find((n) => n.node === node);
}

/** A sentence for screen readers and tooltips: everything the node shows, in words. */
export function describeNode(
  node: GraphNodeInfo,
  mode: GraphMode,
  data: { rollout: RolloutOverlay | null; aggregate: AggregateOverlay | null; edges: readonly GraphEdgeInfo[] },
): string {
  const name = node.kind === 'start' ? 'Start' : node.kind === 'end' ? 'End' : node.id;
  const parts = [name, node.kind === 'tools' ? 'tool node' : node.kind];
  const detail = detailLine(node, mode, data);
  if (detail && detail !== parts[1]) parts.push(detail);
  if (mode === 'aggregate' && data.aggregate) {
    const s = statsOf(data.aggregate, node.id);
    if (s) parts.push(`in ${formatCount(s.rollouts)} of ${formatCount(s.sample ?? data.aggregate.rollouts)} rollouts${s.sample !== undefined ? ' (most recent)' : ''}`);
    if (node.kind === 'agent' && node.agent) {
      const r = agentReward(data.aggregate.agents, node.agent);
      if (r) parts.push(`mean final reward ${r.meanReward.toFixed(3)}`);
      const versions = data.aggregate.agents.filter((a) => a.agent === node.agent && a.meanReward !== null);
      if (versions.length > 1) {
        parts.push(`by prompt version: ${versions.map((v) => `${v.promptVersion ?? 'none'} ${v.meanReward!.toFixed(3)} (${v.rollouts})`).join('; ')}`);
      }
    }
  }
  return parts.join(', ');
}
