import { RuntimeFailure } from '../errors';

/**
 * How the reason of a 200 whose body was cut off or is not JSON starts. A transport fault, not the model's answer:
 * failure reports file it with connection failures, never as invalid output. Keep it exact.
 */
export const BROKEN_RESPONSE_BODY = 'broken response body';


/** A model call that failed for good: retries exhausted, or an error not worth retrying. */
export class LlmCallError extends RuntimeFailure {
  constructor(
    message: string,
    /** HTTP status of the last attempt; undefined for connection errors and timeouts. */
    readonly status: number | undefined,
    /** Retries made before giving up (attempts − 1). */
    readonly retries: number,
    readonly logicalModel: string,
    readonly baseUrl: string,
    cause?: unknown,
    /** Why each retry before the last attempt was made. */
    readonly retryReasons: readonly string[] = [],
  ) {
    super(message);
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * The caller aborted the call. Named 'AbortError' like the DOM error so code
 * that checks `err.name === 'AbortError'` (LangGraph, fetch users) treats it alike.
 */
export class LlmAbortError extends Error {
  constructor(
    message: string,
    readonly retries: number,
  ) {
    super(message);
    this.name = 'AbortError';
  }
}

export function isAbortError(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || err instanceof LlmAbortError);
}
