import { agentTurns, hasGraphSteps } from '../trace/agentTurns';
import { Attr, type SpanRecord } from '../trace/span';
import type { AgentVersions } from '../trace/llmSpanAttributes';
import type { RolloutAgentRecord } from './types';

/**
 * Per-agent facts of one rollout, folded from its spans. A tool call counts for
 * the agent whose model call asked for it (the tracer names it on the tool span),
 * whichever node ran it.
 */
export function summariseAgents(spans: readonly SpanRecord[], versions?: AgentVersions): RolloutAgentRecord[] {
  const byAgent = new Map<string, RolloutAgentRecord>();
  const get = (agent: string): RolloutAgentRecord => {
    let rec = byAgent.get(agent);
    if (!rec) {
      const m = versions?.model(agent) ?? null;
      rec = {
        agent,
        promptVersion: versions?.promptVersion(agent) ?? null,
        model: m?.logical ?? null,
        modelVersion: m?.version ?? null,
        visits: 0,
        llmCalls: 0,
        toolCalls: 0,
        errors: 0,
        inputTokens: 0,
        outputTokens: 0,
        latencyMs: 0,
      };
      byAgent.set(agent, rec);
    }
    return rec;
  };
  for (const s of spans) {
    const agent = s.attributes[Attr.agentName];
    if (typeof agent !== 'string' || agent === 'Judge') continue;
    // A framework's record of a call that matched none of the gateway's may repeat one: it is not counted.
    if (s.attributes[Attr.unmatchedCall] === true) continue;
    const rec = get(agent);
    if (s.status === 'error') rec.errors++;
    if (s.kind === 'node') {
      // Tool nodes belong to their agent but are not visits of it, nor are the nodes inside its node (a subgraph's). An agent span received over OTLP ("invoke_agent X") names its node in the attribute.
      if (nodeName(s) === agent && s.attributes[Attr.innerNode] === undefined) {
        rec.visits++;
        rec.latencyMs += s.endTime - s.startTime;
      }
    } else if (s.kind === 'llm') {
      rec.llmCalls++;
      rec.inputTokens += Number(s.attributes[Attr.inputTokens] ?? 0) || 0;
      rec.outputTokens += Number(s.attributes[Attr.outputTokens] ?? 0) || 0;
    } else if (s.kind === 'tool') {
      rec.toolCalls++;
    }
  }
  // Without graph steps (a command agent), each turn of an agent is a visit of it.
  if (!hasGraphSteps(spans)) {
    for (const t of agentTurns(spans)) {
      const rec = get(t.agent);
      rec.visits++;
      rec.latencyMs += t.endTime - t.startTime;
    }
  }
  // A graph node that is no agent of the lab and called no model (a user graph's `execute` or router node) is a step, not an agent.
  const isAgent = (r: RolloutAgentRecord): boolean => r.llmCalls > 0 || r.toolCalls > 0 || !versions || versions.model(r.agent) !== null;
  return [...byAgent.values()].filter(isAgent).sort((a, b) => a.agent.localeCompare(b.agent));
}

/** The graph node a node span stands for: its recorded node name, else its span name. */
export function nodeName(s: SpanRecord): string {
  const n = s.attributes[Attr.nodeName];
  return typeof n === 'string' && n ? n : s.name;
}
