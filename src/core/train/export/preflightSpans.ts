import { Attr, type SpanRecord } from '../../trace/span';

/* What the checks read from a rollout's spans: the chosen agents' model calls and the decision agents' choices. */

/** Characters per token of the prompt-length estimate (a tokenizer would be exact). */
export const CHARS_PER_TOKEN = 4;

/** One model call of a chosen agent, as the checks need it. */
export interface LlmCall {
  agent: string;
  logicalModel: string | null;
  promptTokens: number;
  hasLogprobs: boolean;
  hasTokenIds: boolean;
}

/** The call, when the span is a successful model call of one of the agents. */
export function llmCallOf(s: SpanRecord, agents: string[]): LlmCall | null {
  if (s.kind !== 'llm' || s.status === 'error') return null;
  const agent = s.attributes[Attr.agentName];
  if (typeof agent !== 'string' || !agents.includes(agent)) return null;
  const lp = s.attributes[Attr.logprobs];
  const ids = s.attributes[Attr.tokenIds];
  const logical = s.attributes[Attr.logicalModel];
  return {
    agent,
    logicalModel: typeof logical === 'string' ? logical : null,
    promptTokens: Math.ceil(promptChars(s.attributes[Attr.inputMessages]) / CHARS_PER_TOKEN),
    hasLogprobs: Array.isArray(lp) && lp.length > 0,
    hasTokenIds: Array.isArray(ids) && ids.length > 0,
  };
}

/** Characters of the text a model call was sent: message contents and earlier tool calls. */
function promptChars(raw: unknown): number {
  if (typeof raw !== 'string') return 0;
  let messages: unknown;
  try {
    messages = JSON.parse(raw);
  } catch {
    return raw.length;
  }
  if (!Array.isArray(messages)) return raw.length;
  let n = 0;
  for (const m of messages as Array<{ content?: unknown; tool_calls?: unknown }>) {
    n += typeof m?.content === 'string' ? m.content.length : m?.content === undefined ? 0 : JSON.stringify(m.content).length;
    if (m?.tool_calls !== undefined) n += JSON.stringify(m.tool_calls).length;
  }
  return n;
}

/**
 * The decisions a rollout's spans record for the decision agents: each node
 * span of the agent, with the hypotheses proposed before it (the candidates)
 * and the index it chose.
 */
export function supervisorDecisions(spans: SpanRecord[], agents: string[]): Array<{ candidates: number; chosen: number | null }> {
  const out: Array<{ candidates: number; chosen: number | null }> = [];
  let candidates = 0;
  for (const s of [...spans].sort((a, b) => a.endTime - b.endTime)) {
    if (s.kind !== 'node') continue;
    const agent = s.attributes[Attr.agentName];
    const value = parseOutput(s.attributes[Attr.output]);
    if (typeof agent === 'string' && agents.includes(agent) && s.attributes[Attr.nodeName] === agent) {
      const idx = value?.selected_hypothesis_index;
      out.push({ candidates, chosen: typeof idx === 'number' && Number.isInteger(idx) && idx >= 0 ? idx : null });
    } else if (typeof value?.hypothesis === 'string') {
      candidates++;
    }
  }
  return out;
}

function parseOutput(raw: unknown): Record<string, unknown> | null {
  if (typeof raw !== 'string') return null;
  try {
    const v: unknown = JSON.parse(raw);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
