import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { seededRandom } from '../../src/core/data/seededRandom';

/**
 * An OpenAI-compatible chat-completions server on 127.0.0.1 for tests, with the
 * quirks of real servers switchable per test. It answers a script (one reply
 * per request, in order) and records every request body it received, so a
 * test drives the real `openai` client (or anything above it) against it and
 * then checks both what came back and what was sent.
 *
 *   const stub = await startOpenAIStub({ server: 'llama.cpp', replies: [{ toolCalls: [{ name: 'search', arguments: { q: 'tau' } }] }, { json: { answer: 'yes' } }] });
 *   ... baseURL: stub.url ...
 *   stub.requests[0].body.max_tokens
 *   await stub.close();
 *
 * What a reply turns into on the wire:
 * - `content`: the text as is. `json`: what a small model means to answer —
 *   valid JSON when the request's response_format asks for JSON (as servers
 *   enforce it by grammar), prose around broken JSON with the wrong key when it
 *   does not. `toolCalls`: tool calls, their ids as the `toolCallIds` quirk says.
 * - Generated text longer than the request's max_tokens is cut there (content,
 *   or tool-call arguments mid-JSON) with finish_reason "length".
 * - Tokens are word and punctuation pieces; usage counts them.
 */

export type ServerProfile = 'openai' | 'llama.cpp' | 'vllm' | 'ollama' | 'lmstudio';

export interface StubQuirks {
  /**
   * Tool-call ids: unique (`call_<n>` over the server's life), "" (llama.cpp),
   * left out, the same id for every call of a response, or restarting at
   * `call_0` in every response.
   */
  toolCallIds: 'unique' | 'empty' | 'missing' | 'duplicate' | 'restart';
  /**
   * Sampled token ids: none; in `logprobs.content[].id` whenever logprobs are
   * sent (llama.cpp, which ignores return_token_ids); or, when asked with
   * return_token_ids, in `choices[].token_ids` and `prompt_token_ids` (vLLM).
   */
  tokenIds: 'none' | 'logprobs' | 'fields';
  /** Alternatives per token when logprobs are asked for without top_logprobs (llama.cpp: 20). */
  defaultTopLogprobs: number;
  /** top_logprobs 0 turns logprobs off altogether (llama.cpp: n_probs 0). */
  zeroTopLogprobsDisablesLogprobs: boolean;
  /** Prompt tokens a slot holds (llama.cpp `-c`/`-np`): a longer prompt is cut silently, usage.prompt_tokens says how far. null: no limit. */
  contextTokens: number | null;
  /** response_format types taken; another gets HTTP 400 (LM Studio takes only json_schema). */
  responseFormats: ReadonlyArray<'json_schema' | 'json_object'>;
  /** response_format together with tools gets HTTP 400. */
  rejectsFormatWithTools: boolean;
  /** A request parameter outside the OpenAI API (return_token_ids) gets HTTP 400 "Unrecognized request argument supplied". */
  rejectsUnknownParams: boolean;
}

/** The chat completions request parameters of the OpenAI API. */
const OPENAI_PARAMS = new Set(['model', 'messages', 'temperature', 'top_p', 'n', 'stream', 'stream_options', 'stop', 'max_tokens', 'max_completion_tokens', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'logprobs', 'top_logprobs', 'user', 'seed', 'tools', 'tool_choice', 'parallel_tool_calls', 'response_format', 'metadata', 'store', 'reasoning_effort', 'service_tier', 'modalities', 'audio', 'prediction', 'prompt_cache_key', 'safety_identifier', 'verbosity', 'web_search_options']);

/** The quirks each server showed (llama.cpp measured on a real llama-server; the others from their documentation). */
export const SERVER_QUIRKS: Readonly<Record<ServerProfile, StubQuirks>> = {
  openai: { toolCallIds: 'unique', tokenIds: 'none', defaultTopLogprobs: 0, zeroTopLogprobsDisablesLogprobs: false, contextTokens: null, responseFormats: ['json_schema', 'json_object'], rejectsFormatWithTools: false, rejectsUnknownParams: true },
  'llama.cpp': { toolCallIds: 'empty', tokenIds: 'logprobs', defaultTopLogprobs: 20, zeroTopLogprobsDisablesLogprobs: true, contextTokens: null, responseFormats: ['json_schema', 'json_object'], rejectsFormatWithTools: false, rejectsUnknownParams: false },
  vllm: { toolCallIds: 'unique', tokenIds: 'fields', defaultTopLogprobs: 0, zeroTopLogprobsDisablesLogprobs: false, contextTokens: null, responseFormats: ['json_schema', 'json_object'], rejectsFormatWithTools: false, rejectsUnknownParams: false },
  ollama: { toolCallIds: 'unique', tokenIds: 'none', defaultTopLogprobs: 0, zeroTopLogprobsDisablesLogprobs: false, contextTokens: null, responseFormats: ['json_schema', 'json_object'], rejectsFormatWithTools: false, rejectsUnknownParams: false },
  lmstudio: { toolCallIds: 'unique', tokenIds: 'none', defaultTopLogprobs: 0, zeroTopLogprobsDisablesLogprobs: false, contextTokens: null, responseFormats: ['json_schema'], rejectsFormatWithTools: false, rejectsUnknownParams: false },
};

