import { Attr, type Attributes } from './span';
import type { ChatMessageRecord } from './messages';

export interface AgentVersions {
  /** Prompt version (content hash) of each agent, recorded on its spans. */
  promptVersion(agent: string): string | null;
  /** Logical model and model version each agent is routed to. */
  model(agent: string): { logical: string; version: string | null } | null;
}

/** What a span says about the agent it belongs to: its name, prompt version and routed model. */
export function agentAttributes(agent: string | undefined | null, versions?: AgentVersions): Attributes {
  if (!agent) return {};
  const a: Attributes = { [Attr.agentName]: agent };
  const pv = versions?.promptVersion(agent);
  if (pv) a[Attr.promptVersion] = pv;
  const m = versions?.model(agent);
  if (m) {
    a[Attr.logicalModel] = m.logical;
    if (m.version) a[Attr.modelVersion] = m.version;
  }
  return a;
}

/** The request side of a model call: parameters as sent (or about to be). */
export interface LlmRequest {
  model?: unknown;
  messages: ChatMessageRecord[];
  temperature?: unknown;
  max_tokens?: unknown;
  tools?: unknown;
  response_format?: unknown;
  simulated: boolean;
}

/**
 * The attributes an `llm` span starts with. One function for every way a call
 * is made (a graph's chat model through LangChain's callbacks, an outside
 * agent through the recording gateway), so their spans read alike.
 */
export function llmRequestAttributes(req: LlmRequest): Attributes {
  const attrs: Attributes = {
    [Attr.operationName]: 'chat',
    [Attr.providerName]: 'openai',
    [Attr.requestModel]: typeof req.model === 'string' ? req.model : null,
    [Attr.inputMessages]: JSON.stringify(req.messages),
  };
  if (typeof req.temperature === 'number') attrs[Attr.requestTemperature] = req.temperature;
  if (typeof req.max_tokens === 'number') attrs[Attr.requestMaxTokens] = req.max_tokens;
  if (Array.isArray(req.tools) && req.tools.length) attrs['gen_ai.request.tools'] = JSON.stringify(req.tools);
  // The mode asked for; the end of the call overwrites it with the mode the server took.
  const format = (req.response_format as { type?: unknown } | undefined)?.type;
  if (format === 'json_schema' || format === 'json_object') attrs[Attr.structuredOutput] = format;
  if (req.simulated) attrs[Attr.simulated] = true;
  return attrs;
}

/** The span name of a model call. */
export function llmSpanName(attrs: Attributes): string {
  return `chat ${attrs[Attr.requestModel] ?? ''}`.trim();
}

/**
 * The attributes a finished call adds: the answer, usage and what the client
 * read from the response (`meta`: RoutedResponseMetadata, read loosely since
 * LangChain hands it over untyped).
 */
export function llmResponseAttributes(
  meta: Record<string, unknown>,
  output: ChatMessageRecord,
  usage: { input: number | null; output: number | null },
): Attributes {
  const a: Attributes = {
    [Attr.outputMessages]: JSON.stringify([output]),
    [Attr.inputTokens]: usage.input,
    [Attr.outputTokens]: usage.output,
  };
  if (typeof meta.model_name === 'string') a[Attr.responseModel] = meta.model_name;
  if (typeof meta.finish_reason === 'string') a[Attr.finishReasons] = [meta.finish_reason];
  if (typeof meta.id === 'string') a[Attr.responseId] = meta.id;
  if (typeof meta.latencyMs === 'number') a[Attr.latencyMs] = meta.latencyMs;
  if (typeof meta.retries === 'number') a[Attr.retries] = meta.retries;
  if (Array.isArray(meta.retry_reasons) && meta.retry_reasons.length) a[Attr.retryReasons] = meta.retry_reasons.map(String);
  if (meta.simulated === true) a[Attr.simulated] = true;
  if (typeof meta.baseUrl === 'string') a[Attr.serverAddress] = meta.baseUrl;
  if (typeof meta.logicalModel === 'string') a[Attr.logicalModel] = meta.logicalModel;
  if (typeof meta.modelVersion === 'string') a[Attr.modelVersion] = meta.modelVersion;
  const logprobs = meta.logprobs as { content?: Array<{ token: string; logprob: number }> } | null | undefined;
  if (logprobs?.content?.length) {
    const lps = logprobs.content.map((t) => t.logprob);
    a[Attr.logprobs] = lps;
    a[Attr.logprobTokens] = logprobs.content.map((t) => t.token);
    a[Attr.logprobMean] = lps.reduce((s, x) => s + x, 0) / lps.length;
  }
  if (Array.isArray(meta.token_ids) && meta.token_ids.length) a[Attr.tokenIds] = meta.token_ids as number[];
  if (Array.isArray(meta.prompt_token_ids) && meta.prompt_token_ids.length) a[Attr.promptTokenIds] = meta.prompt_token_ids as number[];
  // Not an error of the call: whoever reads the answer decides whether a cut answer is usable.
  if (meta.finish_reason === 'length') a[Attr.truncated] = true;
  if (Array.isArray(meta.tool_call_original_ids)) a[Attr.toolCallOriginalIds] = meta.tool_call_original_ids as string[];
  if (typeof meta.prompt_estimated_tokens === 'number') a[Attr.promptEstimatedTokens] = meta.prompt_estimated_tokens;
  if (typeof meta.max_tokens_setting === 'string') a[Attr.maxTokensSetting] = meta.max_tokens_setting;
  if (meta.prompt_truncated === true) a[Attr.promptTruncated] = true;
  if (typeof meta.structured_output === 'string') a[Attr.structuredOutput] = meta.structured_output;
  if (typeof meta.structured_output_fallback === 'string') a[Attr.structuredOutputFallback] = meta.structured_output_fallback;
  return a;
}

/** The attributes a failed call adds: the HTTP status (or the error's name) and the retries made. */
export function llmErrorAttributes(err: Error): Attributes {
  const status = (err as { status?: number }).status;
  const a: Attributes = { [Attr.errorType]: status ? String(status) : err.name || 'Error' };
  const retries = (err as { retries?: unknown }).retries;
  if (typeof retries === 'number') a[Attr.retries] = retries;
  const reasons = (err as { retryReasons?: unknown }).retryReasons;
  if (Array.isArray(reasons) && reasons.length) a[Attr.retryReasons] = reasons.map(String);
  return a;
}
