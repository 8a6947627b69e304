import { createHash } from 'node:crypto';
import { Attr, type SpanRecord } from '../trace/span';
import type { OtlpSpan } from './otlpModel';
import { num, str } from './otlpValues';

/** The GenAI semantic conventions' event for a score given to what a span did. */
export const EVALUATION_EVENT = 'gen_ai.evaluation.result';
/** On a reward span made from an agent's evaluation event: where the reward came from. */
export const REWARD_SOURCE_AGENT = 'agent';

/**
 * The intermediate rewards an agent sent from inside a rollout the lab runs
 * (a command agent: `rollout_lab_agent.emit_reward`, or any OpenTelemetry
 * code adding a `gen_ai.evaluation.result` event to its current span): one
 * `reward` span per event, under the span that carried it, at the event's
 * time, named after the evaluation. They count as AIR rewards do (a reward
 * under a tool span goes to the call that asked for the tool). The agent is
 * the event's `gen_ai.agent.name`, else the carrier's (inherited on ingest).
 * The span id is derived from the carrier's, so a request sent twice gives
 * the same span.
 */
export function agentRewardSpans(span: OtlpSpan, carrier: SpanRecord): SpanRecord[] {
  const out: SpanRecord[] = [];
  span.events.forEach((e, i) => {
    if (e.name !== EVALUATION_EVENT) return;
    const name = str(e.attributes, 'gen_ai.evaluation.name');
    const value = num(e.attributes, 'gen_ai.evaluation.score.value');
    if (name === undefined || value === undefined) return;
    const agent = str(e.attributes, Attr.agentName) ?? carrier.attributes[Attr.agentName];
    const explanation = str(e.attributes, 'gen_ai.evaluation.explanation');
    const time = Math.min(Math.max(e.timeMs, carrier.startTime), carrier.endTime);
    out.push({
      traceId: carrier.traceId,
      spanId: createHash('sha256').update(`${carrier.spanId}/${EVALUATION_EVENT}/${i}`).digest('hex').slice(0, 16),
      parentSpanId: carrier.spanId,
      name,
      kind: 'reward',
      startTime: time,
      endTime: time,
      status: 'ok',
      attributes: {
        [Attr.rewardName]: name,
        [Attr.rewardKind]: 'intermediate',
        [Attr.rewardValue]: value,
        'rollout_lab.reward.source': REWARD_SOURCE_AGENT,
        ...(typeof agent === 'string' ? { [Attr.agentName]: agent } : {}),
        ...(explanation ? { [Attr.rewardInfo]: explanation } : {}),
      },
    });
  });
  return out;
}
