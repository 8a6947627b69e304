import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AGENT_HEADER, type ChatCallOptions, type ChatRequest } from '../llm/client';
import { isAbortError, LlmCallError } from '../llm/llmErrors';
import type { LiveRollout, LiveRollouts } from '../trace/liveRollouts';
import { completionChunks } from './completionChunks';
import { GatewayError, openAIErrorBody } from './gatewayError';
import type { GatewayRouting } from './gatewayRouting';
import { recordedCall } from './recordedCall';
import { RolloutCallSignals } from './rolloutCallSignals';

export interface GatewayOptions {
  port?: number;
  host?: string;
  live: LiveRollouts;
  /** How a rollout's calls are routed (the lab's routing table, as the rollout's batch sees it). */
  routing(rollout: LiveRollout): GatewayRouting;
  /** One line per refused or failed call. */
  log?: (line: string) => void;
  /** Replaces the routed client's default backoff (tests use short delays). */
  backoff?: ChatCallOptions['backoff'];
}

export interface Gateway {
  /** http://HOST:PORT */
  url: string;
  port: number;
  /** The OpenAI base URL of a rollout (`…/rollouts/ID/v1`), or of one agent in it (`…/rollouts/ID/agents/NAME/v1`). */
  baseUrl(rolloutId: string, agent?: string): string;
  close(): Promise<void>;
}

// Requests are JSON chat histories: generous, yet a bounded buffer per request.
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const ROUTE = /^\/rollouts\/([^/]+)(?:\/agents\/([^/]+))?\/v1\/(chat\/completions|models)\/?$/;

/**
 * The recording gateway: an OpenAI-compatible endpoint per rollout that a
 * command agent (any language, any OpenAI client) calls instead of its model.
 * Each call goes through the lab's routing and client and is recorded as an
 * `llm` span of that rollout.
 */
