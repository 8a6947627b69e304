import { onAbort } from '../onAbort';

/**
 * Runs `work` over `items` with at most `limit` in flight, in item order.
 * Stops taking new items once `signal` aborts; items already started finish or
 * observe the signal themselves.
 *
 * Each item gets an abort signal of its own that follows `signal`: libraries
 * that leave a listener on the signal they are given (LangGraph's stream adds
 * one per invoke and never removes it) leave it on the item's signal, which
 * goes away with the item. `signal` holds a single listener while the pool
 * runs, whatever `limit` is, and none once it returns.
 */
export async function forEachBounded<T>(
  items: readonly T[],
  limit: number,
  work: (item: T, index: number, signal: AbortSignal | undefined) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  const inFlight = new Set<AbortController>();
  const release = onAbort(signal, () => {
    for (const item of inFlight) item.abort(signal!.reason);
  });
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length && !signal?.aborted) {
      const i = next++;
      const own = signal ? new AbortController() : null;
      if (own) inFlight.add(own);
      try {
        await work(items[i]!, i, own?.signal);
      } finally {
        if (own) inFlight.delete(own);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  } finally {
    release();
  }
}
