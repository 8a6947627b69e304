import { Attr, type AttributeValue, type SpanRecord } from '../trace/span';

/** Attributes whose text is searchable as it is. */
const TEXT_ATTRIBUTES = [Attr.taskGoal, Attr.toolName, Attr.toolArguments, Attr.toolResult, Attr.finalOutput, Attr.output, Attr.judgeRationale, Attr.rewardInfo] as const;
/**
 * Attributes holding a JSON list of chat messages (content, tool calls). Only
 * what models answered: a call's input repeats the conversation so far (earlier
 * answers and tool results, indexed where they were made) after the system
 * prompt and the task (its goal is on the rollout's root span), so indexing
 * it would index the same text over and over, on the write path.
 */
const MESSAGE_ATTRIBUTES = [Attr.outputMessages] as const;

/**
 * The searchable text of a span, in pieces: its name, error message, the
 * task's goal, tool name, arguments and result, outputs, the judge's rationale,
 * and the content and tool calls of the messages a model answered.
 */
export function spanTextPieces(span: SpanRecord, out: string[] = []): string[] {
  out.push(span.name);
  if (span.statusMessage) out.push(span.statusMessage);
  const a = span.attributes;
  for (const key of TEXT_ATTRIBUTES) pushText(a[key], out);
  for (const key of MESSAGE_ATTRIBUTES) {
    const raw = a[key];
    if (typeof raw !== 'string' || raw === '') continue;
    let messages: unknown;
    try {
      messages = JSON.parse(raw);
    } catch {
      out.push(raw);
      continue;
    }
    if (!Array.isArray(messages)) continue;
    for (const m of messages as Array<{ content?: unknown; tool_calls?: Array<{ name?: unknown; arguments?: unknown }> }>) {
      if (!m || typeof m !== 'object') continue;
      pushText(m.content as AttributeValue, out);
      for (const c of Array.isArray(m.tool_calls) ? m.tool_calls : []) {
        pushText(c?.name as AttributeValue, out);
        pushText(c?.arguments as AttributeValue, out);
      }
    }
  }
  return out;
}

function pushText(v: AttributeValue | undefined, out: string[]): void {
  if (typeof v === 'string') {
    if (v !== '') out.push(v);
  } else if (Array.isArray(v)) {
    for (const x of v) if (typeof x === 'string' && x !== '') out.push(x);
  }
}

/**
 * What a user typed, as an FTS4 MATCH expression: its words (letters and
 * digits; everything else separates), all required, the last one also as a
 * prefix so results follow typing. Nothing of the input reaches the query
 * syntax, so no input is an error. null when there is no word.
 */
export function ftsMatchExpression(text: string): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu);
  if (!words?.length) return null;
  return words.map((w, i) => (i === words.length - 1 ? `${w}*` : w)).join(' ');
}