export interface StubToolCall {
  name: string;
  arguments: string | Record<string, unknown>;
  /** Sent as is; null leaves the id out. Default: what the `toolCallIds` quirk gives. */
  id?: string | null;
}

export interface StubReply {
  content?: string;
  json?: unknown;
  toolCalls?: StubToolCall[];
  /** Replaces the usage.prompt_tokens the stub would report. */
  promptTokens?: number;
  /** An HTTP error instead of an answer. */
  error?: { status: number; message: string };
  /** Never answer (until the client gives up or the stub closes): a model generating for ever. */
  hang?: boolean;
  /** Extra top-level fields of the response body (llama.cpp's `__verbose`, ...). */
  extra?: Record<string, unknown>;
  /**
   * A 200 whose body never arrives whole, as a proxy or a crashing server sends it: 'cut' ends the body cleanly
   * half-way through the JSON (no content-length), 'cut-socket' announces the full length and drops the socket
   * half-way, 'unparsable' sends a complete body that is not JSON.
   */
  brokenBody?: BrokenBody;
}

export type BrokenBody = 'cut' | 'cut-socket' | 'unparsable';
const BROKEN_BODIES: readonly BrokenBody[] = ['cut', 'cut-socket', 'unparsable'];

/** A request as the stub received it. */
export interface StubRequest {
  index: number;
  /** The parsed JSON body. */
  body: Record<string, any>;
  /** Header names in lower case. */
  headers: Record<string, string>;
}

export type StubScript = StubReply | ((req: StubRequest) => StubReply);

export interface OpenAIStubOptions {
  /** Quirks of this server (default 'openai'), changed by `quirks`. */
  server?: ServerProfile;
  quirks?: Partial<StubQuirks>;
  /** One reply per request, in order; a function answers every request. */
  replies: StubScript[] | ((req: StubRequest) => StubReply);
  /** Waits this long before each answer, as a real server takes time to generate (benchmarks). */
  delayMs?: number;
  /**
   * Breaks this share (0..1) of the 200 answers on the wire, the three kinds of `brokenBody` in turn, chosen by a
   * seeded generator so a test sees the same faults every run.
   */
  faults?: { brokenBodies: number; seed?: number };
  /** Listen on this port (a server coming back where it was); default: any free one. */
  port?: number;
}

export interface OpenAIStub {
  /** Base URL for OpenAI clients: http://127.0.0.1:PORT/v1 */
  url: string;
  readonly requests: readonly StubRequest[];
  readonly quirks: StubQuirks;
  /** The indexes of the requests whose answer was broken on the wire, by kind. */
  readonly broken: ReadonlyArray<{ index: number; kind: BrokenBody }>;
  close(): Promise<void>;
}

