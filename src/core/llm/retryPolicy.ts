/** When and how long to wait before retrying a model call. */
export interface BackoffOptions {
  /** First backoff delay; doubles each retry. */
  baseDelayMs: number;
  /** Upper bound of the exponential backoff. */
  maxDelayMs: number;
  /** Upper bound of a server-requested Retry-After wait, so a bad header cannot stall a run. */
  maxRetryAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseDelayMs: 500, maxDelayMs: 8_000, maxRetryAfterMs: 60_000 };

/** 408 (request timeout), 409 (lock), 429 (rate limit) and every 5xx are transient. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * The wait a server asked for, in ms: `retry-after-ms` first (OpenAI's own),
 * then `Retry-After` as delta-seconds or an HTTP date. null when absent or unreadable.
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && ms.trim() !== '') {
    const n = Number(ms);
    if (Number.isFinite(n) && n >= 0) return n;
  }
  const ra = headers.get('retry-after');
  if (ra === null || ra.trim() === '') return null;
  const secs = Number(ra);
  if (Number.isFinite(secs)) return secs >= 0 ? secs * 1000 : null;
  const date = Date.parse(ra);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * Delay before retry number `retry` (0-based): the server's Retry-After when it
 * gave one (capped), otherwise exponential backoff with jitter so that many
 * runners hitting the same limit do not retry in lockstep.
 */
export function retryDelayMs(retry: number, serverMs: number | null, opts: BackoffOptions, random: () => number = Math.random): number {
  if (serverMs !== null) return Math.min(serverMs, opts.maxRetryAfterMs);
  const exp = Math.min(opts.baseDelayMs * 2 ** retry, opts.maxDelayMs);
  // Jitter in [75 %, 100 %] keeps the backoff growing while spreading retries.
  return exp * (0.75 + 0.25 * random());
}
