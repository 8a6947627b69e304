import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { DEFAULT_MAX_TOKENS, DEFAULT_TOP_LOGPROBS } from '../config/schema';
import { onAbort } from '../onAbort';
import { FormatFallback, type StructuredOutputUse } from './formatFallback';
import { BROKEN_RESPONSE_BODY, LlmAbortError, LlmCallError } from './llmErrors';
import { modeOf } from './responseFormat';
import { DEFAULT_BACKOFF, isRetryableStatus, retryAfterMs, retryDelayMs, type BackoffOptions } from './retryPolicy';
import { tellRetry, type RetryNotice } from './retryNotices';
import type { ResolvedModel } from './routing';

export interface ChatResult {
  completion: OpenAI.Chat.ChatCompletion;
  /** Wall time of the whole call, retries and waits included. */
  latencyMs: number;
  retries: number;
  /** Why each retry was made, in order ("HTTP 429", "broken response body (…)"). */
  retryReasons: string[];
  /** The request body as last sent, format fallback applied. */
  sent: ChatCompletionCreateParamsNonStreaming;
  /** null when the request had no response_format. */
  structuredOutput: StructuredOutputUse | null;
}

export interface ChatCallOptions {
  signal?: AbortSignal;
  /** Replaces the default backoff (tests use short delays). */
  backoff?: Partial<BackoffOptions>;
  /** The agent calling; told to the simulated endpoint (never to a real server) so it can answer per agent. */
  agent?: string;
}

/** Header naming the calling agent, sent to the simulated endpoint only. */
export const AGENT_HEADER = 'x-rollout-lab-agent';

export type ChatRequest = Omit<ChatCompletionCreateParamsNonStreaming, 'model'>;

const clients = new Map<string, OpenAI>();

/** One client per endpoint and key, so connections are pooled across agents and rollouts. */
function clientFor(model: ResolvedModel): OpenAI {
  const key = `${model.baseUrl}\u0000${model.apiKey}`;
  let client = clients.get(key);
  if (!client) {
    // Retries and timeouts are ours: they are counted, traced and honour Retry-After with a cap.
    // organization/project null: never forward OPENAI_ORG_ID/OPENAI_PROJECT_ID from the environment to other providers.
    client = new OpenAI({
      baseURL: model.baseUrl,
      apiKey: model.apiKey,
      organization: null,
      project: null,
      maxRetries: 0,
      timeout: 2 ** 31 - 1,
    });
    clients.set(key, client);
  }
  return client;
}

const TOKEN_IDS_PARAM = 'return_token_ids';
/** Endpoints that refused return_token_ids with HTTP 400: later calls leave it out. */
const refusesTokenIds = new Set<string>();

/** The least a body must have to be used as a chat completion; servers behind odd proxies send less. */
const CompletionShape = z.looseObject({
  id: z.string(),
  choices: z.array(z.looseObject({ message: z.looseObject({ role: z.string() }) })).min(1),
});

type Attempt =
  | { ok: true; completion: OpenAI.Chat.ChatCompletion }
  | { ok: false; retryable: boolean; status?: number; headers?: Headers; reason: string; kind?: RetryNotice['kind']; cause: unknown };

/**
 * One chat completion through the routed endpoint, with retries on transient
 * failures (429, 5xx, timeouts, dropped connections), a per-attempt timeout
 * and cancellation.
 */
