import { RuntimeFailure, UsageError } from '../errors';
import { DEFAULT_BACKOFF, retryAfterMs, retryDelayMs, type BackoffOptions } from '../llm/retryPolicy';
import type { TraceStore } from '../store/traceStore';
import type { RolloutRecord } from '../store/types';
import type { SpanRecord } from '../trace/span';
import { decodeResponse, decodeRpcStatusMessage, encodeJsonRequest, encodeProtobufRequest } from './otlpEncode';
import type { OtlpTraceRequest } from './otlpModel';
import { rolloutToOtlp } from './rolloutToOtlp';

export type OtlpProtocol = 'http/protobuf' | 'http/json';
export const OTLP_PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];

export interface OtlpExportTarget {
  /** The collector: its base URL (…:4318) or the full traces URL (…/v1/traces). */
  endpoint: string;
  /** Sent with every request (API keys): never printed. */
  headers?: Record<string, string>;
  protocol?: OtlpProtocol;
  /** Attempts per request on 429/502/503/504 and connection failures. Default 5. */
  maxAttempts?: number;
  backoff?: BackoffOptions;
  signal?: AbortSignal;
}

/** An export that did not go through: says where and why, never the headers. */
export class OtlpExportError extends RuntimeFailure {
  override name = 'OtlpExportError';
}

const RETRYABLE = new Set([429, 502, 503, 504]);

/** The URL spans are posted to: `…/v1/traces` as given, else appended to the base URL. */
export function tracesUrl(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new UsageError(`"${endpoint}" is not a URL; give the collector's OTLP/HTTP endpoint, e.g. http://localhost:4318`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`"${endpoint}" is not an http(s) URL; OTLP export speaks OTLP/HTTP`);
  if (!url.pathname.endsWith('/v1/traces')) url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

/** `K=V,K2=V2` (OTEL_EXPORTER_OTLP_HEADERS' format, values percent-decoded) → headers. Errors name the key, never the value. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text?.trim()) return out;
  for (const pair of text.split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)).trim();
    if (eq < 0 || !key || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) {
      throw new UsageError(`a header in "${key.slice(0, 40)}…" is not KEY=VALUE; write headers as K=V[,K=V] (values may be percent-encoded)`);
    }
    let value = pair.slice(eq + 1).trim();
    try {
      value = decodeURIComponent(value);
    } catch {
      // not percent-encoded: taken as written
    }
    out[key] = value;
  }
  return out;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    }, { once: true });
  });

/** Posts one request, retrying transient answers; the rejected-span count of a partial success. */
export async function postTraces(req: OtlpTraceRequest, target: OtlpExportTarget): Promise<number> {
  const url = tracesUrl(target.endpoint);
  const json = target.protocol === 'http/json';
  const body = json ? encodeJsonRequest(req) : encodeProtobufRequest(req);
  const attempts = target.maxAttempts ?? 5;
  const where = new URL(url).origin + new URL(url).pathname;
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { ...target.headers, 'content-type': json ? 'application/json' : 'application/x-protobuf' },
        body: body as BodyInit,
        signal: target.signal,
      });
    } catch (err) {
      if (target.signal?.aborted) throw new OtlpExportError(`export to ${where} was cancelled`);
      if (attempt + 1 >= attempts) {
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        throw new OtlpExportError(`cannot reach the OTLP collector at ${where} (${cause?.code ?? cause?.message ?? (err as Error).message}) after ${attempts} attempts; check that it runs and the URL`);
      }
      await sleep(retryDelayMs(attempt, null, target.backoff ?? DEFAULT_BACKOFF), target.signal);
      continue;
    }
    const answer = new Uint8Array(await res.arrayBuffer());
    if (res.ok) {
      const partial = (() => {
        try {
          return decodeResponse(answer, (res.headers.get('content-type') ?? '').includes('json'));
        } catch {
          return null;
        }
      })();
      return partial?.rejectedSpans ?? 0;
    }
    const message = decodeRpcStatusMessage(answer, (res.headers.get('content-type') ?? '').includes('json'));
    if (RETRYABLE.has(res.status) && attempt + 1 < attempts) {
      await sleep(retryDelayMs(attempt, retryAfterMs(res.headers), target.backoff ?? DEFAULT_BACKOFF), target.signal);
      continue;
    }
    const hint =
      res.status === 401 || res.status === 403
        ? 'check the credentials in --headers or OTEL_EXPORTER_OTLP_HEADERS'
        : res.status === 404
          ? 'check the URL: OTLP/HTTP traces go to …/v1/traces'
          : res.status === 415
            ? `the collector does not take ${json ? 'JSON' : 'protobuf'}; try --protocol ${json ? 'http/protobuf' : 'http/json'}`
            : RETRYABLE.has(res.status)
              ? `still failing after ${attempts} attempts; try again later`
              : 'see the collector’s message';
    throw new OtlpExportError(`the OTLP collector at ${where} answered ${res.status}${message ? `: ${message}` : ''}; ${hint}`);
  }
}

/** One rollout (its spans as stored) to the collector; the spans the collector refused. */
export function exportRollout(rollout: RolloutRecord, spans: readonly SpanRecord[], target: OtlpExportTarget): Promise<number> {
  return postTraces({ resourceSpans: [rolloutToOtlp(rollout, spans)] }, target);
}

export interface ExportSummary {
  rollouts: number;
  spans: number;
  rejectedSpans: number;
}

/** Stored rollouts (one, a run's, or every one) to the collector, one trace per rollout. */
export async function exportStoredRollouts(store: TraceStore, target: OtlpExportTarget, which: { runId?: string; rolloutId?: string } = {}, onRollout?: (r: RolloutRecord, spans: number) => void): Promise<ExportSummary> {
  tracesUrl(target.endpoint);
  let rollouts: RolloutRecord[];
  if (which.rolloutId) {
    const r = store.resolveRolloutId(which.rolloutId);
    if (!r) throw new UsageError(`rollout "${which.rolloutId}" is not in the store — list rollouts with \`rollout-lab traces\` (the whole id, or the start of it that progress lines show)`);
    rollouts = [r];
  } else {
    if (which.runId && !store.getRun(which.runId)) throw new UsageError(`run "${which.runId}" is not in the store — list runs with \`rollout-lab traces\``);
    rollouts = store.listRollouts({ runId: which.runId, sort: 'startTime', order: 'asc' }).rollouts;
  }
  const summary: ExportSummary = { rollouts: 0, spans: 0, rejectedSpans: 0 };
  for (const r of rollouts) {
    const spans = store.getSpans(r.id);
    summary.rejectedSpans += await exportRollout(r, spans, target);
    summary.rollouts++;
    summary.spans += spans.length;
    onRollout?.(r, spans.length);
  }
  return summary;
}
