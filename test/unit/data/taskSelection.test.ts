import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectTasks, splitTasks } from '../../../src/core/data/taskSelection';
import type { Task } from '../../../src/core/data/tasks';
import { UsageError } from '../../../src/core/errors';

const tasks = (n: number): Task[] =>
  Array.from({ length: n }, (_, i) => ({ id: `t${i}`, goal: `G${i}`, context: `C${i}`, expectedDecision: null }));

test('splitTasks keeps file order: the first fraction is train, the rest val', () => {
  const { train, val } = splitTasks(tasks(10), 0.8);
  assert.deepEqual(train.map((t) => t.id), ['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
  assert.deepEqual(val.map((t) => t.id), ['t8', 't9']);
  assert.equal(splitTasks(tasks(100), 0.57).train.length, 57, 'rounded, not floored (0.57 × 100 is 56.99...)');
  assert.throws(() => splitTasks(tasks(3), 1), UsageError);
  assert.throws(() => splitTasks(tasks(3), 0), UsageError);
});

test('selectTasks labels splits and returns everything when no limit applies', () => {
  const all = selectTasks(tasks(10), { split: 'all', trainFraction: 0.8 });
  assert.deepEqual(all.map((t) => t.split), [...Array(8).fill('train'), 'val', 'val']);
  const val = selectTasks(tasks(10), { split: 'val', trainFraction: 0.8, limit: 5, seed: 1 });
  assert.deepEqual(val.map((t) => t.id), ['t8', 't9']);
  assert.ok(val.every((t) => t.split === 'val'));
  assert.deepEqual(selectTasks(tasks(10), { split: 'train', trainFraction: 0.8, limit: 3 }).map((t) => t.id), ['t0', 't1', 't2']);
});

test('seeded selection is deterministic, in file order, and differs for another seed', () => {
  const pool = tasks(1000);
  const pick = (seed: number) => selectTasks(pool, { split: 'train', trainFraction: 0.8, limit: 10, seed }).map((t) => t.id);
  const a = pick(42);
  assert.deepEqual(pick(42), a);
  assert.equal(new Set(a).size, 10);
  const indices = a.map((id) => Number(id.slice(1)));
  assert.deepEqual(indices, [...indices].sort((x, y) => x - y), 'file order');
  assert.ok(indices.every((i) => i < 800), 'only train tasks');
  assert.notDeepEqual(pick(7), a);
  assert.notDeepEqual(indices, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'a sample, not the head');
});

test('a bad limit is a usage error', () => {
  assert.throws(() => selectTasks(tasks(10), { split: 'all', trainFraction: 0.8, limit: 0, seed: 1 }), /positive whole number/);
  assert.throws(() => selectTasks(tasks(10), { split: 'all', trainFraction: 0.8, limit: 2.5, seed: 1 }), UsageError);
});
