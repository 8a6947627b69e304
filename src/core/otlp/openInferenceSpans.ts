import { wireMessageRecord, type ChatMessageRecord } from '../trace/messages';
import { Attr, type Attributes, type SpanKind, type SpanRecord } from '../trace/span';
import type { OtlpSpan } from './otlpModel';
import { parsedJson } from './otlpValues';

/*
 * OpenInference (Arize's conventions, written by its LangChain.js, OpenAI
 * Agents and other instrumentations) beyond what the GenAI mapping reads:
 * the span kinds, the response id and tool messages its instrumentations keep
 * only inside `output.value`, and which of its CHAIN and AGENT spans are a
 * lab's agents.
 */

/** The lab's span kind for an `openinference.span.kind`: a retriever is a tool call (the agent asked for documents). */
export function openInferenceKind(oiKind: string): SpanKind {
  if (oiKind === 'LLM' || oiKind === 'EMBEDDING') return 'llm';
  if (oiKind === 'TOOL' || oiKind === 'RETRIEVER') return 'tool';
  return 'node';
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A LangChain message as its serialisers write it — `toJSON` (`{lc, type: 'constructor', id: [..., 'ToolMessage'], kwargs}`),
 * Python's `message_to_dict` (`{type: 'tool', data: {...}}`) — or a plain one: its fields.
 */
function messageFields(v: unknown): { type: string; fields: Record<string, unknown> } | null {
  if (!isObj(v)) return null;
  if (v.lc === 1 && Array.isArray(v.id) && isObj(v.kwargs)) return { type: String(v.id.at(-1) ?? ''), fields: v.kwargs };
  if (typeof v.type === 'string' && isObj(v.data) && Object.keys(v).length === 2) return { type: v.type, fields: v.data };
  return { type: typeof v.type === 'string' ? v.type : '', fields: v };
}

/**
 * The model's response id that OpenInference leaves inside `output.value`:
 * LangChain's generations (the AIMessage's id is the completion's), the
 * Agents SDK's raw chat completions (or Responses API response).
 */
function responseIdOf(output: unknown): string | undefined {
  if (isObj(output) && Array.isArray(output.generations)) {
    const first = (output.generations as unknown[]).flat()[0];
    const msg = isObj(first) ? messageFields(first.message) : null;
    // Python's langchain-openai keeps the completion's id in response_metadata and gives the message a run id of its own
    // ("lc_run--…", "run-…"); LangChain.js gives the message the completion's id.
    const meta = msg?.fields.response_metadata;
    const candidates = [isObj(meta) ? meta.id : undefined, msg?.fields.id];
    return candidates.find((id): id is string => typeof id === 'string' && id !== '' && !/^(lc_)?run-/.test(id));
  }
  const responses = Array.isArray(output) ? output : [output];
  const last = responses.at(-1);
  if (responses.length === 1 && isObj(last) && typeof last.id === 'string' && (last.object === 'chat.completion' || last.object === 'response')) return last.id;
  return undefined;
}

const LC_ROLES: Record<string, string> = { SystemMessage: 'system', HumanMessage: 'user', AIMessage: 'assistant', AIMessageChunk: 'assistant', ToolMessage: 'tool', system: 'system', human: 'user', ai: 'assistant', tool: 'tool' };

/** One message, LangChain-serialised or in OpenAI's wire format, as the lab records it; null for anything else. */
function messageRecordOf(v: unknown): ChatMessageRecord | null {
  const msg = messageFields(v);
  if (!msg) return null;
  const f = msg.fields;
  const role = typeof f.role === 'string' ? f.role : LC_ROLES[msg.type];
  if (!role) return null;
  // LangChain's own tool calls ({id, name, args}) in the wire shape.
  const lcCalls = Array.isArray(f.tool_calls) ? (f.tool_calls as Array<Record<string, unknown>>).filter((c) => isObj(c) && 'args' in c) : [];
  const toolCalls = lcCalls.length ? lcCalls.map((c) => ({ id: c.id, function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) } })) : f.tool_calls;
  return wireMessageRecord({ role, content: f.content, name: f.name, tool_calls: toolCalls, tool_call_id: f.tool_call_id });
}

function messageList(list: unknown): ChatMessageRecord[] | null {
  if (!Array.isArray(list) || !list.length) return null;
  const out = list.map(messageRecordOf);
  return out.every((m): m is ChatMessageRecord => m !== null) ? out : null;
}

/** The prompt inside `input.value`: LangChain's `{messages: [[...]]}`, or the Agents SDK's list of wire messages. */
function inputMessagesOf(input: unknown): ChatMessageRecord[] | null {
  if (isObj(input) && Array.isArray(input.messages)) return messageList((input.messages as unknown[]).flat());
  return messageList(input);
}

