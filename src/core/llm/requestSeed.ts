import { AsyncLocalStorage } from 'node:async_hooks';

const storage = new AsyncLocalStorage<number>();

/**
 * Runs `fn` with a default request seed for every model call made inside it,
 * however deep in a graph: samples of one task differ, and a rollout replays
 * exactly on servers that honour `seed`.
 */
export function withRequestSeed<T>(seed: number, fn: () => Promise<T>): Promise<T> {
  return storage.run(seed, fn);
}

export function currentRequestSeed(): number | undefined {
  return storage.getStore();
}