export async function chatCompletion(model: ResolvedModel, request: ChatRequest, opts: ChatCallOptions = {}): Promise<ChatResult> {
  const backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
  const logprobs = request.logprobs ?? model.logprobs;
  let body: ChatCompletionCreateParamsNonStreaming = {
    ...request,
    model: model.model,
    ...(request.temperature === undefined && model.temperature !== undefined ? { temperature: model.temperature } : {}),
    // Always bounded: a model that loops otherwise generates up to the server's context limit.
    ...(request.max_tokens === undefined && request.max_completion_tokens === undefined ? { max_tokens: model.maxTokens ?? DEFAULT_MAX_TOKENS } : {}),
    ...(logprobs ? { logprobs: true } : {}),
    // Left out, llama.cpp sends 20 alternatives per token (and for 0 it sends no logprobs at all).
    ...(logprobs && request.top_logprobs === undefined ? { top_logprobs: model.topLogprobs ?? DEFAULT_TOP_LOGPROBS } : {}),
    // Not an OpenAI parameter: servers that know it (vLLM, python-trainer) add the sampled token ids to the choice.
    ...(model.tokenIds && !refusesTokenIds.has(model.baseUrl) ? ({ [TOKEN_IDS_PARAM]: true } as object) : {}),
  };
  const formats = new FormatFallback(`${model.baseUrl}\u0000${model.model}`, body);
  body = formats.body;
  const headers = model.simulated && opts.agent && /^[\x20-\x7e]+$/.test(opts.agent) ? { [AGENT_HEADER]: opts.agent } : undefined;
  const started = performance.now();
  const client = clientFor(model);
  let retries = 0;
  const retryReasons: string[] = [];
  for (;;) {
    throwIfAborted(opts.signal, model, retries);
    let attempt = await attemptOnce(client, body, model, opts.signal, headers);
    // Servers differ in the formats they take (LM Studio: no json_object; older llama.cpp: no json_schema). A 400 with a
    // format is asked again with a weaker one; a 400 for another reason fails again without it and is reported then.
    while (!attempt.ok && attempt.status === 400 && body.response_format) {
      const rejected = modeOf(body.response_format);
      body = formats.weaken(`the server rejected response_format ${rejected} (${serverMessage(attempt.cause)})`);
      attempt = await attemptOnce(client, body, model, opts.signal, headers);
      if (attempt.ok) formats.remember();
    }
    // OpenAI refuses parameters it does not know: ask again without return_token_ids (ids then come from logprobs, where a server sends them).
    if (!attempt.ok && attempt.status === 400 && TOKEN_IDS_PARAM in body && serverMessage(attempt.cause).includes(TOKEN_IDS_PARAM)) {
      const { [TOKEN_IDS_PARAM]: _dropped, ...rest } = body as ChatCompletionCreateParamsNonStreaming & { [TOKEN_IDS_PARAM]?: boolean };
      body = rest;
      attempt = await attemptOnce(client, body, model, opts.signal, headers);
      if (attempt.ok) refusesTokenIds.add(model.baseUrl);
    }
    if (attempt.ok) {
      return { completion: attempt.completion, latencyMs: performance.now() - started, retries, retryReasons, sent: body, structuredOutput: formats.use() };
    }
    throwIfAborted(opts.signal, model, retries);
    if (!attempt.retryable || retries >= model.maxRetries) throw failure(model, attempt, retries, retryReasons);
    const wait = retryDelayMs(retries, retryAfterMs(attempt.headers), backoff);
    retryReasons.push(attempt.reason);
    tellRetry(retryNotice(model, attempt, retries + 1, wait, opts.agent));
    try {
      await sleep(wait, undefined, { signal: opts.signal });
    } catch {
      throwIfAborted(opts.signal, model, retries);
    }
    retries++;
  }
}

async function attemptOnce(
  client: OpenAI,
  body: ChatCompletionCreateParamsNonStreaming,
  model: ResolvedModel,
  signal: AbortSignal | undefined,
  headers: Record<string, string> | undefined,
): Promise<Attempt> {
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), model.timeoutMs);
  // The caller's signal may live for a whole run: AbortSignal.any would leave an entry on it per attempt, this listener goes after the attempt.
  const unfollow = onAbort(signal, () => timeout.abort());
  try {
    const data: unknown = await client.chat.completions.create(body, { signal: timeout.signal, maxRetries: 0, ...(headers ? { headers } : {}) });
    const shape = CompletionShape.safeParse(data);
    if (!shape.success) {
      const preview = typeof data === 'string' ? data.slice(0, 80) : JSON.stringify(data)?.slice(0, 80);
      return { ok: false, retryable: false, reason: `the response is not a chat completion (${preview ?? 'empty body'})`, cause: data };
    }
    return { ok: true, completion: data as OpenAI.Chat.ChatCompletion };
  } catch (err) {
    if (timeout.signal.aborted && !signal?.aborted) {
      return { ok: false, retryable: true, reason: `timed out after ${model.timeoutMs} ms`, kind: 'timeout', cause: err };
    }
    if (err instanceof OpenAI.APIUserAbortError) return { ok: false, retryable: false, reason: 'aborted', cause: err };
    if (err instanceof OpenAI.APIConnectionError) {
      const cause = connectionCause(err);
      // A served trained model whose server is gone: retrying cannot help, the fix is to serve it again or roll back.
      const gone = cause === 'ECONNREFUSED' && model.served !== undefined;
      return { ok: false, retryable: !gone, reason: `connection failed (${cause})`, cause: err };
    }
    if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
      return {
        ok: false,
        retryable: isRetryableStatus(err.status),
        status: err.status,
        headers: err.headers,
        reason: `HTTP ${err.status}`,
        cause: err,
      };
    }
    // A 200 whose body was cut off lands here: a SyntaxError from the body parser when it ended early (or is not
    // JSON at all), undici's "terminated" when the socket dropped before the announced length. Like a reset, the
    // next attempt may well get the whole answer.
    if (isBrokenBody(err)) {
      return { ok: false, retryable: true, reason: `${BROKEN_RESPONSE_BODY}: the 200 answer was cut off or is not JSON (${bodyError(err)})`, kind: 'broken_body', cause: err };
    }
    const msg = err instanceof Error ? err.message : String(err);
    return { ok: false, retryable: false, reason: `unreadable response (${msg})`, cause: err };
  } finally {
    clearTimeout(timer);
    unfollow();
  }
}

