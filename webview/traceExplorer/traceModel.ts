import type { SpanRecord } from '../../src/core/trace/span';

/**
 * The span tree of one rollout, laid out once in pre-order in flat typed
 * arrays. A subtree is the contiguous range [i, subtreeEnd[i]), so the visible
 * rows after any expand, collapse or search come from one linear pass that
 * skips closed subtrees whole: cheap enough to redo on every keystroke for
 * 10,000 spans.
 */
export interface TraceModel {
  /** Spans in pre-order: parents before children, siblings by start time. */
  spans: SpanRecord[];
  parent: Int32Array;
  depth: Int32Array;
  subtreeEnd: Int32Array;
  /** 1-based position among siblings and the number of siblings (aria-posinset / aria-setsize). */
  posInSet: Int32Array;
  setSize: Int32Array;
  indexById: Map<string, number>;
  /** Earliest start and latest end over all spans (epoch ms). */
  t0: number;
  t1: number;
  /** Spans whose parents lead back to themselves (a parent cycle, a span its own parent): shown under the rollout's root. */
  inCycle: number;
}

function bySpanStart(a: SpanRecord, b: SpanRecord): number {
  return a.startTime - b.startTime || b.endTime - a.endTime || (a.kind === 'rollout' ? -1 : b.kind === 'rollout' ? 1 : 0);
}

export function buildTraceModel(input: readonly SpanRecord[]): TraceModel {
  const byId = new Map<string, SpanRecord>();
  for (const s of input) byId.set(s.spanId, s);
  const children = new Map<string, SpanRecord[]>();
  const roots: SpanRecord[] = [];
  for (const s of byId.values()) {
    const p = s.parentSpanId;
    // A span whose parent is missing (still running, or cut off) is shown at the top rather than lost.
    if (p && byId.has(p)) {
      const list = children.get(p);
      if (list) list.push(s);
      else children.set(p, [s]);
    } else {
      roots.push(s);
    }
  }
  for (const list of children.values()) list.sort(bySpanStart);
  roots.sort(bySpanStart);
  // A parent cycle is never reached from a root: its spans go under the rollout's root (after its own children) so none disappears.
  const reached = new Set<string>();
  const reach = (from: SpanRecord[]): void => {
    const stack = [...from];
    while (stack.length) {
      const s = stack.pop()!;
      if (reached.has(s.spanId)) continue;
      reached.add(s.spanId);
      const kids = children.get(s.spanId);
      if (kids) stack.push(...kids);
    }
  };
  reach(roots);
  const cycle = [...byId.values()].filter((s) => !reached.has(s.spanId)).sort(bySpanStart);
  // One entry per cycle (its earliest span); the rest of the cycle hangs below it.
  const entries: SpanRecord[] = [];
  for (const s of cycle) {
    if (reached.has(s.spanId)) continue;
    entries.push(s);
    reach([s]);
  }
  const anchor = roots.find((s) => s.kind === 'rollout' && s.parentSpanId === null) ?? roots[0];
  if (anchor) children.set(anchor.spanId, [...(children.get(anchor.spanId) ?? []), ...entries]);

  const n = byId.size;
  const spans: SpanRecord[] = [];
  const parent = new Int32Array(n);
  const depth = new Int32Array(n);
  const subtreeEnd = new Int32Array(n);
  const posInSet = new Int32Array(n);
  const setSize = new Int32Array(n);
  const indexById = new Map<string, number>();
  // Iterative DFS: a deep chain must not overflow the stack.
  type Frame = { span: SpanRecord; parent: number; depth: number; pos: number; size: number };
  const visit = (rootList: SpanRecord[]): void => {
    const stack: Frame[] = [];
    for (let r = rootList.length - 1; r >= 0; r--) stack.push({ span: rootList[r]!, parent: -1, depth: 0, pos: r + 1, size: rootList.length });
    const open: number[] = [];
    while (stack.length) {
      const f = stack.pop()!;
      if (indexById.has(f.span.spanId)) continue;
      // Close the subtrees this frame is not inside of.
      while (open.length && open[open.length - 1] !== f.parent) subtreeEnd[open.pop()!] = spans.length;
      const i = spans.length;
      spans.push(f.span);
      indexById.set(f.span.spanId, i);
      parent[i] = f.parent;
      depth[i] = f.depth;
      posInSet[i] = f.pos;
      setSize[i] = f.size;
      open.push(i);
      const kids = children.get(f.span.spanId);
      if (kids) for (let c = kids.length - 1; c >= 0; c--) stack.push({ span: kids[c]!, parent: i, depth: f.depth + 1, pos: c + 1, size: kids.length });
    }
    while (open.length) subtreeEnd[open.pop()!] = spans.length;
  };
  visit(roots);
  // Without any root (every span in a cycle) the cycles are the top of the tree.
  if (!anchor) visit(entries);

  let t0 = Infinity;
  let t1 = -Infinity;
  for (const s of spans) {
    if (s.startTime < t0) t0 = s.startTime;
    if (Math.max(s.endTime, s.startTime) > t1) t1 = Math.max(s.endTime, s.startTime);
  }
  if (!spans.length) t0 = t1 = 0;
  return { spans, parent, depth, subtreeEnd, posInSet, setSize, indexById, t0, t1, inCycle: cycle.length };
}

export function hasChildren(m: TraceModel, i: number): boolean {
  return m.subtreeEnd[i]! > i + 1;
}

/**
 * The rows on screen, in order: spans whose ancestors are all expanded and,
 * while searching, that match or lead to a match.
 */
export function visibleRows(m: TraceModel, collapsed: Uint8Array, keep: Uint8Array | null): Int32Array {
  const n = m.spans.length;
  const out = new Int32Array(n);
  let k = 0;
  let i = 0;
  while (i < n) {
    // keep[] holds for every ancestor of a match, so a node without it has no match below it either.
    if (keep && !keep[i]) {
      i = m.subtreeEnd[i]!;
      continue;
    }
    out[k++] = i;
    i = collapsed[i] ? m.subtreeEnd[i]! : i + 1;
  }
  return out.subarray(0, k);
}

/** Matches plus all their ancestors; `keptChild[i]` says whether i has a kept child (so it shows a twisty). */
export function keepForMatches(m: TraceModel, match: Uint8Array): { keep: Uint8Array; keptChild: Uint8Array } {
  const n = m.spans.length;
  const keep = new Uint8Array(n);
  const keptChild = new Uint8Array(n);
  for (let i = n - 1; i >= 0; i--) {
    if (match[i]) keep[i] = 1;
    if (keep[i]) {
      const p = m.parent[i]!;
      if (p >= 0) {
        keep[p] = 1;
        keptChild[p] = 1;
      }
    }
  }
  return { keep, keptChild };
}

/** Expands every ancestor of i, so it is on screen. */
export function revealIndex(m: TraceModel, collapsed: Uint8Array, i: number): void {
  for (let p = m.parent[i]!; p >= 0; p = m.parent[p]!) collapsed[p] = 0;
}
