import type { RolloutRecord } from '../store/types';
import type { ChatMessageRecord } from '../trace/messages';
import { Attr, type AttributeValue, type SpanRecord } from '../trace/span';
import { openInferenceExportAttrs } from './openInferenceExport';
import type { OtlpAttrs, OtlpEvent, OtlpResourceSpans, OtlpSpan, OtlpValue } from './otlpModel';
import { rolloutRecordAttributes } from './rolloutRecordAttributes';
import { SPAN_KIND_ATTR } from './spanNormalise';
import { FINAL_REWARD_EVALUATION } from './traceIngest';

/** The instrumentation scope the lab's exported spans carry. */
export const EXPORT_SCOPE = { name: 'rollout-lab', version: '1' };
/** On an exported root span: the per-criterion scores as JSON, beside the gen_ai.evaluation.result events. */
export const CRITERIA_ATTR = 'rollout_lab.reward.criteria';

// OTLP SpanKind: model calls are client calls; everything else is internal work.
const OTLP_KIND = { llm: 3, tool: 1, node: 1, rollout: 1, reward: 1 } as const;

/**
 * ChatMessageRecord → a parts-based GenAI message (the current convention), which the receiver reads back into the
 * same record. An output message carries its finish reason, as the convention's schema requires of one (readers that
 * validate it, such as Phoenix, drop output messages without).
 */
function partsMessage(m: ChatMessageRecord, finishReason?: string): Record<string, unknown> {
  const parts: Array<Record<string, unknown>> = [];
  if (m.tool_call_id !== undefined) parts.push({ type: 'tool_call_response', id: m.tool_call_id, response: m.content });
  else if (m.content !== '' || !m.tool_calls?.length) parts.push({ type: 'text', content: m.content });
  for (const c of m.tool_calls ?? []) parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: c.arguments });
  return { role: m.role, ...(m.name ? { name: m.name } : {}), parts, ...(finishReason !== undefined ? { finish_reason: finishReason } : {}) };
}

/** The messages as parts; output messages with the span's finish reason for their choice (the only one for a single choice). */
function messagesAsParts(v: AttributeValue, finishReasons?: readonly string[]): AttributeValue {
  if (typeof v !== 'string') return v;
  try {
    const list = JSON.parse(v) as unknown;
    if (!Array.isArray(list) || !list.every((m) => typeof m === 'object' && m !== null && typeof (m as ChatMessageRecord).role === 'string' && typeof (m as ChatMessageRecord).content === 'string')) return v;
    return JSON.stringify((list as ChatMessageRecord[]).map((m, i) => partsMessage(m, finishReasons ? (finishReasons[i] ?? (finishReasons.length === 1 ? finishReasons[0] : undefined)) : undefined)));
  } catch {
    return v;
  }
}

function spanAttrs(s: SpanRecord): OtlpAttrs {
  const out: OtlpAttrs = new Map();
  const reasons = s.attributes[Attr.finishReasons];
  const finishReasons = Array.isArray(reasons) ? reasons.filter((r): r is string => typeof r === 'string') : typeof reasons === 'string' ? [reasons] : [];
  // A null value goes as an empty AnyValue (OTLP's null), so the attribute is still there when it comes back.
  for (const [k, v] of Object.entries(s.attributes)) {
    if (v === undefined) continue;
    out.set(k, (k === Attr.inputMessages ? messagesAsParts(v) : k === Attr.outputMessages ? messagesAsParts(v, finishReasons) : v) as OtlpValue);
  }
  for (const [k, v] of openInferenceExportAttrs(s.kind, (key) => s.attributes[key] ?? undefined)) if (!out.has(k)) out.set(k, v);
  out.set(SPAN_KIND_ATTR, s.kind);
  return out;
}

const evaluation = (name: string, score: number, at: number): OtlpEvent => ({
  name: 'gen_ai.evaluation.result',
  timeMs: at,
  attributes: new Map<string, OtlpValue>([
    ['gen_ai.evaluation.name', name],
    ['gen_ai.evaluation.score.value', score],
  ]),
});

/**
 * One rollout as one OTLP trace: its span tree with the lab's attributes
 * (messages as parts-based `gen_ai.input.messages`/`gen_ai.output.messages`),
 * its rewards as `gen_ai.evaluation.result` events on the root span (one per
 * criterion and one named "reward" for the final reward) and as attributes,
 * the rest of the rollout record (decision, custom reward breakdown, agents'
 * versions…) as `rollout_lab.*` attributes of the root, and the run, task and
 * sample as resource attributes.
 */
export function rolloutToOtlp(rollout: RolloutRecord, spans: readonly SpanRecord[]): OtlpResourceSpans {
  const resource: OtlpAttrs = new Map<string, OtlpValue>([
    ['service.name', 'rollout-lab'],
    [Attr.runId, rollout.runId],
    [Attr.taskId, rollout.taskId],
    [Attr.sample, rollout.sample],
  ]);
  if (rollout.split) resource.set(Attr.split, rollout.split);
  const at = rollout.endTime ?? rollout.startTime;
  const out: OtlpSpan[] = spans.map((s) => {
    const span: OtlpSpan = {
      traceId: rollout.id,
      spanId: s.spanId,
      parentSpanId: s.parentSpanId,
      name: s.name,
      kind: OTLP_KIND[s.kind] ?? 1,
      startMs: s.startTime,
      endMs: s.endTime,
      attributes: spanAttrs(s),
      events: [],
      links: [],
      status: { code: s.status === 'error' ? 2 : s.status === 'ok' ? 1 : 0, message: s.statusMessage ?? '' },
    };
    if (s.parentSpanId === null) {
      for (const [name, score] of Object.entries(rollout.criteria ?? {})) span.events.push(evaluation(name, score, at));
      if (rollout.finalReward !== null) {
        span.events.push(evaluation(FINAL_REWARD_EVALUATION, rollout.finalReward, at));
        span.attributes.set(Attr.rewardValue, rollout.finalReward);
      }
      if (rollout.criteria) span.attributes.set(CRITERIA_ATTR, JSON.stringify(rollout.criteria));
      if (rollout.failure) span.attributes.set(Attr.failure, rollout.failure);
      span.attributes.set(Attr.decision, rollout.decision);
      span.attributes.set(Attr.expectedDecision, rollout.expectedDecision);
      span.attributes.set(Attr.turn, rollout.turns);
      span.attributes.set(Attr.simulated, rollout.simulated);
      for (const [k, v] of rolloutRecordAttributes(rollout)) span.attributes.set(k, v);
    }
    return span;
  });
  return { resource, scopeSpans: [{ scope: EXPORT_SCOPE, spans: out }] };
}
