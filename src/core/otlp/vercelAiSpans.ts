import type { ChatMessageRecord } from '../trace/messages';
import { Attr, type Attributes, type SpanKind } from '../trace/span';
import type { OtlpAttrs } from './otlpModel';
import { asText, num, parsedJson, str } from './otlpValues';

/**
 * The Vercel AI SDK's telemetry (`experimental_telemetry` of `generateText`,
 * `streamText`, `generateObject`, `streamObject`) in the lab's span model.
 * Every span it writes names its operation in `ai.operationId`:
 * - `ai.generateText` (and the other calls) wraps the whole call, its steps
 *   and tools: with a `functionId` it is that agent's turn (an agent span),
 *   never a model call of its own, so its summed usage is not counted again;
 * - `ai.generateText.doGenerate` / `ai.streamText.doStream` (and the object
 *   calls') is one model call: `ai.prompt.messages` (the provider-level prompt,
 *   tool results included), `ai.response.text` / `.object` / `.toolCalls`;
 * - `ai.toolCall` is one tool execution (`ai.toolCall.name`, `.id`, `.args`,
 *   `.result`).
 * Older releases of the SDK wrote `args`/`result` where newer ones write
 * `input`/`output`, and `ai.usage.promptTokens`/`completionTokens`: both are read.
 */

/** The resource attribute copied onto an AI SDK span that names no agent: the lab credits it when it names one of its agents. */
export const SERVICE_NAME_ATTR = 'service.name';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const WRAPPERS = new Set(['ai.generateText', 'ai.streamText', 'ai.generateObject', 'ai.streamObject']);
const MODEL_CALL = /^ai\.(generateText|streamText|generateObject|streamObject)\.(doGenerate|doStream)$/;
const TOOL_CALL = 'ai.toolCall';

/** The SDK's unified finish reasons, in the words OpenAI-compatible servers (and the lab's own spans) use. */
const FINISH_REASONS: Record<string, string> = { 'tool-calls': 'tool_calls', 'content-filter': 'content_filter' };

/** The span's AI SDK operation (`ai.generateText.doGenerate`…), or undefined when the SDK did not write it. */
export function vercelAiOperation(a: OtlpAttrs): string | undefined {
  const op = a.get('ai.operationId');
  return typeof op === 'string' && op.startsWith('ai.') ? op : undefined;
}

/** The lab's kind for an AI SDK span: its model calls and tool calls; everything else (the wrappers, embeddings) is a step. */
export function vercelAiKind(operation: string): SpanKind {
  if (MODEL_CALL.test(operation)) return 'llm';
  if (operation === TOOL_CALL) return 'tool';
  return 'node';
}

/** Text of a prompt part list (`[{type:'text', text}]`), non-text parts kept as JSON. */
function partsText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return asText(content);
  return content.map((p) => (isObj(p) && p.type === 'text' ? asText(p.text) : JSON.stringify(p))).join('');
}

/** A tool result's output: `{type:'json'|'text'|'error-text'|'error-json'|'content'|'execution-denied', value}` (SDK 5+), or the raw result (older). */
function toolOutputText(part: Json): string {
  const out = part.output ?? part.result;
  if (!isObj(out) || typeof out.type !== 'string') return asText(out);
  if (out.type === 'content' && Array.isArray(out.value)) return partsText(out.value);
  if (out.type === 'execution-denied') return asText(out.reason ?? 'execution denied');
  return asText(out.value);
}

const callArguments = (part: Json): string => asText(part.input ?? part.args ?? {});

/** `ai.prompt.messages` (the provider-level prompt) as chat messages: one tool message per tool result, as on the wire. */
export function vercelPromptMessages(v: unknown): ChatMessageRecord[] | null {
  if (!Array.isArray(v)) return null;
  const out: ChatMessageRecord[] = [];
  for (const m of v) {
    if (!isObj(m) || typeof m.role !== 'string') continue;
    if (m.role === 'tool') {
      for (const part of Array.isArray(m.content) ? m.content : []) {
        if (!isObj(part) || part.type !== 'tool-result') continue;
        const rec: ChatMessageRecord = { role: 'tool', content: toolOutputText(part), tool_call_id: asText(part.toolCallId) };
        if (typeof part.toolName === 'string') rec.name = part.toolName;
        out.push(rec);
      }
      continue;
    }
    const parts = Array.isArray(m.content) ? m.content : null;
    const calls = (parts ?? []).filter((p): p is Json => isObj(p) && p.type === 'tool-call');
    const rest = parts ? parts.filter((p) => !(isObj(p) && (p.type === 'tool-call' || p.type === 'reasoning'))) : m.content;
    const rec: ChatMessageRecord = { role: m.role, content: partsText(rest) };
    if (calls.length) rec.tool_calls = calls.map((c) => ({ id: asText(c.toolCallId), name: asText(c.toolName), arguments: callArguments(c) }));
    out.push(rec);
  }
  return out;
}

