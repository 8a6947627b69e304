import { select, zoom, zoomIdentity, type Selection, type ZoomBehavior } from 'd3';
import type { GraphEdgeInfo, GraphNodeInfo } from '../../src/shared/protocol';
import { layoutGraph, type GraphLayout, type PlacedEdge, type PlacedNode, type Point } from './layout';
import { describeNode, detailLine, edgeTraffic, formatCount, revisitDelta, signedReward, statsOf, takenEdges, visitedIn, type AggregateOverlay, type GraphMode, type RolloutOverlay } from './overlay';
import { directionOfKey, nearestInDirection, readingOrder } from './spatialNav';

/*
 * The graph drawing: ELK positions drawn with d3, zoom and pan with d3-zoom,
 * overlays applied as classes and badges. Every name comes from a graph
 * (possibly a user's) and goes in through .text(), never as markup.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';
const NODE_H = 46;
const TERMINAL_H = 28;
const NODE_MIN_W = 176;
const NODE_MAX_W = 300;
const NAME_FONT_PX = 13;
const DETAIL_FONT_PX = 11;
const LABEL_FONT_PX = 11;
/** Stroke width of an edge in the aggregate: from the thinnest (never taken) to the busiest edge. */
const EDGE_MIN_W = 1.2;
const EDGE_MAX_W = 7;

export interface OverlayData {
  mode: GraphMode;
  rollout: RolloutOverlay | null;
  aggregate: AggregateOverlay | null;
}

type SvgSel<E extends Element> = Selection<E, unknown, null, undefined>;

function measureText(): (text: string, px: number, weight?: number) => number {
  const ctx = document.createElement('canvas').getContext('2d');
  const family = getComputedStyle(document.body).fontFamily || 'sans-serif';
  return (text, px, weight = 400) => {
    if (!ctx) return text.length * px * 0.6;
    ctx.font = `${weight} ${px}px ${family}`;
    return ctx.measureText(text).width;
  };
}

function displayName(n: GraphNodeInfo): string {
  return n.kind === 'start' ? 'START' : n.kind === 'end' ? 'END' : n.id;
}

function edgePath(e: PlacedEdge): string {
  const p = e.points;
  if (!p.length) return '';
  const f = (q: Point): string => `${q.x.toFixed(1)},${q.y.toFixed(1)}`;
  let d = `M${f(p[0]!)}`;
  if (e.spline && p.length >= 4) {
    for (let i = 1; i + 2 < p.length; i += 3) d += ` C${f(p[i]!)} ${f(p[i + 1]!)} ${f(p[i + 2]!)}`;
  } else {
    for (let i = 1; i < p.length; i++) d += ` L${f(p[i]!)}`;
  }
  return d;
}

function edgeTitle(e: PlacedEdge, traffic: { traversals: number; rollouts: number } | null): string {
  const name = `${e.info.source} → ${e.info.target}${e.info.label ? ` (${e.info.label})` : ''}${e.back ? ', back edge' : ''}`;
  if (!traffic) return name;
  return `${name}: taken ${formatCount(traffic.traversals)} time${traffic.traversals === 1 ? '' : 's'} in ${formatCount(traffic.rollouts)} rollout${traffic.rollouts === 1 ? '' : 's'}`;
}

export class GraphCanvas {
  readonly svg: SvgSel<SVGSVGElement>;
  private readonly viewport: SvgSel<SVGGElement>;
  private readonly zoomer: ZoomBehavior<SVGSVGElement, unknown>;
  private layout: GraphLayout | null = null;
  private nodeSel: Selection<SVGGElement, PlacedNode, SVGGElement, unknown> | null = null;
  private edgeSel: Selection<SVGGElement, PlacedEdge, SVGGElement, unknown> | null = null;
  private readonly measure = measureText();
  private userMoved = false;

