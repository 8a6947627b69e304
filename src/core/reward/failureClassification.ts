import { BROKEN_RESPONSE_BODY } from '../llm/llmErrors';
import { TRUNCATED_AT_MAX_TOKENS } from '../llm/maxTokensCut';
import type { FailureKind } from '../store/failureKinds';
import { Attr, type SpanRecord } from '../trace/span';

/*
 * What went wrong in a rollout, from its error message and its spans: the
 * category the runner records on a rollout that failed, and the issues the
 * evaluation report lists for every rollout it explains.
 */

/**
 * The category of one error from its message and, when a span gives one, its
 * `error.type` (an HTTP status, an exception name, or Rollout Lab's own
 * judge_failed / custom_reward_failed).
 */
export function classifyFailure(message: string | null | undefined, errorType?: string | null): FailureKind {
  const t = (errorType ?? '').trim();
  if (t === 'judge_failed') return 'judge_failed';
  if (t === 'custom_reward_failed') return 'custom_reward_failed';
  if (t === '429') return 'rate_limit';
  if (/^5\d\d$/.test(t)) return 'server_error';
  if (t === 'AbortError') return 'cancelled';
  if (t === 'TimeoutError') return 'timeout';
  if (t === 'GraphRecursionError') return 'max_turns';
  if (t === 'JsonExtractError' || t === 'SyntaxError' || t === 'ZodError') return 'invalid_output';
  const m = message ?? '';
  if (/^interrupted\b/i.test(m)) return 'interrupted';
  // A 200 whose body was cut off or is not JSON: the transport failed, not the model's answer.
  if (m.includes(BROKEN_RESPONSE_BODY)) return 'connection';
  if (/^cancel|\bcancell?ed\b|\baborted\b/i.test(m)) return 'cancelled';
  if (/truncated at max_tokens|finish_reason "?length"?/i.test(m)) return 'truncated';
  if (/^the graph (finished without a|gave no) final output/i.test(m)) return 'no_output';
  if (/\b(HTTP|status) 429\b|rate.?limit|too many requests/i.test(m)) return 'rate_limit';
  if (/\b(HTTP|status) 5\d\d\b|internal server error|bad gateway|service unavailable/i.test(m)) return 'server_error';
  if (/timed out|\btime-?out\b|ETIMEDOUT/i.test(m)) return 'timeout';
  if (/\b(HTTP|status) 4\d\d\b/i.test(m) || /^4\d\d$/.test(t)) return 'client_error';
  if (/connection (failed|refused|reset)|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|socket hang up|fetch failed/i.test(m)) return 'connection';
  if (/recursion limit|max(imum)?[ _-]?turns|turn limit/i.test(m)) return 'max_turns';
  if (/\bjudge\b/i.test(m)) return 'judge_failed';
  if (/JSON|not a chat completion|unreadable response|could not be (parsed|used)|schema|invalid output|parse/i.test(m)) return 'invalid_output';
  return 'other';
}

/** The category of an error a rollout threw: its message, with an HTTP status or the error's name as its type. */
export function classifyThrown(err: unknown, message: string): FailureKind {
  const status = (err as { status?: unknown } | null)?.status;
  const type = typeof status === 'number' ? String(status) : err instanceof Error ? err.name : null;
  return classifyFailure(message, type);
}

function agentOf(s: SpanRecord): string | null {
  const a = s.attributes[Attr.agentName];
  return typeof a === 'string' ? a : null;
}

function parseError(s: SpanRecord): string | null {
  const e = s.attributes[Attr.parseError];
  return typeof e === 'string' ? e : null;
}

/** A model answer cut at max_tokens: the llm span says so, or the node span's parse error does. */
function isTruncatedAnswer(s: SpanRecord): boolean {
  if (s.kind === 'llm') return s.attributes[Attr.truncated] === true;
  return s.kind === 'node' && (parseError(s)?.startsWith(TRUNCATED_AT_MAX_TOKENS) ?? false);
}

