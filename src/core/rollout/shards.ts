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
 * A stable hash of a task-and-sample key (`taskId#sample`): FNV-1a, then a
 * murmur3 finaliser so that keys differing in their last character spread.
 */
function keyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * The slice of every key of a plan: the keys ordered by their hash (ties by the
 * key itself), then dealt to the slices in turn. So the slices differ in size by
 * at most one key (a slice taken by the hash alone is a few per cent off, and
 * the largest sets the run's end), and a key's slice depends on which keys the
 * plan holds, never on their order, so every worker and the coordinator, each
 * planning the run from its stored options, agree on it.
 */
export function shardsOfKeys(keys: readonly string[], count: number): Map<string, number> {
  const ranked = keys.map((key) => ({ key, h: keyHash(key) })).sort((a, b) => a.h - b.h || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return new Map(ranked.map(({ key }, i) => [key, i % count]));
}

/** The planned items of one slice, in plan order. */
export function shardSlice<T>(items: readonly T[], keyOf: (item: T) => string, shard: Shard): T[] {
  const of = shardsOfKeys(items.map(keyOf), shard.count);
  return items.filter((item) => of.get(keyOf(item)) === shard.index);
}
