import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ResearchLabStateType } from './researchLab/state';

/** What a finished graph run hands to scoring. */
export interface GraphOutcome {
  /** The text the judge scores: the final protocol (JSON text if an object), or null when there is none. */
  finalOutput: string | null;
  /** 'GO' | 'NO-GO' for the research lab; whatever label a user graph gives. */
  decision: string | null;
  turns: number;
  failures: Array<{ agent: string; error: string }>;
}

/** A final output as the judge reads it: text as is (null when blank), anything else as indented JSON. */
export function outputText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value.trim() ? value : null;
  return JSON.stringify(value, null, 2);
}

export function researchLabOutcome(
  state: Pick<ResearchLabStateType, 'finalProtocol' | 'finalDecision' | 'turns' | 'failures'>,
): GraphOutcome {
  return {
    finalOutput: outputText(state.finalProtocol),
    decision: state.finalDecision,
    turns: state.turns,
    failures: state.failures.map(({ agent, error }) => ({ agent, error })),
  };
}

function aiMessages(messages: unknown): BaseMessage[] {
  return Array.isArray(messages) ? messages.filter((m): m is BaseMessage => AIMessage.isInstance(m)) : [];
}

/** A failure's error as a graph or a program gave it: text as is, anything else as its JSON (never "[object Object]"). */
export function failureText(error: unknown): string {
  if (error === undefined || error === null) return '';
  if (typeof error === 'string') return error;
  if (error instanceof Error) return error.message;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

function failuresOf(value: unknown): GraphOutcome['failures'] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((f): f is { agent?: unknown; error?: unknown } => typeof f === 'object' && f !== null)
    .map((f) => ({ agent: String(f.agent ?? 'unknown'), error: failureText(f.error) }));
}

/**
 * Outcome of a user graph, read by convention: `final_output` or `output`,
 * else the last AI message's text; `decision` or `final_decision`; `turns`,
 * else the number of AI messages; `failures` when the state has them. A module
 * that keeps these elsewhere exports its own `outcome(state)`.
 */
export function genericOutcome(state: unknown): GraphOutcome {
  const s = (typeof state === 'object' && state !== null ? state : {}) as Record<string, unknown>;
  const ai = aiMessages(s.messages);
  const lastAi = ai[ai.length - 1];
  const output = s.final_output ?? s.output ?? (lastAi ? lastAi.text : null);
  const decision = s.decision ?? s.final_decision;
  return {
    finalOutput: outputText(output),
    decision: typeof decision === 'string' && decision ? decision : null,
    turns: typeof s.turns === 'number' ? s.turns : ai.length,
    failures: failuresOf(s.failures),
  };
}
