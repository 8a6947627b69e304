import type { ChatMessageRecord } from '../trace/messages';
import { Attr, SPAN_KINDS, type Attributes, type SpanKind, type SpanRecord } from '../trace/span';
import {
  eventMessages,
  messageList,
  olderIndexedMessages,
  openInferenceMessages,
  outputFinishReasons,
  systemInstructions,
} from './genAiMessages';
import { OI_SPAN_KIND, openInferenceExportAttrs } from './openInferenceExport';
import { applyOpenInference, openInferenceKind } from './openInferenceSpans';
import type { OtlpAttrs, OtlpEvent, OtlpSpan } from './otlpModel';
import { asText, num, parsedJson, str, toAttributeValue, toPlain } from './otlpValues';
import { fillVercelAiSpan, vercelAiKind, vercelAiOperation } from './vercelAiSpans';

/** On spans the lab exports: its own span kind, so a round trip keeps the tree as it was. */
export const SPAN_KIND_ATTR = 'rollout_lab.span.kind';
/** Events kept from an imported span (those the mapping did not consume), as JSON [{name, timeMs, attributes}]. */
export const EVENTS_ATTR = 'rollout_lab.otlp.events';
/** Links of an imported span, as JSON [{traceId, spanId, attributes}]. */
export const LINKS_ATTR = 'rollout_lab.otlp.links';

/** One `gen_ai.evaluation.result` (or an evaluation span's attributes): a named score. */
export interface Evaluation {
  name: string;
  score: number;
}

export interface NormalisedSpan {
  record: SpanRecord;
  evaluations: Evaluation[];
  /** True for spans that stand for an agent (invoke_agent, create_agent, OpenInference AGENT): their agent name is inherited by descendants. */
  isAgentSpan: boolean;
}

const LLM_OPERATIONS = new Set(['chat', 'text_completion', 'generate_content', 'embeddings']);
const AGENT_OPERATIONS = new Set(['invoke_agent', 'create_agent']);
const OI_OPERATION: Record<string, string> = { LLM: 'chat', EMBEDDING: 'embeddings', TOOL: 'execute_tool', AGENT: 'invoke_agent' };

function spanKind(a: OtlpAttrs, op: string | undefined, oiKind: string | undefined): SpanKind {
  const own = a.get(SPAN_KIND_ATTR);
  if (typeof own === 'string' && (SPAN_KINDS as readonly string[]).includes(own)) return own as SpanKind;
  if (op) {
    if (LLM_OPERATIONS.has(op)) return 'llm';
    if (op === 'execute_tool') return 'tool';
    if (AGENT_OPERATIONS.has(op)) return 'node';
  }
  if (oiKind) return openInferenceKind(oiKind);
  if (a.has(Attr.requestModel) || a.has('gen_ai.system') || a.has('gen_ai.prompt.0.role') || a.has('llm.model_name')) return 'llm';
  if (a.has(Attr.toolName)) return 'tool';
  return 'node';
}

function readEvaluation(a: OtlpAttrs, out: Evaluation[]): void {
  const name = str(a, 'gen_ai.evaluation.name');
  const score = num(a, 'gen_ai.evaluation.score.value');
  if (name !== undefined && score !== undefined) out.push({ name, score });
}

function evaluationsOf(span: OtlpSpan, used: Set<OtlpEvent>): Evaluation[] {
  const out: Evaluation[] = [];
  for (const e of span.events) {
    if (e.name !== 'gen_ai.evaluation.result') continue;
    readEvaluation(e.attributes, out);
    used.add(e);
  }
  if (span.attributes.has('gen_ai.evaluation.name')) readEvaluation(span.attributes, out);
  return out;
}

function setIf(attributes: Attributes, key: string, v: string | number | undefined): void {
  if (v !== undefined) attributes[key] = v;
}

/** The agent a span names itself, by the GenAI or OpenInference conventions (or the lab's own). */
function ownAgentName(a: OtlpAttrs, name: string, op: string | undefined, oiKind: string | undefined): string | undefined {
  const named = str(a, Attr.agentName, 'agent.name');
  if (named) return named;
  if (op && AGENT_OPERATIONS.has(op)) return name.replace(/^(invoke_agent|create_agent)\s+/, '') || undefined;
  if (oiKind === 'AGENT') return name || undefined;
  return undefined;
}

/**
 * One OTLP span as the lab's span: its kind (llm, tool, node) and the lab's
 * attribute names filled from GenAI (both generations) or OpenInference
 * attributes, messages as ChatMessageRecord JSON. Every original attribute is
 * kept; the lab's names win where both exist. `resource` is the span's
 * resource (its service name, for the Vercel AI SDK's spans).
 */
