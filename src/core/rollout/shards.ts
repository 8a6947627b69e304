import { UsageError } from '../errors';

/** One of `count` slices of a run's plan; `index` is 0-based (0 ≤ index < count). */
export interface Shard {
  index: number;
  count: number;
}

/** Most slices a plan is split into: far more workers than any launcher starts, few enough that a typo is caught. */
export const MAX_SHARDS = 10_000;

/** "2/8" → { index: 2, count: 8 }; anything else is a UsageError that says what the form is. */
export function parseShard(text: string, flag = '--shard'): Shard {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  if (!m) throw new UsageError(`${flag} takes K/N (slice K of N, K from 0 to N-1), e.g. ${flag} 0/4 — not "${text}"`);
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (count < 1 || count > MAX_SHARDS) throw new UsageError(`${flag} ${text}: N is the number of slices, from 1 to ${MAX_SHARDS}`);
  if (index >= count) throw new UsageError(`${flag} ${text}: K is 0-based, so it goes from 0 to ${count - 1} for ${count} slices`);
  return { index, count };
}

export function shardText(s: Shard): string {
  return `${s.index}/${s.count}`;
}

/**
 * The slice a task-and-sample key (`taskId#sample`) falls in: a stable hash of
 * the key (FNV-1a, then a murmur3 finaliser so that keys differing in their last
 * character spread over the slices), never its position in the plan, so a
 * slice holds the same rollouts whatever order the tasks are listed in.
 */
export function shardOfKey(key: string, count: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % count;
}

export function inShard(key: string, shard: Shard): boolean {
  return shardOfKey(key, shard.count) === shard.index;
}

/** The planned items of one slice, in plan order. */
export function shardSlice<T>(items: readonly T[], keyOf: (item: T) => string, shard: Shard): T[] {
  return items.filter((item) => inShard(keyOf(item), shard));
}
