import type { EdgeTraffic, GraphEdgeInfo, GraphNodeInfo, NodeStats, RequestResults } from '../../src/shared/protocol';
import { formatNumber } from '../shared/format';

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
    return `${formatNumber(s.visitsPerRollout ?? 0, 2)}×/rollout · ${formatMs(s.p50LatencyMs ?? s.meanLatencyMs)} · ${formatRate(s.errorRate)} err`;
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
    if (s) {
      parts.push(`in ${formatCount(s.rollouts)} of ${formatCount(s.sample ?? data.aggregate.rollouts)} rollouts${s.sample !== undefined ? ' (most recent)' : ''}`);
      parts.push(...statLines(s));
    }
    if (node.kind === 'agent' && node.agent) {
      const versions = data.aggregate.agents.filter((a) => a.agent === node.agent && a.meanReward !== null);
      if (versions.length > 1) {
        parts.push(`by prompt version: ${versions.map((v) => `${v.promptVersion ?? 'none'} ${formatReward(v.meanReward)} (${v.rollouts})`).join('; ')}`);
      }
    }
  }
  return parts.join(', ');
}

export function formatReward(r: number | null): string {
  return r === null ? '–' : r.toFixed(3);
}

/** The node's aggregate figures, one phrase each (the tooltip, the details line and the accessible name). */
export function statLines(s: NodeStats): string[] {
  const out = [`${formatNumber(s.visitsPerRollout ?? 0, 3)} visits per rollout`];
  if (s.p50LatencyMs !== null) out.push(`latency p50 ${formatMs(s.p50LatencyMs)}, p95 ${formatMs(s.p95LatencyMs)}`);
  else out.push(`mean latency ${formatMs(s.meanLatencyMs)}`);
  out.push(`errors in ${formatRate(s.errorRate)} of its rollouts`);
  if (s.retryRate !== null) out.push(`${formatRate(s.retryRate)} of model calls retried`);
  const g = (x: { rollouts: number; meanReward: number | null }): string => (x.rollouts ? `${formatReward(x.meanReward)} (${formatCount(x.rollouts)} rollouts)` : 'no rollouts');
  out.push(`mean reward when revisited ${g(s.revisited)}, when run once ${g(s.once)}`);
  return out;
}

/** Revisited minus once: what going round the node again goes with (null unless both happened). */
export function revisitDelta(s: NodeStats): number | null {
  return s.revisited.rollouts && s.once.rollouts && s.revisited.meanReward !== null && s.once.meanReward !== null ? s.revisited.meanReward - s.once.meanReward : null;
}

/** Traffic per drawn edge (by index), from the step transitions the host counted; pairs that are not edges are dropped. */
export function edgeTraffic(edges: readonly GraphEdgeInfo[], traffic: readonly EdgeTraffic[]): Array<EdgeTraffic | null> {
  const byPair = new Map(traffic.map((t) => [`${t.source}\u0000${t.target}`, t]));
  return edges.map((e) => byPair.get(`${e.source}\u0000${e.target}`) ?? null);
}

/** A signed reward difference, with a real minus sign. */
export function signedReward(d: number): string {
  return `${d >= 0 ? '+' : '−'}${Math.abs(d).toFixed(3)}`;
}
