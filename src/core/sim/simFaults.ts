import type { SimChatRequest } from './simRequest';

/** A failure the simulated endpoint can be told to produce, to exercise clients' error handling. */
export type SimFault =
  /** 429 with a Retry-After header (seconds, or an HTTP date when `asDate`) and/or retry-after-ms. */
  | { kind: 'rate-limit'; retryAfterSeconds?: number; retryAfterMs?: number; asDate?: boolean }
  /** An HTTP error with an OpenAI-style error body; 500 unless `status` says otherwise. */
  | { kind: 'server-error'; status?: number }
  /** Accepts the request and never answers, until the client gives up or the server closes. */
  | { kind: 'hang' }
  /** A well-formed completion whose message content is broken JSON (a model misbehaving). */
  | { kind: 'malformed-json' }
  /** A well-formed completion whose content is prose with no JSON at all (a model ignoring the format). */
  | { kind: 'not-json' }
  /** A 200 whose body is not JSON at all (a proxy misbehaving). */
  | { kind: 'malformed-body' };

export interface SimFaultContext {
  /** 0-based position of this request among the chat completion requests the server has accepted. */
  index: number;
  /** The agent named by the role marker, or null. */
  agent: string | null;
  request: SimChatRequest;
}

/** Decides, per chat completion request, whether to fail it and how. */
export type SimFaultHook = (ctx: SimFaultContext) => SimFault | null | undefined;