/** The answer of a model call: `ai.response.text` (or `.object`) and `ai.response.toolCalls`. */
export function vercelResponseMessage(a: OtlpAttrs): ChatMessageRecord | null {
  const text = a.get('ai.response.text') ?? a.get('ai.response.object');
  const raw = parsedJson(a.get('ai.response.toolCalls'));
  const calls = Array.isArray(raw) ? raw.filter(isObj) : [];
  if (text === undefined && !calls.length) return null;
  const rec: ChatMessageRecord = { role: 'assistant', content: text === undefined || text === null ? '' : asText(text) };
  if (calls.length) rec.tool_calls = calls.map((c) => ({ id: asText(c.toolCallId), name: asText(c.toolName), arguments: callArguments(c) }));
  return rec;
}

/**
 * Fills the lab's attributes of one AI SDK span (`attributes` already holds
 * its own, as the normaliser copied them). Returns whether it stands for an
 * agent (a wrapper with a `functionId`), whose name its descendants inherit.
 */
export function fillVercelAiSpan(a: OtlpAttrs, operation: string, attributes: Attributes, resource: OtlpAttrs | undefined): boolean {
  const set = (key: string, v: string | number | undefined): void => {
    if (v !== undefined) attributes[key] = v;
  };
  const agent = str(a, Attr.agentName, 'ai.telemetry.functionId');
  if (agent) attributes[Attr.agentName] = agent;
  else set(SERVICE_NAME_ATTR, resource ? str(resource, SERVICE_NAME_ATTR) : undefined);

  const kind = vercelAiKind(operation);
  if (kind === 'llm') {
    attributes[Attr.operationName] = 'chat';
    set(Attr.providerName, str(a, Attr.providerName, 'gen_ai.system', 'ai.model.provider'));
    set(Attr.requestModel, str(a, Attr.requestModel, 'ai.model.id'));
    set(Attr.responseModel, str(a, Attr.responseModel, 'ai.response.model'));
    // The provider's response id: what the recording gateway's record of the same call carries, so the two are one call.
    set(Attr.responseId, str(a, Attr.responseId, 'ai.response.id'));
    set(Attr.inputTokens, num(a, Attr.inputTokens, 'ai.usage.inputTokens', 'ai.usage.promptTokens'));
    set(Attr.outputTokens, num(a, Attr.outputTokens, 'ai.usage.outputTokens', 'ai.usage.completionTokens'));
    const input = vercelPromptMessages(parsedJson(a.get('ai.prompt.messages')));
    if (input) attributes[Attr.inputMessages] = JSON.stringify(input);
    const output = vercelResponseMessage(a);
    if (output) attributes[Attr.outputMessages] = JSON.stringify([output]);
    const tools = a.get('ai.prompt.tools');
    if (Array.isArray(tools) && !a.has('gen_ai.request.tools')) attributes['gen_ai.request.tools'] = JSON.stringify(tools.map((t) => parsedJson(t)));
    const reason = str(a, 'ai.response.finishReason') ?? (Array.isArray(a.get(Attr.finishReasons)) ? undefined : str(a, Attr.finishReasons));
    const reasons = reason ? [reason] : ((a.get(Attr.finishReasons) as unknown[] | undefined) ?? []).filter((r): r is string => typeof r === 'string');
    if (reasons.length) attributes[Attr.finishReasons] = reasons.map((r) => FINISH_REASONS[r] ?? r);
    if (reasons.includes('length')) attributes[Attr.truncated] = true;
    return false;
  }
  if (kind === 'tool') {
    attributes[Attr.operationName] = 'execute_tool';
    set(Attr.toolName, str(a, Attr.toolName, 'ai.toolCall.name'));
    set(Attr.toolCallId, str(a, Attr.toolCallId, 'ai.toolCall.id'));
    const args = a.get('ai.toolCall.args') ?? a.get('ai.toolCall.input');
    if (args !== undefined && !a.has(Attr.toolArguments)) attributes[Attr.toolArguments] = asText(args);
    const result = a.get('ai.toolCall.result') ?? a.get('ai.toolCall.output');
    if (result !== undefined && !a.has(Attr.toolResult)) attributes[Attr.toolResult] = asText(result);
    return false;
  }
  if (WRAPPERS.has(operation) && agent) {
    attributes[Attr.operationName] = 'invoke_agent';
    attributes[Attr.nodeName] = agent;
    return true;
  }
  return false;
}
