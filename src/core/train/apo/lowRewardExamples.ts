import type { TraceStore } from '../../store/traceStore';
import type { RolloutRecord } from '../../store/types';
import { Attr, type SpanRecord } from '../../trace/span';

/** A rollout the critic learns from: what the agent saw and answered, and how the result was scored. */
export interface ApoExample {
  rolloutId: string;
  taskId: string;
  /** The final reward. */
  reward: number;
  /** The judge's criterion scores; null when the judge did not run (a custom reward in mode "replace"). */
  criteria: Record<string, number> | null;
  rationale: string | null;
  /** The custom reward's own breakdown and note (reward.module), when it gave them. */
  custom: { reward: number | null; breakdown: Record<string, number> | null; info: string | null } | null;
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

/** Rollouts asked of the catalog at a time while simulated ones are being skipped. */
const PAGE = 100;

/**
 * The agent's lowest-reward succeeded rollouts that ran prompt version
 * `promptVersion`, lowest first. The critic sees the failures of the very
 * prompt it critiques, so a rewrite is judged on its own mistakes. Rollouts
 * of the simulated endpoint are left out unless `includeSimulated`.
 */
export function lowRewardExamples(
  store: TraceStore,
  agent: string,
  opts: { promptVersion: string; limit: number; includeSimulated?: boolean } & ExampleLimits,
): ApoExample[] {
  const picked: RolloutRecord[] = [];
  for (let offset = 0; picked.length < opts.limit; offset += PAGE) {
    const { rollouts } = store.listRollouts({ agent, promptVersion: opts.promptVersion, status: 'succeeded', sort: 'finalReward', order: 'asc', limit: PAGE, offset });
    picked.push(...rollouts.filter((r) => r.finalReward !== null && (opts.includeSimulated || !r.simulated)));
    if (rollouts.length < PAGE) break;
  }
  return picked.slice(0, opts.limit).map((r) => {
    const spans = store.getSpans(r.id);
    const call = spans
      .filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === agent)
      .sort((a, b) => a.startTime - b.startTime)
      .at(-1);
    const judge = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'judge');
    const rationale = judge?.attributes[Attr.judgeRationale];
    return {
      rolloutId: r.id,
      taskId: r.taskId,
      reward: r.finalReward!,
      criteria: r.criteria,
      rationale: typeof rationale === 'string' && rationale.trim() ? rationale.trim() : null,
      custom: customReward(spans),
      saw: trimMiddle(call ? messagesText(call, Attr.inputMessages, true) : '', opts.sawChars ?? 1500),
      answered: trimMiddle(call ? messagesText(call, Attr.outputMessages, false) : '', opts.answerChars ?? 800),
    };
  });
}

/** What the custom reward span recorded: its value, breakdown and note. */
function customReward(spans: readonly SpanRecord[]): ApoExample['custom'] {
  const span = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'custom');
  if (!span) return null;
  const value = span.attributes[Attr.rewardValue];
  const info = span.attributes[Attr.rewardInfo];
  return {
    reward: typeof value === 'number' ? value : null,
    breakdown: numberRecord(span.attributes[Attr.rewardBreakdown]),
    info: typeof info === 'string' && info.trim() ? info.trim() : null,
  };
}

function numberRecord(raw: unknown): Record<string, number> | null {
  if (typeof raw !== 'string') return null;
  try {
    const v: unknown = JSON.parse(raw);
    if (!v || typeof v !== 'object' || Array.isArray(v)) return null;
    const entries = Object.entries(v as Record<string, unknown>).filter((e): e is [string, number] => typeof e[1] === 'number');
    return entries.length ? Object.fromEntries(entries) : null;
  } catch {
    return null;
  }
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
