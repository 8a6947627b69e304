import { Attr, type SpanRecord } from './span';

/** One agent's turn in a rollout without graph steps: a run of its model and tool calls. */
export interface AgentTurn {
  agent: string;
  startTime: number;
  endTime: number;
  /** One of its calls ended in error. */
  error: boolean;
  llmCalls: number;
  /** Model calls that needed a retry. */
  retried: number;
}

/**
 * The turns of a rollout that has no node spans (a command agent's, or spans
 * received over OTLP without agent spans): each run of model and tool calls
 * by one agent, in start order, is one visit of that agent. The reward's
 * calls (the judge's, under a reward span) are not the graph's.
 */
export function agentTurns(spans: readonly SpanRecord[]): AgentTurn[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const underReward = (s: SpanRecord): boolean => {
    for (let p = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; p; p = p.parentSpanId ? byId.get(p.parentSpanId) : undefined) {
      if (p.kind === 'reward') return true;
    }
    return false;
  };
  const calls = spans
    .filter((s) => (s.kind === 'llm' || s.kind === 'tool') && typeof s.attributes[Attr.agentName] === 'string' && s.attributes[Attr.unmatchedCall] !== true && !underReward(s))
    .sort((a, b) => a.startTime - b.startTime);
  const turns: AgentTurn[] = [];
  let current: AgentTurn | null = null;
  for (const s of calls) {
    const agent = s.attributes[Attr.agentName] as string;
    if (agent === 'Judge') continue;
    if (!current || current.agent !== agent) {
      current = { agent, startTime: s.startTime, endTime: s.endTime, error: false, llmCalls: 0, retried: 0 };
      turns.push(current);
    }
    current.endTime = Math.max(current.endTime, s.endTime);
    if (s.status === 'error') current.error = true;
    if (s.kind === 'llm') {
      current.llmCalls++;
      const r = s.attributes[Attr.retries];
      if (typeof r === 'number' && r > 0) current.retried++;
    }
  }
  return turns;
}

/** Whether the rollout's spans have graph steps (node spans); without them its agents' turns stand for the steps. */
export function hasGraphSteps(spans: readonly SpanRecord[]): boolean {
  return spans.some(isGraphStep);
}

/** A node span that is a step of the graph: not a command agent's framework step that stands for no agent of the lab. */
export function isGraphStep(s: SpanRecord): boolean {
  return s.kind === 'node' && s.attributes[Attr.frameworkStep] !== true;
}
