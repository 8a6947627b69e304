import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzip } from 'node:zlib';
import { promisify } from 'node:util';
import type { TraceStore } from '../store/traceStore';
import type { LiveRollouts } from '../trace/liveRollouts';
import { jsonRequestSteps } from './otlpDecodeJson';
import { protobufRequestSteps } from './otlpDecodeProtobuf';
import { encodeResponse, encodeRpcStatus } from './otlpEncode';
import { OTLP_LIMITS, OtlpPayloadError, spanCount, type OtlpTraceRequest } from './otlpModel';
import { OtlpLimitError, RequestBudget, runInSlices } from './otlpSlices';
import { OtlpIngest, type IngestResult } from './traceIngest';
import { startOtlpGrpcServer } from './otlpGrpc';
import { clampedLine } from './spanTimes';

const gunzipAsync = promisify(gunzip);

export const OTLP_TRACES_PATH = '/v1/traces';
export const DEFAULT_OTLP_PORT = 4318;
/** Default limit on a request body, compressed and decompressed alike. */
export const DEFAULT_MAX_BODY_BYTES = 16 << 20;
/** How long a trace waits for its root span after its last span arrived. */
export const DEFAULT_IDLE_END_MS = 60_000;

// google.rpc.Code values carried in the error answers.
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const RESOURCE_EXHAUSTED = 8;
const INTERNAL = 13;
const UNIMPLEMENTED = 12;

export interface OtlpReceiverOptions {
  store: TraceStore;
  /** 4318 by default; 0 picks a free port. */
  port?: number;
  host?: string;
  /** Rollouts running now that take spans naming them (`rollout_lab.rollout.id`). */
  live?: LiveRollouts;
  /** One line per refused request (and per failed write). */
  log?: (line: string) => void;
  /** Called after each request's spans are stored. */
  onStored?: (result: IngestResult) => void;
  maxBodyBytes?: number;
  /** A trace whose root span has not come this long after its last span ends as an incomplete ('interrupted') rollout; DEFAULT_IDLE_END_MS by default. */
  idleEndMs?: number;
  /** Values one request may hold (OTLP_LIMITS.maxValuesPerRequest by default); over it, 413. */
  maxValuesPerRequest?: number;
  /** Also serve OTLP/gRPC on this port (0 picks a free one); left out, only OTLP/HTTP. */
  grpcPort?: number;
}

export interface OtlpReceiver {
  /** e.g. http://127.0.0.1:4318 — exporters post to `${url}/v1/traces`. */
  readonly url: string;
  readonly port: number;
  /** e.g. http://127.0.0.1:4317 when OTLP/gRPC is served too, else null. */
  readonly grpcUrl: string | null;
  close(): Promise<void>;
}

/** A port the receiver could not listen on (in use, say). */
export class OtlpPortError extends Error {
  constructor(
    message: string,
    readonly port: number,
  ) {
    super(message);
  }
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new HttpError(413, RESOURCE_EXHAUSTED, `the body is ${declared} bytes, over the receiver's limit of ${limit}; export smaller batches`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new HttpError(413, RESOURCE_EXHAUSTED, `the body is over the receiver's limit of ${limit} bytes; export smaller batches`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks, size)));
    req.on('error', reject);
  });
}

async function decompressed(body: Buffer, encoding: string, limit: number): Promise<Buffer> {
  if (encoding === '' || encoding === 'identity') return body;
  if (encoding !== 'gzip') throw new HttpError(415, INVALID_ARGUMENT, `Content-Encoding "${encoding}" is not supported; send gzip or no encoding`);
  try {
    return await gunzipAsync(body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' || err instanceof RangeError) {
      throw new HttpError(413, RESOURCE_EXHAUSTED, `the body decompresses to more than the receiver's limit of ${limit} bytes; export smaller batches`);
    }
    throw new HttpError(400, INVALID_ARGUMENT, `the body is not valid gzip (${(err as Error).message})`);
  }
}

/**
 * The OTLP/HTTP trace receiver: POST /v1/traces in protobuf or JSON, gzip or
 * not, answered as the OTLP/HTTP spec says (200 with an
 * ExportTraceServiceResponse, or 400/413/415 with a google.rpc.Status, in the
 * request's encoding). A request is decoded and checked whole before anything
 * is stored; a bad one is answered, logged and stores nothing.
 */
