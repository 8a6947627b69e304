import { setMaxListeners } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { completionBody, completionChunks } from './simCompletion';
import type { SimFault, SimFaultHook } from './simFaults';
import { SimChatRequestSchema, conversationFingerprint, type SimChatRequest } from './simRequest';
import { respond, type SimAnswer } from './simResponder';
import { readConversation } from './simConversation';
import { promptOptimizerAnswer } from './promptOptimizerAnswer';
import { AGENT_HEADER } from '../llm/client';
import type { CannedAnswers } from './cannedAnswers';
import { seededRandom } from './seededRandom';
import { onAbort } from '../onAbort';
import { errorMessage } from '../errors';

export interface SimServerOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Changes every answer while keeping runs reproducible; default 42. */
  seed?: number;
  /** Fixed delay before each chat answer, for benchmarks and timeout tests. */
  latencyMs?: number;
  /** Decides per request whether to fail it (429, 500, hang, malformed output). */
  faults?: SimFaultHook;
  /** Fence or prefix some JSON answers as real models do; default true. */
  jsonNoise?: boolean;
  /** Largest request body accepted, in bytes; default 20 MiB. */
  maxBodyBytes?: number;
  /** The prompt editor's first rewrite leaves out a placeholder, as a careless model might; default false. */
  editorDropsPlaceholder?: boolean;
  /** The user's canned answers per agent (lab.json "simulator"), asked before the generic answer. */
  answers?: CannedAnswers | null;
}

/** One chat completion request as the server saw it, for tests that check timing and retries. */
export interface SimRequestRecord {
  index: number;
  /** performance.now() when the request arrived: monotonic, comparable across records. */
  receivedAt: number;
  model: string;
  agent: string | null;
  fault: SimFault['kind'] | null;
}

export interface SimServer {
  /** Base URL for OpenAI clients: http://HOST:PORT/v1 */
  url: string;
  port: number;
  /** Chat completion requests received so far, in order. */
  readonly requests: readonly SimRequestRecord[];
  close(): Promise<void>;
}

export const SIM_HEADER = 'x-rollout-lab-simulated';

/**
 * An OpenAI-compatible endpoint on node:http that answers every research-lab
 * role with schema-valid output derived from its input. It stands in for real
 * models wherever none is configured, and for misbehaving ones in tests.
 */