export async function startGateway(opts: GatewayOptions): Promise<Gateway> {
  const host = opts.host ?? '127.0.0.1';
  const callSignals = new RolloutCallSignals();
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      opts.log?.(`gateway: ${req.method} ${req.url}: ${message}`);
      if (err instanceof GatewayError) return sendError(res, err.status, message, err.code);
      // A lab.json the router cannot use (an API key not set, ...): the message says what to fix.
      sendError(res, 500, message, 'gateway_error');
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const m = ROUTE.exec(path);
    if (!m) {
      return sendError(res, 404, `no route ${req.method} ${path}: the gateway serves /rollouts/ID/v1/chat/completions and /rollouts/ID/v1/models (or /rollouts/ID/agents/NAME/v1/...)`, 'not_found');
    }
    const [, rawId, rawAgent, endpoint] = m;
    const id = pathPart(rawId!, 'rollout id');
    const pathAgent = rawAgent === undefined ? null : pathPart(rawAgent, 'agent name');
    const rollout = opts.live.get(id);
    if (!rollout) {
      return sendError(res, 404, `rollout "${id}" is not running here: the gateway takes calls only while their rollout runs (it may have ended or been cancelled)`, 'rollout_not_found');
    }
    if (endpoint === 'models') {
      if (req.method !== 'GET') return sendError(res, 405, `use GET for ${path}`, 'method_not_allowed');
      const data = (opts.routing(rollout).models?.() ?? []).map((name) => ({ id: name, object: 'model', created: 0, owned_by: 'rollout-lab' }));
      return sendJson(res, 200, { object: 'list', data });
    }
    if (req.method !== 'POST') return sendError(res, 405, `use POST for ${path}`, 'method_not_allowed');
    const body = await readJsonBody(req);
    const header = req.headers[AGENT_HEADER];
    const agent = pathAgent ?? (typeof header === 'string' && header.trim() ? header.trim() : null);
    const routing = opts.routing(rollout);
    const route = routing.route(agent, typeof body.model === 'string' && body.model ? body.model : null);
    const { model: _model, stream, stream_options: streamOptions, ...rest } = body;
    await complete(res, rollout, route, routing.versions, callerSpan(req.headers.traceparent), rest as unknown as ChatRequest, {
      stream: stream === true,
      includeUsage: (streamOptions as { include_usage?: unknown } | undefined)?.include_usage === true,
    });
  }

  async function complete(
    res: ServerResponse,
    rollout: LiveRollout,
    route: Parameters<typeof recordedCall>[1],
    versions: GatewayRouting['versions'],
    callerSpanId: string | null,
    request: ChatRequest,
    as: { stream: boolean; includeUsage: boolean },
  ): Promise<void> {
    // The call stops when the rollout is cancelled or the agent hangs up.
    const { controller: abort, release } = callSignals.begin(rollout.signal);
    let hungUp = false;
    const hangUp = (): void => {
      if (res.writableFinished) return;
      hungUp = true;
      abort.abort();
    };
    res.once('close', hangUp);
    try {
      const completion = await recordedCall(rollout, route, request, { signal: abort.signal, versions, backoff: opts.backoff, callerSpanId });
      if (!as.stream) return sendJson(res, 200, completion);
      // Upstream is asked without streaming (the routed client's retries and format fallback need the whole answer);
      // the recorded answer is then streamed to the agent in OpenAI's chunk format.
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      for (const chunk of completionChunks(completion, as.includeUsage)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.end('data: [DONE]\n\n');
    } catch (err) {
      // Nobody to answer. (req.destroyed says nothing here: a request whose body was read is destroyed.)
      if (hungUp || res.destroyed) return;
      if (isAbortError(err) && rollout.signal?.aborted) {
        return sendError(res, 410, `rollout "${rollout.id}" was cancelled: its model calls stop with it`, 'rollout_cancelled');
      }
      if (err instanceof LlmCallError) {
        const status = err.status ?? (err.message.includes('timed out') ? 504 : 502);
        opts.log?.(`gateway: rollout ${rollout.id}${route.agent ? ` agent ${route.agent}` : ''}: ${err.message}`);
        return sendError(res, status, err.message, 'upstream_error');
      }
      throw err;
    } finally {
      release();
      res.off('close', hangUp);
    }
  }

  server.on('connection', (socket) => socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url,
    port,
    baseUrl: (rolloutId, agent) =>
      `${url}/rollouts/${encodeURIComponent(rolloutId)}${agent === undefined ? '' : `/agents/${encodeURIComponent(agent)}`}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

// W3C Trace Context: version-traceid-parentid-flags, lowercase hex; all-zero ids are invalid.
const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/**
 * The span that was current in the caller when it sent the request (the
 * parent id of its `traceparent`), or null: the call's span hangs under it.
 * A header that is not valid trace context is ignored, as the W3C spec asks.
 */
function callerSpan(header: string | string[] | undefined): string | null {
  const m = typeof header === 'string' ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return null;
  return m[2]!;
}

/** A %-encoded part of the path, decoded; malformed encoding is the caller's mistake (400), not the gateway's. */
function pathPart(raw: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new GatewayError(400, `the ${what} in the path, "${raw.slice(0, 80)}", is not valid %-encoding: encode it with encodeURIComponent (or use the base URL the lab gave the agent)`, 'invalid_path');
  }
}

async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new GatewayError(413, `the request body is over ${MAX_BODY_BYTES} bytes`, 'request_too_large');
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (err) {
    throw new GatewayError(400, `the request body is not valid JSON (${err instanceof Error ? err.message : String(err)}): send a chat completions request`, 'invalid_json');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError(400, 'the request body must be a JSON object (a chat completions request)', 'invalid_request');
  const messages = (body as { messages?: unknown }).messages;
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every((m) => m && typeof m === 'object' && typeof (m as { role?: unknown }).role === 'string')) {
    throw new GatewayError(400, '"messages" must be a non-empty array of messages, each with a "role"', 'invalid_request');
  }
  return body as Record<string, unknown>;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, code: string | null): void {
  if (res.headersSent) return void res.destroy();
  sendJson(res, status, openAIErrorBody(status, message, code));
}