export async function startOtlpReceiver(opts: OtlpReceiverOptions): Promise<OtlpReceiver> {
  const limit = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const log = opts.log ?? (() => undefined);
  const maxValues = opts.maxValuesPerRequest ?? OTLP_LIMITS.maxValuesPerRequest;
  const ingest = new OtlpIngest(opts.store, opts.live);
  const idleEndMs = opts.idleEndMs ?? DEFAULT_IDLE_END_MS;
  const sweep = setInterval(
    () => {
      const ended = ingest.endIdle(idleEndMs);
      if (ended) log(`otlp: ${ended} trace${ended === 1 ? '' : 's'} ended incomplete: no root span arrived within ${idleEndMs} ms of the last span (status interrupted)`);
    },
    Math.max(10, Math.min(idleEndMs / 4, 5_000)),
  );
  sweep.unref();
  // Requests being decoded or stored in slices: closing waits for them, so none writes to a closed store.
  const inFlight = new Set<Promise<void>>();

  const answer = (res: ServerResponse, status: number, json: boolean, body: Uint8Array | string, extra: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': json ? 'application/json' : 'application/x-protobuf', 'content-length': String(Buffer.byteLength(body)), ...extra });
    res.end(body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    const mediaType = String(req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const json = mediaType === 'application/json';
    try {
      if (path !== OTLP_TRACES_PATH) throw new HttpError(404, NOT_FOUND, `no such endpoint ${path}; OTLP traces go to POST ${OTLP_TRACES_PATH} (metrics and logs are not received)`);
      if (req.method !== 'POST') throw new HttpError(405, UNIMPLEMENTED, `${req.method} is not allowed on ${OTLP_TRACES_PATH}; POST the traces`);
      if (!json && mediaType !== 'application/x-protobuf') {
        throw new HttpError(415, INVALID_ARGUMENT, `Content-Type "${mediaType || '(none)'}" is not supported; send application/x-protobuf or application/json`);
      }
      const raw = await readBody(req, limit);
      const body = await decompressed(raw, String(req.headers['content-encoding'] ?? '').trim().toLowerCase(), limit);
      const budget = new RequestBudget(maxValues);
      let request: OtlpTraceRequest;
      try {
        request = await runInSlices(json ? jsonRequestSteps(body.toString('utf8'), budget) : protobufRequestSteps(body, budget), budget);
      } catch (err) {
        if (err instanceof OtlpLimitError) throw new HttpError(413, RESOURCE_EXHAUSTED, err.message);
        if (err instanceof OtlpPayloadError) throw new HttpError(400, INVALID_ARGUMENT, err.message);
        throw new HttpError(400, INVALID_ARGUMENT, `the request cannot be decoded: ${(err as Error).message}`);
      }
      let result: IngestResult;
      try {
        result = await runInSlices(ingest.ingestSteps(request, budget), budget);
      } catch (err) {
        if (err instanceof OtlpPayloadError) throw new HttpError(400, INVALID_ARGUMENT, err.message);
        throw new HttpError(500, INTERNAL, `the spans could not be stored: ${(err as Error).message}`);
      }
      if (result.partial) log(`otlp: ${result.partial.errorMessage} (of ${spanCount(request)} in the request)`);
      if (result.clamped) log(clampedLine(result.clamped));
      opts.onStored?.(result);
      answer(res, 200, json, encodeResponse(result.partial, json));
    } catch (err) {
      const e = err instanceof HttpError ? err : new HttpError(500, INTERNAL, (err as Error).message);
      log(`otlp: ${req.method} ${path} from ${req.socket.remoteAddress ?? '?'} refused (${e.status}): ${e.message}`);
      if (!res.headersSent) answer(res, e.status, json, encodeRpcStatus(e.code, e.message, json), e.status === 405 ? { allow: 'POST' } : e.status === 413 ? { connection: 'close' } : {});
    }
  };

  const server = createServer((req, res) => {
    const done = handle(req, res)
      .catch((err: unknown) => {
        log(`otlp: request failed: ${(err as Error).message}`);
        if (!res.headersSent) res.writeHead(500).end();
      })
      .finally(() => inFlight.delete(done));
    inFlight.add(done);
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? DEFAULT_OTLP_PORT, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const closeHttp = (): Promise<void> =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  let grpc: Awaited<ReturnType<typeof startOtlpGrpcServer>> | null = null;
  if (opts.grpcPort !== undefined) {
    try {
      grpc = await startOtlpGrpcServer({ port: opts.grpcPort, host: opts.host ?? '127.0.0.1', ingest, maxMessageBytes: limit, maxValuesPerRequest: maxValues, log, onStored: opts.onStored, inFlight });
    } catch (err) {
      await closeHttp();
      throw new OtlpPortError(`the OTLP/gRPC port ${opts.grpcPort} cannot be used (${(err as Error).message})`, opts.grpcPort);
    }
  }
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    grpcUrl: grpc?.url ?? null,
    close: async () => {
      clearInterval(sweep);
      await Promise.all([closeHttp(), grpc?.close()]);
      await Promise.all([...inFlight]);
      ingest.close();
    },
  };
}