export async function startSimServer(opts: SimServerOptions = {}): Promise<SimServer> {
  const seed = opts.seed ?? 42;
  const maxBody = opts.maxBodyBytes ?? 20 * 1024 * 1024;
  const requests: SimRequestRecord[] = [];
  const models = new Set<string>(['rollout-lab-sim']);
  // Aborted on close, so hanging and delayed answers end with the server.
  const closing = new AbortController();
  // Every request in flight listens on it (and stops listening when it ends): many at once is the load it serves, not a leak.
  setMaxListeners(0, closing.signal);

  const server = createServer((req, res) => {
    res.setHeader(SIM_HEADER, '1');
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendError(res, 500, `simulator failed: ${err instanceof Error ? err.message : String(err)}`, 'server_error');
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (req.method === 'GET' && (path === '/health' || path === '/healthz')) {
      return sendJson(res, 200, { status: 'ok', simulated: true });
    }
    if (req.method === 'GET' && (path === '/v1/models' || path === '/models')) {
      const created = Math.floor(Date.now() / 1000);
      return sendJson(res, 200, { object: 'list', data: [...models].map((id) => ({ id, object: 'model', created, owned_by: 'rollout-lab' })) });
    }
    if (path !== '/v1/chat/completions' && path !== '/chat/completions') {
      return sendError(res, 404, `no route ${req.method} ${path}; the simulator serves POST /v1/chat/completions, GET /v1/models, GET /health`, 'not_found');
    }
    if (req.method !== 'POST') return sendError(res, 405, `use POST for ${path}`, 'invalid_request_error');
    const receivedAt = performance.now();
    let raw: string;
    try {
      raw = await readBody(req, maxBody);
    } catch (err) {
      return sendError(res, 413, err instanceof Error ? err.message : String(err), 'invalid_request_error');
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      return sendError(res, 400, 'the request body is not valid JSON', 'invalid_request_error');
    }
    const parsed = SimChatRequestSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      return sendError(res, 400, `invalid request: ${issue.path.join('.') || '(body)'}: ${issue.message}`, 'invalid_request_error', issue.path.join('.'));
    }
    const body = parsed.data;
    models.add(body.model);
    const index = requests.length;
    // The lab names the calling agent in a header; a client that does not gets the role marker of its system prompt read.
    const named = req.headers[AGENT_HEADER];
    const agent = (Array.isArray(named) ? named[0] : named)?.trim() || readConversation(body).agent;
    const fault = opts.faults?.({ index, agent, request: body }) ?? null;
    requests.push({ index, receivedAt, model: body.model, agent, fault: fault?.kind ?? null });

    // One signal for "the client went away or the server is closing"; the listener on the server's signal goes with the request.
    const gone = new AbortController();
    const unfollow = onAbort(closing.signal, () => gone.abort());
    res.on('close', () => {
      unfollow();
      gone.abort();
    });
    const stop = gone.signal;
    if (fault?.kind === 'hang') {
      await waitFor(stop);
      res.destroy();
      return;
    }
    if (opts.latencyMs) {
      try {
        await sleep(opts.latencyMs, undefined, { signal: stop });
      } catch {
        res.destroy();
        return;
      }
    }
    // A malformed-json fault still answers, with the JSON cut short.
    if (fault?.kind === 'malformed-json') return answer(res, body, 'truncate', agent);
    if (fault?.kind === 'not-json') return answer(res, body, 'prose', agent);
    if (fault) return sendFault(res, fault);
    // The lab's own prompt optimiser is answered by the simulator's role for it, never by the user's canned answers.
    const optimizer = promptOptimizerAnswer(body, { seed, dropPlaceholder: opts.editorDropsPlaceholder });
    if (optimizer) return send(res, body, optimizer);
    let canned: Awaited<ReturnType<NonNullable<typeof opts.answers>['answer']>>;
    try {
      canned = await opts.answers?.answer(agent, body);
    } catch (err) {
      // The user's answers are broken: a client error, so the lab reports it at once instead of retrying it.
      return sendError(res, 400, errorMessage(err), 'invalid_request_error');
    }
    if (canned) {
      return send(res, body, { agent, ...canned, digest: seededRandom(seed, agent, 'canned', conversationFingerprint(body)).digest });
    }
    answer(res, body, null, agent);
  }

  function sendFault(res: ServerResponse, fault: Exclude<SimFault, { kind: 'hang' | 'malformed-json' | 'not-json' }>): void {
    switch (fault.kind) {
      case 'rate-limit': {
        if (fault.retryAfterMs !== undefined) res.setHeader('retry-after-ms', String(fault.retryAfterMs));
        if (fault.retryAfterSeconds !== undefined) {
          res.setHeader(
            'retry-after',
            fault.asDate ? new Date(Date.now() + fault.retryAfterSeconds * 1000).toUTCString() : String(fault.retryAfterSeconds),
          );
        }
        return sendError(res, 429, 'simulated rate limit: slow down', 'rate_limit_exceeded');
      }
      case 'server-error':
        return sendError(res, fault.status ?? 500, 'simulated server error', 'server_error');
      case 'malformed-body':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"id": "chatcmpl-broken", "choices": [');
        return;
    }
  }

  function answer(res: ServerResponse, body: SimChatRequest, damage: 'truncate' | 'prose' | null, agent: string | null): void {
    // Faults damage the prompt optimiser's answers too.
    const a =
      promptOptimizerAnswer(body, { seed, dropPlaceholder: opts.editorDropsPlaceholder }) ??
      respond(body, { seed, jsonNoise: opts.jsonNoise ?? true, truncateJson: damage === 'truncate', agent });
    if (damage === 'prose') {
      a.content = 'Overall this looks reasonable to me, though a few points deserve more thought before going further.';
      a.toolCalls = [];
    }
    send(res, body, a);
  }

  function send(res: ServerResponse, body: SimChatRequest, a: SimAnswer): void {
    if (!body.stream) return sendJson(res, 200, completionBody(body, a));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (const chunk of completionChunks(body, a)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
    res.end('data: [DONE]\n\n');
  }

  server.on('connection', (socket) => socket.setNoDelay(true));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  let closed: Promise<void> | null = null;
  return {
    url: `http://${host}:${address.port}/v1`,
    port: address.port,
    requests,
    close(): Promise<void> {
      closed ??= new Promise<void>((resolve) => {
        closing.abort();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(new Error(`request body over ${max} bytes`));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function waitFor(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string, type: string, param: string | null = null): void {
  sendJson(res, status, { error: { message, type, param, code: type === 'rate_limit_exceeded' ? type : null } });
}