export function normaliseSpan(span: OtlpSpan, resource?: OtlpAttrs): NormalisedSpan {
  const a = span.attributes;
  const attributes: Attributes = {};
  // The lab's own span (its kind marker): the OpenInference attributes its export adds beside the GenAI ones are not kept.
  const own = a.get(SPAN_KIND_ATTR);
  const added = typeof own === 'string' && (SPAN_KINDS as readonly string[]).includes(own) ? openInferenceExportAttrs(own as SpanKind, (k) => a.get(k)).filter(([k, v]) => a.get(k) === v).map(([k]) => k) : [];
  // The lab's own kind marker is read, not kept (and not deleted afterwards: a delete slows every later use of the object).
  for (const [k, v] of a) if (k !== SPAN_KIND_ATTR && !added.includes(k)) attributes[k] = toAttributeValue(v);

  const oiKind = added.includes(OI_SPAN_KIND) ? undefined : str(a, OI_SPAN_KIND)?.toUpperCase();
  const op = str(a, Attr.operationName) ?? (oiKind ? OI_OPERATION[oiKind] : undefined);
  const aiOperation = a.has(SPAN_KIND_ATTR) ? undefined : vercelAiOperation(a);
  const kind = aiOperation ? vercelAiKind(aiOperation) : spanKind(a, op, oiKind);
  if (op) attributes[Attr.operationName] = op;

  setIf(attributes, Attr.providerName, str(a, Attr.providerName, 'gen_ai.system', 'llm.provider', 'llm.system'));
  setIf(attributes, Attr.requestModel, str(a, Attr.requestModel, 'llm.model_name'));
  setIf(attributes, Attr.responseModel, str(a, Attr.responseModel, 'llm.model_name'));
  setIf(attributes, Attr.inputTokens, num(a, Attr.inputTokens, 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt'));
  setIf(attributes, Attr.outputTokens, num(a, Attr.outputTokens, 'gen_ai.usage.completion_tokens', 'llm.token_count.completion'));

  const used = new Set<OtlpEvent>();
  const isAgentSpan = (op !== undefined && AGENT_OPERATIONS.has(op)) || oiKind === 'AGENT';
  const agent = ownAgentName(a, span.name, op, oiKind);
  if (agent) attributes[Attr.agentName] = agent;

  if (kind === 'llm') fillMessages(span, attributes, used);
  if (kind === 'tool') {
    setIf(attributes, Attr.toolName, str(a, Attr.toolName, 'tool.name', 'tool_call.function.name') ?? (oiKind === 'TOOL' ? span.name : undefined));
    setIf(attributes, Attr.toolCallId, str(a, Attr.toolCallId, 'tool_call.id'));
    const args = a.get(Attr.toolArguments) ?? a.get('tool_call.function.arguments') ?? a.get('input.value');
    if (args !== undefined) attributes[Attr.toolArguments] = asText(toPlain(args));
    const result = a.get(Attr.toolResult) ?? a.get('output.value');
    if (result !== undefined) attributes[Attr.toolResult] = asText(toPlain(result));
  }
  const oi = oiKind ? applyOpenInference(span, kind, attributes) : null;
  if (kind === 'node' && agent) attributes[Attr.nodeName] ??= agent;
  if (a.has('gen_ai.tool.definitions') && !a.has('gen_ai.request.tools')) attributes['gen_ai.request.tools'] = toAttributeValue(a.get('gen_ai.tool.definitions')!);
  const aiAgentSpan = aiOperation !== undefined && fillVercelAiSpan(a, aiOperation, attributes, resource);

  const evaluations = evaluationsOf(span, used);
  const kept = span.events.length ? span.events.filter((e) => !used.has(e)) : span.events;
  if (kept.length) attributes[EVENTS_ATTR] = JSON.stringify(kept.map((e) => ({ name: e.name, timeMs: e.timeMs, attributes: toPlain(e.attributes) })));
  if (span.links.length) attributes[LINKS_ATTR] = JSON.stringify(span.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: toPlain(l.attributes) })));

  const record: SpanRecord = {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind,
    startTime: span.startMs,
    endTime: span.endMs,
    status: span.status.code === 2 || oi?.toolError ? 'error' : span.status.code === 1 ? 'ok' : 'unset',
    attributes,
  };
  if (span.status.message) record.statusMessage = span.status.message;
  return { record, evaluations, isAgentSpan: isAgentSpan || aiAgentSpan };
}

const NO_EVENT_MESSAGES: ReturnType<typeof eventMessages> = { input: null, output: null, finishReasons: [], used: new Set() };

function fillMessages(span: OtlpSpan, attributes: Attributes, used: Set<OtlpEvent>): void {
  const a = span.attributes;
  // The older shapes are looked for only when the current one is absent: most spans carry one shape, and no events.
  const events = span.events.length ? eventMessages(span.events) : NO_EVENT_MESSAGES;
  for (const e of events.used) used.add(e);
  let olderOutput: ReturnType<typeof olderIndexedMessages> = null;

  let input: ChatMessageRecord[] | null = messageList(parsedJson(a.get(Attr.inputMessages)), 'user');
  if (!input) input = olderIndexedMessages(a, 'gen_ai.prompt', 'user')?.messages ?? openInferenceMessages(a, 'llm.input_messages', 'user') ?? events.input;
  const system = systemInstructions(parsedJson(a.get('gen_ai.system_instructions')));
  if (system) input = [system, ...(input ?? [])];
  if (!input && typeof a.get('input.value') === 'string') input = [{ role: 'user', content: a.get('input.value') as string }];

  const rawOutput = parsedJson(a.get(Attr.outputMessages));
  let output: ChatMessageRecord[] | null = messageList(rawOutput, 'assistant');
  if (!output) {
    olderOutput = olderIndexedMessages(a, 'gen_ai.completion', 'assistant');
    output = olderOutput?.messages ?? openInferenceMessages(a, 'llm.output_messages', 'assistant') ?? events.output;
  }
  if (!output && typeof a.get('output.value') === 'string') output = [{ role: 'assistant', content: a.get('output.value') as string }];

  if (input) attributes[Attr.inputMessages] = JSON.stringify(input);
  if (output) attributes[Attr.outputMessages] = JSON.stringify(output);
  if (!Array.isArray(attributes[Attr.finishReasons])) {
    const reasons = [...outputFinishReasons(rawOutput), ...(olderOutput?.finishReasons ?? []), ...events.finishReasons];
    const single = str(a, Attr.finishReasons);
    if (single) reasons.push(single);
    if (reasons.length) attributes[Attr.finishReasons] = reasons;
  }
  const reasons = attributes[Attr.finishReasons];
  if (Array.isArray(reasons) && (reasons as unknown[]).includes('length')) attributes[Attr.truncated] = true;
}
