import { terminalSafe } from '../core/analysis/terminalText';
import { TIME_CLAMPED_ATTR } from '../core/otlp/spanTimes';
import type { SpanRecord } from '../core/trace/span';
import { Attr } from '../core/trace/span';

/** Longest name and status message a tree line shows (the whole of them is in --json). */
const MAX_NAME = 200;
const MAX_STATUS = 300;

/** One line's worth of text from a span: control characters escaped, newlines too, cut to `max`. */
function cell(text: string, max: number): string {
  const safe = terminalSafe(text);
  return safe.length > max ? `${safe.slice(0, max)}… (${safe.length - max} more characters)` : safe;
}

function label(s: SpanRecord, inCycle: boolean): string {
  const a = s.attributes;
  const ms = Math.round(s.endTime - s.startTime);
  const bits: string[] = [`${s.kind} ${cell(s.name, MAX_NAME)}`, `${ms} ms`];
  if (s.kind === 'llm') bits.push(`${a[Attr.inputTokens] ?? '?'}→${a[Attr.outputTokens] ?? '?'} tok`);
  if (s.kind === 'reward' && typeof a[Attr.rewardValue] === 'number') bits.push(`= ${(a[Attr.rewardValue] as number).toFixed(3)}`);
  if (s.status === 'error') bits.push(`ERROR ${cell(s.statusMessage ?? '', MAX_STATUS)}`.trim());
  if (typeof a[TIME_CLAMPED_ATTR] === 'string') bits.push('(times clamped)');
  if (inCycle) bits.push('(parent cycle)');
  return bits.join('  ');
}

export interface SpanTreeText {
  text: string;
  /** What the tree could not show as sent: spans in a parent cycle, no root, clamped times. */
  warnings: string[];
}

/**
 * The span tree as indented text, children in start order. No span is left
 * out: one whose parent is missing is shown at the top, and spans whose
 * parents lead back to themselves (a parent cycle, a span its own parent)
 * are shown under the rollout's root, marked, with a warning.
 */
export function spanTreeText(spans: readonly SpanRecord[]): SpanTreeText {
  const children = new Map<string | null, SpanRecord[]>();
  const ids = new Set(spans.map((s) => s.spanId));
  for (const s of spans) {
    const p = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : null;
    (children.get(p) ?? children.set(p, []).get(p)!).push(s);
  }
  for (const list of children.values()) list.sort((a, b) => a.startTime - b.startTime);
  const tops = children.get(null) ?? [];
  const anchor = tops.find((s) => s.kind === 'rollout' && s.parentSpanId === null) ?? tops[0] ?? null;

  const lines: string[] = [];
  const shown = new Set<string>();
  let cycle: SpanRecord[] = [];
  const walk = (list: readonly SpanRecord[], depth: number, inCycle: boolean): void => {
    for (const s of list) {
      if (shown.has(s.spanId)) continue;
      shown.add(s.spanId);
      lines.push(`${'  '.repeat(depth)}${label(s, inCycle)}`);
      walk(children.get(s.spanId) ?? [], depth + 1, false);
      if (s === anchor) walk(cycle, depth + 1, true);
    }
  };
  // Spans no top-level span leads to are in a cycle: found first, so they can be shown under the anchor.
  const reach = (list: readonly SpanRecord[], seen: Set<string>): void => {
    const stack = [...list];
    while (stack.length) {
      const s = stack.pop()!;
      if (seen.has(s.spanId)) continue;
      seen.add(s.spanId);
      stack.push(...(children.get(s.spanId) ?? []));
    }
  };
  const reached = new Set<string>();
  reach(tops, reached);
  cycle = spans.filter((s) => !reached.has(s.spanId)).sort((a, b) => a.startTime - b.startTime);
  walk(tops, 0, false);
  if (!anchor) walk(cycle, 0, true);

  const warnings: string[] = [];
  if (cycle.length) warnings.push(`${cycle.length} span${cycle.length === 1 ? ' is' : 's are'} in a parent cycle (their parents lead back to themselves); shown under the rollout, marked "(parent cycle)"`);
  if (spans.length && !spans.some((s) => s.parentSpanId === null)) warnings.push('no root span arrived: the tree is shown as far as its spans go');
  const clamped = spans.filter((s) => typeof s.attributes[TIME_CLAMPED_ATTR] === 'string').length;
  if (clamped) warnings.push(`${clamped} span${clamped === 1 ? ' has' : 's have'} times that were out of range (before 2000, more than a day ahead, or ending before the start), shown clamped; the originals are in the ${TIME_CLAMPED_ATTR} attribute`);
  return { text: lines.join('\n'), warnings };
}