/** The answer inside `output.value`: LangChain's generations, or the raw chat completion(s) the Agents SDK keeps. */
function outputMessagesOf(output: unknown): ChatMessageRecord[] | null {
  if (isObj(output) && Array.isArray(output.generations)) {
    const first = (output.generations as unknown[]).flat()[0];
    return isObj(first) ? messageList([first.message]) : null;
  }
  const last = (Array.isArray(output) ? output : [output]).at(-1);
  const choices = isObj(last) && Array.isArray(last.choices) ? (last.choices as unknown[]) : null;
  const first = choices?.[0];
  return isObj(first) ? messageList([first.message]) : null;
}

/** A tool's result as LangChain's tool span records it (`{output: ToolMessage}` or the ToolMessage itself): call id, content, status. */
function toolMessageOf(output: unknown): { callId?: string; content?: string; error: boolean } | null {
  const inner = isObj(output) && 'output' in output ? output.output : output;
  const msg = messageFields(inner);
  if (!msg || !(msg.type === 'ToolMessage' || msg.type === 'tool') || typeof msg.fields.tool_call_id !== 'string') return null;
  const c = msg.fields.content;
  return { callId: msg.fields.tool_call_id, content: typeof c === 'string' ? c : c === undefined ? undefined : JSON.stringify(c), error: msg.fields.status === 'error' };
}

/**
 * The OpenInference part of normalising a span (called by normaliseSpan for
 * spans with `openinference.span.kind`): an llm span's response id, a tool
 * span's name, call id, result and error from its tool message. Returns
 * whether the span ended in error by its tool message.
 */
export function applyOpenInference(span: OtlpSpan, kind: SpanKind, attributes: Attributes): { toolError: boolean } {
  const output = parsedJson(span.attributes.get('output.value'));
  if (kind === 'llm') {
    if (attributes[Attr.responseId] === undefined) {
      const id = responseIdOf(output);
      if (id) attributes[Attr.responseId] = id;
    }
    // Without OpenInference's indexed messages the generic mapping took the raw text: its structure is read instead.
    const a = span.attributes;
    if (!a.has(Attr.inputMessages) && !a.has('llm.input_messages.0.message.role')) {
      const input = inputMessagesOf(parsedJson(a.get('input.value')));
      if (input) attributes[Attr.inputMessages] = JSON.stringify(input);
    }
    if (!a.has(Attr.outputMessages) && !a.has('llm.output_messages.0.message.role')) {
      const out = outputMessagesOf(output);
      if (out) attributes[Attr.outputMessages] = JSON.stringify(out);
    }
  }
  if (kind !== 'tool') return { toolError: false };
  attributes[Attr.toolName] ??= span.name;
  const message = toolMessageOf(output);
  if (!message) return { toolError: false };
  if (message.callId && attributes[Attr.toolCallId] === undefined) attributes[Attr.toolCallId] = message.callId;
  if (message.content !== undefined) attributes[Attr.toolResult] = message.content;
  return { toolError: message.error };
}

/** An agent span: OpenInference AGENT, or GenAI invoke_agent / create_agent (it names its agent). */
function isAgentSpan(s: SpanRecord): boolean {
  const op = s.attributes[Attr.operationName];
  return s.attributes['openinference.span.kind'] === 'AGENT' || op === 'invoke_agent' || op === 'create_agent';
}

/**
 * A framework's step as the lab's agents see it, for a rollout whose lab
 * agents are known: a CHAIN or AGENT span named after one of them (its span
 * name, or the agent it names) is that agent's visit, as an agent span; a
 * wrapper or step that stands for no agent of the lab (the Agents SDK's
 * "Agent workflow" and turn spans) is a framework step, no graph step, and
 * names no agent unless it is a lab agent's (a turn of Support stays Support's).
 */
export function labAgentStep(s: SpanRecord, labAgents: ReadonlySet<string>): void {
  const agentSpan = isAgentSpan(s);
  if (s.kind !== 'node' || !(agentSpan || s.attributes['openinference.span.kind'] === 'CHAIN')) return;
  const named = s.attributes[Attr.agentName];
  // An agent span names its agent; a CHAIN only by its own name (the SDK's turn spans name the agent they belong to).
  const agent = labAgents.has(s.name) ? s.name : typeof named === 'string' && labAgents.has(named) && agentSpan ? named : null;
  if (agent) {
    s.attributes[Attr.agentName] = agent;
    s.attributes[Attr.nodeName] = agent;
    s.attributes[Attr.operationName] = 'invoke_agent';
    return;
  }
  s.attributes[Attr.frameworkStep] = true;
  if (typeof named !== 'string' || labAgents.has(named)) return;
  // The framework's own name for it stays readable; the agent attributes go.
  s.attributes['rollout_lab.framework.agent'] = named;
  delete s.attributes[Attr.agentName];
  if (s.attributes[Attr.nodeName] === named) delete s.attributes[Attr.nodeName];
  if (s.attributes[Attr.operationName] === 'invoke_agent') delete s.attributes[Attr.operationName];
}
