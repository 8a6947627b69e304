import { judgeMessages } from '../reward/judge';
import { Attr, type SpanRecord } from '../trace/span';

/**
 * Rollouts stored before the root span kept the final output have it only in
 * what the judge was shown: these read it back from the judge's input.
 */
/** The rollout's judge span (its reward by the judge). */
export function judgeSpan(spans: readonly SpanRecord[]): SpanRecord | undefined {
  return spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'judge');
}

/** The text the judge scored, read from the user message of the judge's first model call; null when it cannot be found. */
export function protocolFromJudgeInput(spans: readonly SpanRecord[]): string | null {
  const judge = judgeSpan(spans);
  if (!judge) return null;
  const call = spans.filter((s) => s.kind === 'llm' && s.parentSpanId === judge.spanId).sort((x, y) => x.startTime - y.startTime)[0];
  const raw = call?.attributes[Attr.inputMessages];
  if (typeof raw !== 'string') return null;
  let messages: Array<{ role?: unknown; content?: unknown }>;
  try {
    messages = JSON.parse(raw) as typeof messages;
  } catch {
    return null;
  }
  for (const m of Array.isArray(messages) ? messages : []) {
    if (m.role !== 'user' || typeof m.content !== 'string') continue;
    const text = protocolInJudgeMessage(m.content);
    if (text !== null) return text;
  }
  return null;
}

const SENTINEL = '\u0000protocol\u0000';
let markers: { before: string; after: string } | null = null;

/**
 * The protocol inside the judge's user message. The markers around it are
 * taken from judgeMessages itself (built once around a sentinel), so they
 * follow any change to the judge's wording.
 */
export function protocolInJudgeMessage(content: string): string | null {
  if (!markers) {
    const human = judgeMessages({ goal: '', context: '', output: SENTINEL, criteria: {} })[1]!.content as string;
    const at = human.indexOf(SENTINEL);
    const head = human.slice(0, at);
    const tail = human.slice(at + SENTINEL.length);
    const afterEnd = tail.indexOf('\n', tail.search(/[^\n]/));
    markers = { before: head.slice(head.lastIndexOf('\n\n')), after: tail.slice(0, afterEnd + 1) };
  }
  const start = content.indexOf(markers.before);
  const end = content.lastIndexOf(markers.after);
  if (start < 0 || end < start + markers.before.length) return null;
  return content.slice(start + markers.before.length, end);
}
