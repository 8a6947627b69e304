import type { AirRule } from '../config/schema';
import { Attr, type SpanRecord } from '../trace/span';

/** One firing of an AIR rule on one span: an intermediate reward. */
export interface AirReward {
  rule: string;
  when: AirRule['when'];
  spanId: string;
  agent: string | null;
  tool: string | null;
  reward: number;
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function eventOf(span: SpanRecord): AirRule['when'] | null {
  if (span.kind === 'tool') return span.status === 'error' ? 'tool.error' : 'tool.ok';
  if (span.kind === 'node') {
    const ok = span.attributes['rollout_lab.output.ok'];
    if (ok === true) return 'output.valid';
    if (ok === false) return 'output.invalid';
  }
  return null;
}

/**
 * Applies AIR (automatic intermediate reward) rules to a rollout's spans:
 * each tool call and each parsed agent answer may earn a small positive or
 * negative reward, which the RL adapters later add to the credited final reward.
 */
export function applyAirRules(rules: readonly AirRule[], spans: readonly SpanRecord[]): AirReward[] {
  const out: AirReward[] = [];
  if (!rules.length) return out;
  for (const span of spans) {
    const event = eventOf(span);
    if (!event) continue;
    const agent = str(span.attributes[Attr.agentName]);
    const tool = str(span.attributes[Attr.toolName]);
    for (const rule of rules) {
      if (rule.when !== event) continue;
      if (rule.agents && (!agent || !rule.agents.includes(agent))) continue;
      if (rule.tools && (!tool || !rule.tools.includes(tool))) continue;
      out.push({ rule: rule.name, when: rule.when, spanId: span.spanId, agent, tool, reward: rule.reward });
    }
  }
  return out;
}

/** Sum of intermediate rewards per agent. */
export function airTotalsByAgent(rewards: readonly AirReward[]): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const r of rewards) {
    const key = r.agent ?? '(graph)';
    totals[key] = (totals[key] ?? 0) + r.reward;
  }
  return totals;
}
