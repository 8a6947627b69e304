import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseShard, shardSlice, shardsOfKeys } from '../../../src/core/rollout/shards';
import { rolloutKey } from '../../../src/core/rollout/runner';
import { UsageError } from '../../../src/core/errors';

const plan = (tasks: number, samples: number): string[] => {
  const keys: string[] = [];
  for (let t = 0; t < tasks; t++) for (let s = 0; s < samples; s++) keys.push(rolloutKey(`task-${t}`, s));
  return keys;
};

test('shards: the N slices partition the plan, every key in exactly one', () => {
  const keys = plan(250, 4);
  for (const n of [1, 2, 3, 4, 7, 16]) {
    const slices = Array.from({ length: n }, (_, k) => shardSlice(keys, (x) => x, { index: k, count: n }));
    const seen = new Map<string, number>();
    slices.forEach((slice, k) => slice.forEach((key) => {
      assert.equal(seen.has(key), false, `${key} is in slice ${seen.get(key)} and slice ${k} of ${n}`);
      seen.set(key, k);
    }));
    assert.equal(seen.size, keys.length, `the ${n} slices hold every key`);
    assert.equal(slices.reduce((a, s) => a + s.length, 0), keys.length);
  }
});

test('shards: slices differ in size by at most one key, and the samples of one task spread', () => {
  for (const [tasks, samples] of [[1000, 2], [800, 2], [7, 3], [1, 64]] as const) {
    const keys = plan(tasks, samples);
    for (const n of [2, 3, 4, 8]) {
      const sizes = Array.from({ length: n }, (_, k) => shardSlice(keys, (x) => x, { index: k, count: n }).length);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `slice sizes ${sizes.join(', ')} for ${n} slices of ${keys.length} keys`);
    }
  }
  // Keys that differ only in their last character (the sample) fall in every slice, not in their task's.
  const samples = Array.from({ length: 64 }, (_, s) => rolloutKey('one-task', s));
  const of = shardsOfKeys([...plan(50, 1), ...samples], 4);
  assert.equal(new Set(samples.map((k) => of.get(k))).size, 4, 'the samples of one task fall in every slice of 4');
});

test('shards: a slice depends on the key, not its position, and is the same on every call', () => {
  const keys = plan(100, 3);
  const shard = { index: 1, count: 4 };
  const slice = shardSlice(keys, (x) => x, shard);
  const reversed = shardSlice([...keys].reverse(), (x) => x, shard);
  assert.deepEqual([...reversed].sort(), [...slice].sort(), 'the same keys whatever the task order');
  assert.deepEqual(shardSlice(keys, (x) => x, shard), slice, 'the same slice on a second call');
  // Pinned values: a slice must not move between versions, or a resumed worker would redo another worker's keys.
  const of = shardsOfKeys(['a#0', 'a#1', 'b#0', 'b#1', 'pubmed-12345#3', 'pubmed-12345#4'], 3);
  assert.deepEqual(['a#0', 'a#1', 'b#0', 'b#1', 'pubmed-12345#3', 'pubmed-12345#4'].map((k) => of.get(k)), [2, 0, 1, 1, 0, 2]);
  assert.deepEqual([...shardsOfKeys(['anything#0', 'other#1'], 1).values()], [0, 0]);
});

test('shards: K/N is parsed, K is 0-based, anything else is a usage error', () => {
  assert.deepEqual(parseShard('0/4'), { index: 0, count: 4 });
  assert.deepEqual(parseShard('3/4'), { index: 3, count: 4 });
  assert.deepEqual(parseShard('0/1'), { index: 0, count: 1 });
  for (const bad of ['4/4', '1/0', '-1/4', '1', '1/4/2', 'a/b', '', '1.5/4', '0/100000']) {
    assert.throws(() => parseShard(bad), (e: unknown) => e instanceof UsageError && /--shard/.test((e as Error).message), bad);
  }
  assert.throws(() => parseShard('4/4'), /0-based, so it goes from 0 to 3/);
});
