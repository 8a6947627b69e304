/**
 * A model call about to be retried, told as it happens: a call that waits out
 * its timeout is otherwise silent for minutes. The client tells every retry;
 * whoever runs a batch listens for its duration and shows what a user should
 * see (the CLI prints each timeout as a line beside the progress).
 */
export interface RetryNotice {
  /** The agent that made the call, when known. */
  agent: string | null;
  logicalModel: string;
  baseUrl: string;
  /** What failed, as the final error would say it ("timed out after 120000 ms", "HTTP 429", ...). */
  reason: string;
  /** 'timeout' when no answer came within models.<name>.timeoutMs; 'broken_body' for a 200 whose body was cut off or unreadable. */
  kind: 'timeout' | 'broken_body' | 'other';
  /** This retry's number (1-based) and the most the model allows. */
  retry: number;
  maxRetries: number;
  waitMs: number;
  /** One line for a user: who, what, and that it is being retried. */
  message: string;
}

type RetryListener = (notice: RetryNotice) => void;

const listeners = new Set<RetryListener>();

/** Hears every retry of this process from now on; the returned function stops listening. */
export function listenForRetries(listener: RetryListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function tellRetry(notice: RetryNotice): void {
  for (const listener of listeners) {
    try {
      listener(notice);
    } catch {
      // A listener that fails must not fail the model call it hears about.
    }
  }
}