export async function startOpenAIStub(opts: OpenAIStubOptions): Promise<OpenAIStub> {
  const quirks: StubQuirks = { ...SERVER_QUIRKS[opts.server ?? 'openai'], ...opts.quirks };
  const requests: StubRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const broken: Array<{ index: number; kind: BrokenBody }> = [];
  const faultDraw = seededRandom(opts.faults?.seed ?? 1);
  let nextCallId = 0;

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendError(res, 500, `stub failed: ${err instanceof Error ? err.message : String(err)}`));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method !== 'POST' || path !== '/v1/chat/completions') return sendError(res, 404, `no route ${req.method} ${path}`);
    let body: Record<string, any>;
    try {
      body = JSON.parse(await readBody(req)) as Record<string, any>;
    } catch {
      return sendError(res, 400, 'the request body is not valid JSON');
    }
    const request: StubRequest = { index: requests.length, body, headers: lowerCaseHeaders(req) };
    requests.push(request);
    if (typeof body.model !== 'string' || !Array.isArray(body.messages) || body.messages.length === 0) {
      return sendError(res, 500, '"messages" must be a non-empty array and "model" a string');
    }
    const unknown = quirks.rejectsUnknownParams ? Object.keys(body).find((k) => !OPENAI_PARAMS.has(k)) : undefined;
    if (unknown) return sendError(res, 400, `Unrecognized request argument supplied: ${unknown}`);
    const formatType: string | undefined = body.response_format?.type;
    const enforced = formatType === 'json_schema' || formatType === 'json_object';
    if (enforced && quirks.rejectsFormatWithTools && Array.isArray(body.tools) && body.tools.length) {
      return sendError(res, 400, 'response_format cannot be used together with tools');
    }
    if (formatType && formatType !== 'text' && !quirks.responseFormats.includes(formatType as 'json_schema')) {
      return sendError(res, 400, `'response_format.type' must be ${quirks.responseFormats.map((t) => `'${t}'`).join(' or ')}`);
    }
    const script = typeof opts.replies === 'function' ? opts.replies : opts.replies[request.index];
    if (!script) return sendError(res, 500, `openaiStub: no scripted reply for request ${request.index}`);
    const reply = typeof script === 'function' ? script(request) : script;
    if (reply.error) return sendError(res, reply.error.status, reply.error.message);
    if (reply.hang) {
      hanging.add(res);
      return;
    }
    if (opts.delayMs) await new Promise((resolve) => setTimeout(resolve, opts.delayMs));
    const answer = render(reply, body, enforced);
    if (body.stream === true) return sendStream(res, body, answer);
    const fault = reply.brokenBody ?? (opts.faults && faultDraw() < opts.faults.brokenBodies ? BROKEN_BODIES[broken.length % BROKEN_BODIES.length] : undefined);
    if (fault) {
      broken.push({ index: request.index, kind: fault });
      return sendBroken(res, JSON.stringify(completionBody(body, answer, reply)), fault);
    }
    sendJson(res, 200, completionBody(body, answer, reply));
  }

  interface Answer {
    content: string | null;
    calls: Array<{ id: string | null; name: string; arguments: string }>;
    tokens: string[];
    finish: 'stop' | 'length' | 'tool_calls';
  }

  function render(reply: StubReply, body: Record<string, any>, enforced: boolean): Answer {
    const limit: number = body.max_completion_tokens ?? body.max_tokens ?? Number.POSITIVE_INFINITY;
    let budget = limit;
    const take = (text: string): { text: string; tokens: string[]; cut: boolean } => {
      const all = tokensOf(text);
      const kept = all.slice(0, Math.max(0, budget));
      budget -= kept.length;
      return { text: kept.join(''), tokens: kept, cut: kept.length < all.length };
    };
    const calls: Answer['calls'] = [];
    const tokens: string[] = [];
    let cut = false;
    const wanted = reply.toolCalls ?? [];
    wanted.forEach((c, i) => {
      if (cut) return;
      const args = typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments);
      const t = take(args);
      tokens.push(...t.tokens);
      cut = t.cut;
      calls.push({ id: c.id === undefined ? idFor(i) : c.id, name: c.name, arguments: t.text });
    });
    if (wanted.length) return { content: null, calls, tokens, finish: cut ? 'length' : 'tool_calls' };
    const text = reply.json !== undefined ? jsonAnswer(reply.json, body, enforced) : (reply.content ?? '');
    const t = take(text);
    return { content: t.text, calls, tokens: t.tokens, finish: t.cut ? 'length' : 'stop' };
  }

  function idFor(index: number): string | null {
    switch (quirks.toolCallIds) {
      case 'empty':
        return '';
      case 'missing':
        return null;
      case 'duplicate':
        return 'call_0';
      case 'restart':
        return `call_${index}`;
      default:
        return `call_${nextCallId++}`;
    }
  }

  function completionBody(body: Record<string, any>, a: Answer, reply: StubReply): Record<string, unknown> {
    const promptTokens = promptTokensOf(body);
    const reported = reply.promptTokens ?? (quirks.contextTokens !== null ? Math.min(promptTokens.length, quirks.contextTokens) : promptTokens.length);
    const logprobs = logprobsOf(body, a.tokens);
    const idsAsked = quirks.tokenIds === 'fields' && body.return_token_ids === true;
    return {
      id: `chatcmpl-stub-${requests.length}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: a.content, ...(a.calls.length ? { tool_calls: a.calls.map(wireCall) } : {}) },
          finish_reason: a.finish,
          logprobs,
          ...(idsAsked ? { token_ids: a.tokens.map(tokenId) } : {}),
        },
      ],
      usage: { prompt_tokens: reported, completion_tokens: a.tokens.length, total_tokens: reported + a.tokens.length },
      ...(idsAsked ? { prompt_token_ids: promptTokens.map(tokenId) } : {}),
      ...reply.extra,
    };
  }

  function logprobsOf(body: Record<string, any>, tokens: string[]): { content: unknown[] } | null {
    if (body.logprobs !== true) return null;
    const n: number = body.top_logprobs ?? quirks.defaultTopLogprobs;
    if (n === 0 && quirks.zeroTopLogprobsDisablesLogprobs) return null;
    return {
      content: tokens.map((token, i) => {
        const logprob = -((i % 7) + 1) / 20;
        const top = Array.from({ length: n }, (_, k) => ({ token: k === 0 ? token : `alt${k}`, logprob: logprob - k, bytes: bytes(token) }));
        return { ...(quirks.tokenIds === 'logprobs' ? { id: tokenId(token) } : {}), token, logprob, bytes: bytes(token), top_logprobs: top };
      }),
    };
  }

  function sendStream(res: ServerResponse, body: Record<string, any>, a: Answer): void {
    const head = { id: `chatcmpl-stub-${requests.length}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: body.model };
    const chunk = (delta: Record<string, unknown>, finish: string | null = null): string =>
      `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(chunk({ role: 'assistant', content: a.content === null ? null : '' }));
    if (a.content) for (const token of tokensOf(a.content)) res.write(chunk({ content: token }));
    a.calls.forEach((c, index) => {
      res.write(chunk({ tool_calls: [{ index, ...(c.id === null ? {} : { id: c.id }), type: 'function', function: { name: c.name, arguments: '' } }] }));
      for (const piece of tokensOf(c.arguments)) res.write(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    });
    res.write(chunk({}, a.finish));
    if (body.stream_options?.include_usage) {
      const prompt = promptTokensOf(body).length;
      res.write(`data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: prompt, completion_tokens: a.tokens.length, total_tokens: prompt + a.tokens.length } })}\n\n`);
    }
    res.end('data: [DONE]\n\n');
  }

  server.on('connection', (socket) => socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    quirks,
    broken,
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Word and punctuation pieces with their leading space: the stub's tokens. */
export function tokensOf(text: string): string[] {
  return text.match(/\s*[\p{L}\p{N}]+|\s*[^\s\p{L}\p{N}]|\s+$/gu) ?? [];
}

/** The stub's prompt tokens: each message's text and tool calls with a few framing tokens, and the tool definitions. */
function promptTokensOf(body: Record<string, any>): string[] {
  const pieces: string[] = [];
  for (const m of body.messages as Array<Record<string, any>>) {
    pieces.push('<|start|>', String(m.role), '\n');
    const content = typeof m.content === 'string' ? m.content : Array.isArray(m.content) ? m.content.map((p: { text?: string }) => p.text ?? '').join('') : '';
    pieces.push(...tokensOf(content));
    for (const c of (m.tool_calls ?? []) as Array<{ function: { name: string; arguments: string } }>) pieces.push(...tokensOf(`${c.function.name} ${c.function.arguments}`));
    pieces.push('<|end|>');
  }
  if (Array.isArray(body.tools)) pieces.push(...tokensOf(JSON.stringify(body.tools)));
  return pieces;
}

/**
 * JSON as a small model writes it: exactly the value when the server enforces
 * JSON (only the schema's keys under json_schema), otherwise chatty prose
 * around a fragment with the wrong key and no closing brace.
 */
function jsonAnswer(value: unknown, body: Record<string, any>, enforced: boolean): string {
  if (enforced) {
    const keys = body.response_format?.json_schema?.schema?.properties as Record<string, unknown> | undefined;
    if (keys && value && typeof value === 'object' && !Array.isArray(value)) {
      return JSON.stringify(Object.fromEntries(Object.entries(value).filter(([k]) => k in keys)));
    }
    return JSON.stringify(value);
  }
  const first = value && typeof value === 'object' ? Object.values(value).find((v) => typeof v === 'string') : value;
  return `Sure! Here is what I think about it.\n{"answer": ${JSON.stringify(String(first ?? ''))}, "notes": "see above`;
}

function wireCall(c: { id: string | null; name: string; arguments: string }): Record<string, unknown> {
  return { ...(c.id === null ? {} : { id: c.id }), type: 'function', function: { name: c.name, arguments: c.arguments } };
}

/** A stable id per token (FNV-1a folded into a 32k vocabulary). */
export function tokenId(token: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < token.length; i++) h = Math.imul(h ^ token.charCodeAt(i), 0x01000193) >>> 0;
  return h % 32_000;
}

function bytes(s: string): number[] {
  return Array.from(Buffer.from(s, 'utf8'));
}

function lowerCaseHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') out[k.toLowerCase()] = v;
  return out;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendBroken(res: ServerResponse, text: string, kind: BrokenBody): void {
  // Cut inside a string value, so the JSON ends unterminated as a dropped body does.
  const half = text.slice(0, Math.max(1, text.indexOf('"content"') + 14));
  if (kind === 'unparsable') {
    const garbage = `<html><body>502 upstream sent: ${half}</body></html>`;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(garbage) });
    return void res.end(garbage);
  }
  if (kind === 'cut') {
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
    return void res.end(half);
  }
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.write(half, () => res.destroy());
}

function sendError(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) return void res.destroy();
  sendJson(res, status, { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', param: null, code: null } });
}
