import type { TraceStore } from '../../store/traceStore';
import { Attr, type SpanRecord } from '../../trace/span';

/** A rollout the critic learns from: what the agent saw and answered, and how the judge scored the result. */
export interface ApoExample {
  rolloutId: string;
  taskId: string;
  reward: number;
  criteria: Record<string, number> | null;
  rationale: string | null;
  /** The agent's last model call: its messages after the system prompt, trimmed. */
  saw: string;
  answered: string;
}

export interface ExampleLimits {
  /** Characters kept of what the agent saw (default 1,500). */
  sawChars?: number;
  /** Characters kept of what it answered (default 800). */
  answerChars?: number;
}

/**
 * The agent's lowest-reward succeeded rollouts that ran prompt version
 * `promptVersion`, lowest first. The critic sees the failures of the very
 * prompt it critiques, so a rewrite is judged on its own mistakes.
 */
export function lowRewardExamples(
  store: TraceStore,
  agent: string,
  opts: { promptVersion: string; limit: number } & ExampleLimits,
): ApoExample[] {
  const { rollouts } = store.listRollouts({ agent, promptVersion: opts.promptVersion, status: 'succeeded', sort: 'finalReward', order: 'asc', limit: opts.limit });
  return rollouts
    .filter((r) => r.finalReward !== null)
    .map((r) => {
      const spans = store.getSpans(r.id);
      const call = spans
        .filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === agent)
        .sort((a, b) => a.startTime - b.startTime)
        .at(-1);
      const judge = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'judge');
      const rationale = judge?.attributes['rollout_lab.judge.rationale'];
      return {
        rolloutId: r.id,
        taskId: r.taskId,
        reward: r.finalReward!,
        criteria: r.criteria,
        rationale: typeof rationale === 'string' && rationale.trim() ? rationale.trim() : null,
        saw: trimMiddle(call ? messagesText(call, Attr.inputMessages, true) : '', opts.sawChars ?? 1500),
        answered: trimMiddle(call ? messagesText(call, Attr.outputMessages, false) : '', opts.answerChars ?? 800),
      };
    });
}

/** The messages of an attribute as "role: text" paragraphs; the system prompt is left out (the critic has it already). */
function messagesText(span: SpanRecord, attr: string, skipSystem: boolean): string {
  const raw = span.attributes[attr];
  if (typeof raw !== 'string') return '';
  let messages: unknown;
  try {
    messages = JSON.parse(raw);
  } catch {
    return '';
  }
  if (!Array.isArray(messages)) return '';
  const parts: string[] = [];
  for (const m of messages as Array<{ role?: unknown; content?: unknown; tool_calls?: Array<{ name?: unknown; arguments?: unknown }> }>) {
    if (skipSystem && m.role === 'system') continue;
    const calls = (m.tool_calls ?? []).map((c) => `call ${String(c.name)}(${String(c.arguments)})`).join('; ');
    const text = [typeof m.content === 'string' ? m.content : '', calls].filter(Boolean).join('\n');
    if (text) parts.push(`${String(m.role)}: ${text}`);
  }
  return parts.join('\n\n');
}

/** Keeps the start and the end of a long text (the task and the latest turn matter most). */
export function trimMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.ceil(max * 0.6);
  const tail = max - head;
  return `${text.slice(0, head)}\n[… ${text.length - max} characters left out …]\n${text.slice(text.length - tail)}`;
}
