import { RuntimeFailure } from '../errors';
import { StoreWriteError } from '../store/storeWriteError';
import type { TraceStore } from '../store/traceStore';

/** Writes a rollout makes as it runs; the first that fails stops the batch. */
const ROLLOUT_WRITES = new Set<string | symbol>(['writeSpan', 'startRollout', 'finishRollout']);

/** A batch stopped because the store could not write: says how to resume it once the cause is fixed. */
export class RunStoreFailure extends RuntimeFailure {
  constructor(
    readonly runId: string,
    readonly cause: StoreWriteError,
  ) {
    super(`${cause.message}; the run is resumable with rollout-lab run --resume ${runId}`);
  }
}

/**
 * The store as a batch's rollouts see it: the first write that fails (a full
 * disk) is kept and stops the batch (`onFailure`), and that write and every
 * later one of a rollout are dropped instead of thrown. Thrown, a span write
 * would fail inside LangChain's callback handler, which prints its own noise
 * and goes on; dropped, the batch ends with the store's own error alone. What
 * was written before stays (the journal cuts a torn frame back).
 */
export function guardStore(store: TraceStore, onFailure: (err: StoreWriteError) => void): { store: TraceStore; failure(): StoreWriteError | null } {
  let failure: StoreWriteError | null = null;
  const guarded = new Proxy(store, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      if (!ROLLOUT_WRITES.has(prop)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]): unknown => {
        if (failure) return undefined;
        try {
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (err) {
          if (!(err instanceof StoreWriteError)) throw err;
          failure = err;
          onFailure(err);
          return undefined;
        }
      };
    },
  });
  return { store: guarded, failure: () => failure };
}