/** Model answers cut at max_tokens and prompts the server cut, counted over the llm spans. */
export function truncationCounts(spans: readonly SpanRecord[]): { answers: number; prompts: number } {
  let answers = 0;
  let prompts = 0;
  for (const s of spans) {
    if (s.kind !== 'llm') continue;
    if (s.attributes[Attr.truncated] === true) answers++;
    if (s.attributes[Attr.promptTruncated] === true) prompts++;
  }
  return { answers, prompts };
}

/**
 * Why a graph that finished gave no final output: 'truncated' when the answer
 * that went missing was cut at max_tokens, else 'no_output'. Which answer went
 * missing: when the graph recorded failed agents (the research lab does), a
 * cut answer of one of them; when it recorded none (most user graphs), the
 * graph's last model answer. The judge's calls are not the graph's.
 */
export function noOutputFailure(spans: readonly SpanRecord[], failedAgents: readonly string[]): { kind: 'no_output' | 'truncated'; agent: string | null } {
  const graph = spans.filter((s) => (s.kind === 'llm' || s.kind === 'node') && agentOf(s) !== 'Judge');
  if (failedAgents.length) {
    const cut = graph.find((s) => isTruncatedAnswer(s) && failedAgents.includes(agentOf(s) ?? ''));
    return cut ? { kind: 'truncated', agent: agentOf(cut) } : { kind: 'no_output', agent: null };
  }
  const last = graph.filter((s) => s.kind === 'llm').sort((a, b) => a.endTime - b.endTime).at(-1);
  if (!last) return { kind: 'no_output', agent: null };
  // The node that made the last call, when it says the answer was cut, says it for that call.
  const cut = isTruncatedAnswer(last) || graph.some((s) => s.kind === 'node' && isTruncatedAnswer(s) && agentOf(s) === agentOf(last) && s.endTime >= last.endTime);
  return cut ? { kind: 'truncated', agent: agentOf(last) } : { kind: 'no_output', agent: null };
}

export interface SpanIssue {
  kind: FailureKind;
  agent: string | null;
  message: string;
}

/** The failures one rollout's spans show (the rollout span itself is left to the rollout's error). */
export function spanIssues(spans: readonly SpanRecord[]): SpanIssue[] {
  const issues: SpanIssue[] = [];
  const root = spans.find((s) => s.parentSpanId === null && s.kind === 'rollout');
  for (const s of spans) {
    if (s.kind === 'rollout') continue;
    if (s.kind === 'llm' && s.attributes[Attr.truncated] === true) {
      issues.push({ kind: 'truncated', agent: agentOf(s), message: `${agentOf(s) ?? s.name}'s answer was cut at max_tokens (finish_reason "length")` });
      continue;
    }
    const type = typeof s.attributes[Attr.errorType] === 'string' ? (s.attributes[Attr.errorType] as string) : null;
    const outputBad = s.kind === 'node' && s.attributes[Attr.outputOk] === false;
    if (s.status !== 'error' && !type && !outputBad) continue;
    const message = s.statusMessage ?? parseError(s) ?? '';
    if (type === 'custom_reward_failed') {
      const why = root && typeof root.attributes[Attr.rewardError] === 'string' ? (root.attributes[Attr.rewardError] as string) : message;
      issues.push({ kind: 'custom_reward_failed', agent: null, message: why || 'the custom reward failed' });
    } else if (outputBad) {
      const why = parseError(s) ?? message;
      issues.push({ kind: isTruncatedAnswer(s) ? 'truncated' : 'invalid_output', agent: agentOf(s), message: why || `${s.name} gave output that could not be used` });
    } else if (s.kind === 'tool') {
      issues.push({ kind: 'tool_error', agent: agentOf(s), message: message || `tool ${s.name} failed` });
    } else if (s.kind !== 'node') {
      // Node spans that errored repeat the error of the call inside them; the call says more.
      issues.push({ kind: classifyFailure(message, type), agent: agentOf(s), message: message || type || `${s.name} failed` });
    }
  }
  return issues;
}
