import type { SpanRecord } from '../core/trace/span';
import { Attr } from '../core/trace/span';

function label(s: SpanRecord): string {
  const a = s.attributes;
  const ms = Math.round(s.endTime - s.startTime);
  const bits: string[] = [`${s.kind} ${s.name}`, `${ms} ms`];
  if (s.kind === 'llm') bits.push(`${a[Attr.inputTokens] ?? '?'}→${a[Attr.outputTokens] ?? '?'} tok`);
  if (s.kind === 'reward' && typeof a[Attr.rewardValue] === 'number') bits.push(`= ${(a[Attr.rewardValue] as number).toFixed(3)}`);
  if (s.status === 'error') bits.push(`ERROR ${s.statusMessage ?? ''}`.trim());
  return bits.join('  ');
}

/** The span tree as indented text, children in start order. */
export function spanTreeText(spans: readonly SpanRecord[]): string {
  const children = new Map<string | null, SpanRecord[]>();
  const ids = new Set(spans.map((s) => s.spanId));
  for (const s of spans) {
    const p = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : null;
    (children.get(p) ?? children.set(p, []).get(p)!).push(s);
  }
  const lines: string[] = [];
  const walk = (parent: string | null, depth: number): void => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => a.startTime - b.startTime)) {
      lines.push(`${'  '.repeat(depth)}${label(s)}`);
      walk(s.spanId, depth + 1);
    }
  };
  walk(null, 0);
  return lines.join('\n');
}