  constructor(
    host: HTMLElement,
    private readonly onActivate: (node: GraphNodeInfo, anchor: SVGGElement) => void,
    /** A node got keyboard focus or the pointer (null: left it); the app shows its figures. */
    private readonly onInspect: (node: GraphNodeInfo | null) => void = () => {},
  ) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    host.append(svg);
    this.svg = select(svg).attr('class', 'gv-canvas').attr('role', 'group').attr('aria-label', 'Agent graph');
    const defs = this.svg.append('defs');
    for (const kind of ['plain', 'tool', 'taken', 'dim']) {
      defs
        .append('marker')
        .attr('id', `gv-arrow-${kind}`)
        .attr('class', `gv-arrow gv-arrow-${kind}`)
        .attr('viewBox', '0 0 10 10')
        .attr('refX', 9)
        .attr('refY', 5)
        // In user units, so a thicker highlighted edge keeps the same arrowhead.
        .attr('markerUnits', 'userSpaceOnUse')
        .attr('markerWidth', 9)
        .attr('markerHeight', 9)
        .attr('orient', 'auto-start-reverse')
        .append('path')
        .attr('d', 'M0,0 L10,5 L0,10 z');
    }
    this.viewport = this.svg.append('g').attr('class', 'gv-viewport');
    this.zoomer = zoom<SVGSVGElement, unknown>()
      .scaleExtent([0.15, 4])
      .on('zoom', (ev: { transform: { toString(): string }; sourceEvent: Event | null }) => {
        this.viewport.attr('transform', ev.transform.toString());
        if (ev.sourceEvent) this.userMoved = true;
      });
    this.svg.call(this.zoomer).on('dblclick.zoom', null);
    // Refit when the panel (or the space around the graph) changes size, until the user zooms or pans.
    new ResizeObserver(() => {
      if (!this.userMoved) this.fit(false);
    }).observe(svg);
  }

  async setGraph(nodes: GraphNodeInfo[], edges: GraphEdgeInfo[]): Promise<void> {
    const m = this.measure;
    this.layout = await layoutGraph(nodes, edges, {
      node: (n) =>
        n.kind === 'start' || n.kind === 'end'
          ? { width: 84, height: TERMINAL_H }
          : { width: Math.min(NODE_MAX_W, Math.max(NODE_MIN_W, m(n.id, NAME_FONT_PX, 600) + 28)), height: NODE_H },
      label: (text) => ({ width: Math.min(220, m(text, LABEL_FONT_PX) + 10), height: LABEL_FONT_PX + 6 }),
    });
    this.draw();
    this.fit(false);
  }

  private draw(): void {
    const layout = this.layout!;
    this.viewport.selectAll('*').remove();
    const edgeLayer = this.viewport.append('g').attr('class', 'gv-edges');
    const labelLayer = this.viewport.append('g').attr('class', 'gv-edge-labels');
    const nodeLayer = this.viewport.append('g').attr('class', 'gv-nodes');
    const toolNode = new Set(layout.nodes.filter((n) => n.info.kind === 'tools').map((n) => n.info.id));

    this.edgeSel = edgeLayer
      .selectAll<SVGGElement, PlacedEdge>('g')
      .data(layout.edges)
      .join('g')
      .attr('class', (e) => {
        const c = ['gv-edge'];
        if (e.info.conditional) c.push('gv-conditional');
        if (toolNode.has(e.info.source) || toolNode.has(e.info.target)) c.push('gv-tool-loop');
        if (e.back) c.push('gv-back');
        return c.join(' ');
      })
      .attr('data-source', (e) => e.info.source)
      .attr('data-target', (e) => e.info.target)
      .attr('data-label', (e) => e.info.label ?? null);
    this.edgeSel.append('path').attr('class', 'gv-edge-line').attr('d', edgePath);
    this.edgeSel.append('title').text((e) => edgeTitle(e, null));

    const labelled = labelLayer
      .selectAll<SVGGElement, PlacedEdge>('g')
      .data(layout.edges.filter((e) => e.label))
      .join('g')
      .attr('class', 'gv-edge-label')
      .attr('data-edge', (e) => String(e.index))
      .attr('transform', (e) => `translate(${e.label!.x},${e.label!.y})`);
    labelled.append('rect').attr('width', (e) => e.label!.width).attr('height', (e) => e.label!.height).attr('rx', 3);
    labelled
      .append('text')
      .attr('x', (e) => e.label!.width / 2)
      .attr('y', (e) => e.label!.height / 2)
      .attr('text-anchor', 'middle')
      .attr('dominant-baseline', 'central')
      .text((e) => e.label!.text);
    // Traversal counts (aggregate mode): on the edge's own label, or a small label of their own at the middle of the path.
    const counted = labelLayer
      .selectAll<SVGGElement, PlacedEdge>('g.gv-edge-count')
      .data(layout.edges.filter((e) => !e.label && e.points.length > 1))
      .join('g')
      .attr('class', 'gv-edge-label gv-edge-count')
      .attr('data-edge', (e) => String(e.index))
      .attr('hidden', '');
    counted.append('rect').attr('rx', 3).attr('height', LABEL_FONT_PX + 6);
    counted.append('text').attr('y', (LABEL_FONT_PX + 6) / 2).attr('text-anchor', 'middle').attr('dominant-baseline', 'central');

    const ordered = readingOrder(layout.nodes);
    const nodes = nodeLayer
      .selectAll<SVGGElement, PlacedNode>('g')
      .data(ordered)
      .join('g')
      .attr('class', (n) => `gv-node gv-kind-${n.info.kind}`)
      .attr('data-node', (n) => n.info.id)
      .attr('tabindex', 0)
      .attr('role', 'button')
      .attr('transform', (n) => `translate(${n.x},${n.y})`);
    nodes.append('title');
    const terminal = (n: PlacedNode): boolean => n.info.kind === 'start' || n.info.kind === 'end';
    nodes
      .append('rect')
      .attr('class', 'gv-node-box')
      .attr('width', (n) => n.width)
      .attr('height', (n) => n.height)
      .attr('rx', (n) => (terminal(n) ? n.height / 2 : 6));
    nodes
      .append('text')
      .attr('class', 'gv-node-name')
      .attr('x', (n) => n.width / 2)
      .attr('y', (n) => (terminal(n) ? n.height / 2 : 17))
      .attr('text-anchor', 'middle')
      .attr('dominant-baseline', 'central')
      .text((n) => displayName(n.info))
      .each((n, i, els) => this.fitText(els[i]!, displayName(n.info), n.width - 16, NAME_FONT_PX, 600));
    nodes
      .filter((n) => !terminal(n))
      .append('text')
      .attr('class', 'gv-node-detail')
      .attr('x', (n) => n.width / 2)
      .attr('y', 34)
      .attr('text-anchor', 'middle')
      .attr('dominant-baseline', 'central');
    nodes.append('g').attr('class', 'gv-badges');

    nodes
      .on('click', (ev: MouseEvent, n) => {
        ev.stopPropagation();
        this.onActivate(n.info, ev.currentTarget as SVGGElement);
      })
      .on('keydown', (ev: KeyboardEvent, n) => this.onNodeKey(ev, n))
      .on('focus', (_ev: FocusEvent, n) => {
        this.reveal(n);
        this.onInspect(n.info);
      })
      .on('mouseenter', (_ev: MouseEvent, n) => this.onInspect(n.info));
    this.nodeSel = nodes;
  }

  /** Shrinks text that would overflow its box rather than letting it spill over neighbours. */
  private fitText(text: SVGTextElement, value: string, room: number, px: number, weight = 400): void {
    if (this.measure(value, px, weight) > room) {
      text.setAttribute('textLength', String(room));
      text.setAttribute('lengthAdjust', 'spacingAndGlyphs');
    } else {
      text.removeAttribute('textLength');
      text.removeAttribute('lengthAdjust');
    }
  }

  private onNodeKey(ev: KeyboardEvent, n: PlacedNode): void {
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      this.onActivate(n.info, ev.currentTarget as SVGGElement);
      return;
    }
    const dir = directionOfKey(ev.key);
    if (!dir || !this.layout) return;
    ev.preventDefault();
    const next = nearestInDirection({ ...n, id: n.info.id }, this.layout.nodes.map((p) => ({ ...p, id: p.info.id })), dir);
    if (next) this.focusNode(next.id);
  }

  focusNode(id: string): void {
    this.nodeSel?.filter((n) => n.info.id === id).node()?.focus();
  }

  /** Pans a node into view when keyboard focus lands on it outside the visible area. */
  private reveal(n: PlacedNode): void {
    const svgEl = this.svg.node()!;
    const box = svgEl.getBoundingClientRect();
    const g = this.nodeSel?.filter((p) => p.info.id === n.info.id).node();
    if (!g) return;
    const r = g.getBoundingClientRect();
    if (r.left >= box.left && r.right <= box.right && r.top >= box.top && r.bottom <= box.bottom) return;
    this.svg.call(this.zoomer.translateTo, n.x + n.width / 2, n.y + n.height / 2);
  }

  /** Scales and centres the whole graph in the visible area. */
  fit(animate = true): void {
    if (!this.layout) return;
    this.userMoved = false;
    const el = this.svg.node()!;
    const w = el.clientWidth || 800;
    const h = el.clientHeight || 600;
    const { width, height } = this.layout;
    const k = Math.min(1.25, Math.max(0.15, Math.min(w / (width + 24), h / (height + 24))));
    const t = zoomIdentity.translate((w - width * k) / 2, (h - height * k) / 2).scale(k);
    if (animate) this.svg.transition().duration(250).call(this.zoomer.transform, t);
    else this.svg.call(this.zoomer.transform, t);
  }

  zoomBy(factor: number): void {
    this.userMoved = true;
    this.svg.transition().duration(150).call(this.zoomer.scaleBy, factor);
  }

  /** Applies one overlay: classes, detail lines, badges and accessible names. */
  apply(data: OverlayData): void {
    if (!this.layout || !this.nodeSel || !this.edgeSel) return;
    const edges = this.layout.edges.map((e) => e.info);
    const nodes = this.layout.nodes.map((n) => n.info);
    const ctx = { rollout: data.rollout, aggregate: data.aggregate, edges };
    const rollout = data.mode === 'rollout' ? data.rollout : null;
    const taken = rollout ? takenEdges(edges, nodes, rollout) : new Set<number>();
    this.svg.attr('data-mode', data.mode);

    this.edgeSel
      .classed('gv-taken', (e) => taken.has(e.index))
      .classed('gv-dim', (e) => rollout !== null && !taken.has(e.index))
      .select('path')
      .attr('marker-end', (e) => {
        const kind = rollout ? (taken.has(e.index) ? 'taken' : 'dim') : e.info.source.endsWith('_tools') || e.info.target.endsWith('_tools') ? 'tool' : 'plain';
        return `url(#gv-arrow-${kind})`;
      });
    this.viewport
      .selectAll<SVGGElement, PlacedEdge>('.gv-edge-label')
      .classed('gv-taken', (e) => taken.has(e.index))
      .classed('gv-dim', (e) => rollout !== null && !taken.has(e.index));
    this.applyTraffic(data.mode === 'aggregate' && data.aggregate ? edgeTraffic(edges, data.aggregate.edges) : null);

    const m = this.measure;
    this.nodeSel.each((n, i, els) => {
      const g = select(els[i]!);
      const visited = rollout ? visitedIn(n.info, rollout, edges) : false;
      const errors = rollout ? (rollout.errors[n.info.id] ?? 0) : data.mode === 'aggregate' && data.aggregate ? (statsOf(data.aggregate, n.info.id)?.errorRate ?? 0) > 0 ? 1 : 0 : 0;
      g.classed('gv-visited', rollout !== null && visited)
        .classed('gv-unvisited', rollout !== null && !visited)
        .classed('gv-has-error', errors > 0);
      const detail = detailLine(n.info, data.mode, ctx);
      const text = g.select<SVGTextElement>('.gv-node-detail');
      if (!text.empty()) {
        text.text(detail);
        this.fitText(text.node()!, detail, n.width - 12, DETAIL_FONT_PX);
      }
      const label = describeNode(n.info, data.mode, ctx);
      g.attr('aria-label', label);
      g.select('title').text(label);
      g.attr('data-visits', rollout ? String(rollout.visits[n.info.id] ?? 0) : null);

      const badges: Array<{ cls: string; text: string; title: string }> = [];
      if (rollout) {
        const v = rollout.visits[n.info.id] ?? 0;
        if (v > 1) badges.push({ cls: 'gv-badge-visits', text: `×${v}`, title: `visited ${v} times` });
        const err = rollout.errors[n.info.id] ?? 0;
        if (err) badges.push({ cls: 'gv-badge-error', text: `! ${err}`, title: `${err} failed visit${err > 1 ? 's' : ''}` });
      } else if (data.mode === 'aggregate' && data.aggregate) {
        const s = statsOf(data.aggregate, n.info.id);
        const d = s ? revisitDelta(s) : null;
        if (s && d !== null) {
          badges.push({
            cls: d < 0 ? 'gv-badge-worse' : 'gv-badge-better',
            text: `↻ ${signedReward(d)}`,
            title: `mean reward ${s.revisited.meanReward!.toFixed(3)} when revisited (${s.revisited.rollouts} rollouts) vs ${s.once.meanReward!.toFixed(3)} when run once (${s.once.rollouts})`,
          });
        }
      }
      const layer = g.select<SVGGElement>('.gv-badges');
      layer.selectAll('*').remove();
      let right = n.width + 6;
      for (const b of badges) {
        const w = m(b.text, DETAIL_FONT_PX, 600) + 12;
        right -= w + 2;
        const bg = layer.append('g').attr('class', `gv-badge ${b.cls}`).attr('transform', `translate(${right},${-9})`);
        bg.append('rect').attr('width', w).attr('height', 18).attr('rx', 9);
        bg.append('text').attr('x', w / 2).attr('y', 9).attr('text-anchor', 'middle').attr('dominant-baseline', 'central').text(b.text);
        bg.append('title').text(b.title);
      }
    });
  }
  /**
   * Edge traffic in the aggregate: a count on each edge and a stroke as thick
   * as its share of the busiest edge; an edge never taken fades. null clears it.
   */
  private applyTraffic(traffic: Array<{ traversals: number; rollouts: number } | null> | null): void {
    const max = traffic ? Math.max(1, ...traffic.map((t) => t?.traversals ?? 0)) : 1;
    const count = (e: PlacedEdge): number => traffic?.[e.index]?.traversals ?? 0;
    this.edgeSel!
      .attr('data-traversals', (e) => (traffic ? String(count(e)) : null))
      .classed('gv-unused', (e) => traffic !== null && count(e) === 0)
      .each((e, i, els) => {
        const g = select(els[i]!);
        const line = g.select<SVGPathElement>('.gv-edge-line').node()!;
        if (traffic) line.style.strokeWidth = `${EDGE_MIN_W + (EDGE_MAX_W - EDGE_MIN_W) * Math.sqrt(count(e) / max)}px`;
        else line.style.removeProperty('stroke-width');
        g.select('title').text(edgeTitle(e, traffic ? (traffic[e.index] ?? { traversals: 0, rollouts: 0 }) : null));
      });
    const m = this.measure;
    const pad = 10;
    this.viewport.selectAll<SVGGElement, PlacedEdge>('.gv-edge-label').each((e, i, els) => {
      const g = select(els[i]!);
      const own = !g.classed('gv-edge-count');
      const n = count(e);
      const text = own ? (traffic ? `${e.label!.text} · ${formatCount(n)}` : e.label!.text) : formatCount(n);
      if (!own) {
        g.attr('hidden', traffic && n > 0 ? null : '');
        if (!traffic || !n) return;
        const path = this.edgeSel!.filter((x) => x.index === e.index).select<SVGPathElement>('path').node();
        if (!path) return;
        const w = m(text, LABEL_FONT_PX) + pad;
        const p = path.getPointAtLength(path.getTotalLength() / 2);
        g.attr('transform', `translate(${p.x - w / 2},${p.y - (LABEL_FONT_PX + 6) / 2})`);
        g.select('rect').attr('width', w);
        g.select('text').attr('x', w / 2).text(text);
        return;
      }
      const w = Math.max(e.label!.width, m(text, LABEL_FONT_PX) + pad);
      g.attr('transform', `translate(${e.label!.x - (w - e.label!.width) / 2},${e.label!.y})`);
      g.select('rect').attr('width', w);
      g.select('text').attr('x', w / 2).text(text);
    });
  }
}