function throwIfAborted(signal: AbortSignal | undefined, model: ResolvedModel, retries: number): void {
  if (signal?.aborted) throw new LlmAbortError(`call to model '${model.logical}' was cancelled`, retries);
}

function retryNotice(model: ResolvedModel, attempt: Extract<Attempt, { ok: false }>, retry: number, waitMs: number, agent: string | undefined): RetryNotice {
  const who = agent ?? `model '${model.logical}'`;
  const kind = attempt.kind ?? 'other';
  const of = `retrying ${retry}/${model.maxRetries}`;
  const message =
    kind === 'timeout'
      ? `${who}: no answer from ${model.baseUrl} within ${seconds(model.timeoutMs)} (models.${model.logical}.timeoutMs); ${of}`
      : `${who}: ${attempt.reason} from ${model.baseUrl}; ${of} in ${seconds(waitMs)}`;
  return { agent: agent ?? null, logicalModel: model.logical, baseUrl: model.baseUrl, reason: attempt.reason, kind, retry, maxRetries: model.maxRetries, waitMs, message };
}

function seconds(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${Number((ms / 1000).toPrecision(2))} s`;
}

function isBrokenBody(err: unknown): err is Error {
  if (err instanceof SyntaxError) return true;
  const code = (err as { cause?: { code?: unknown } }).cause?.code;
  return err instanceof TypeError && (err.message === 'terminated' || (typeof code === 'string' && code.startsWith('UND_ERR')));
}

/** The body parser's message, with the socket's reason when the connection dropped mid-body ("terminated: other side closed"). */
function bodyError(err: Error): string {
  const cause = (err as { cause?: { message?: string } }).cause;
  return (cause?.message ? `${err.message}: ${cause.message}` : err.message).slice(0, 160);
}

function failure(model: ResolvedModel, attempt: Extract<Attempt, { ok: false }>, retries: number, retryReasons: readonly string[] = []): LlmCallError {
  const where = `model '${model.logical}' at ${model.baseUrl}`;
  const after = retries ? ` after ${retries} ${retries === 1 ? 'retry' : 'retries'}` : '';
  let hint: string;
  if (attempt.status === 401 || attempt.status === 403) hint = `check the API key (models.${model.logical}.apiKeyEnv)`;
  else if (attempt.status === 404) hint = `check models.${model.logical}.baseUrl and that the server serves model '${model.model}'`;
  else if (attempt.status === 400 || attempt.status === 422) hint = `the server rejected the request: ${serverMessage(attempt.cause)}`;
  else if (attempt.kind === 'broken_body') hint = `the server or a proxy in between dropped the answer mid-body: check the server log or raise models.${model.logical}.maxRetries`;
  else if (attempt.retryable) hint = `check the server log or raise models.${model.logical}.maxRetries`;
  else hint = 'check that the endpoint speaks the OpenAI chat completions protocol';
  if (model.served && attempt.reason === 'connection failed (ECONNREFUSED)') {
    const { version, job } = model.served;
    hint = `nothing serves version ${version} of model '${model.logical}' there any more — serve it again with \`rollout-lab jobs serve ${job ?? version}\`, or go back to the version before it with \`rollout-lab pipeline rollback ${model.logical}\``;
  }
  if (attempt.reason.startsWith('timed out')) {
    const setting = model.maxTokensSetting ?? `models.${model.logical}.maxTokens`;
    hint = `the model may be generating up to max_tokens (${model.maxTokens ?? DEFAULT_MAX_TOKENS}) tokens: lower ${setting}, check the server, or raise models.${model.logical}.timeoutMs`;
  }
  return new LlmCallError(`${where}: ${attempt.reason}${after} — ${hint}`, attempt.status, retries, model.logical, model.baseUrl, attempt.cause, retryReasons);
}

/** The socket error's code (ECONNREFUSED) where there is one: fetch wraps it in "fetch failed". */
function connectionCause(err: Error): string {
  const cause = (err as { cause?: { code?: string; message?: string; cause?: { code?: string } } }).cause;
  return cause?.code ?? cause?.cause?.code ?? cause?.message ?? err.message;
}

function serverMessage(err: unknown): string {
  return err instanceof Error ? err.message.slice(0, 200) : 'no details';
}
