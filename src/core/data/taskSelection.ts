import { UsageError } from '../errors';
import { seededRandom } from './seededRandom';
import type { SplitTask, Task } from './tasks';

function checkFraction(trainFraction: number): void {
  if (!(trainFraction > 0 && trainFraction < 1)) {
    throw new UsageError(`train fraction must be between 0 and 1 (exclusive), got ${trainFraction}`);
  }
}

/**
 * The first `trainFraction` of the tasks, in file order, are the train split
 * and the rest are val — as the reference study did (first 800 / last 200).
 * Rounded to the nearest task so 0.57 × 100 gives 57, not 56.
 */
export function splitTasks(tasks: Task[], trainFraction: number): { train: Task[]; val: Task[] } {
  checkFraction(trainFraction);
  const nTrain = Math.round(tasks.length * trainFraction);
  return { train: tasks.slice(0, nTrain), val: tasks.slice(nTrain) };
}

/**
 * The tasks a run works on. With a `limit` smaller than what the split holds,
 * `limit` tasks are drawn at random from the split using `seed` (the same
 * seed always draws the same tasks), then returned in file order so runs and
 * reports read in a stable order. Without a seed the first `limit` tasks are
 * taken.
 */
export function selectTasks(
  tasks: Task[],
  opts: { split: 'train' | 'val' | 'all'; trainFraction: number; limit?: number; seed?: number },
): SplitTask[] {
  const { train, val } = splitTasks(tasks, opts.trainFraction);
  const pool: SplitTask[] = [];
  if (opts.split !== 'val') for (const t of train) pool.push({ ...t, split: 'train' });
  if (opts.split !== 'train') for (const t of val) pool.push({ ...t, split: 'val' });
  const { limit } = opts;
  if (limit === undefined || limit >= pool.length) return pool;
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`task limit must be a positive whole number, got ${limit}`);
  if (opts.seed === undefined) return pool.slice(0, limit);
  const random = seededRandom(opts.seed);
  const order = pool.map((_, i) => i);
  // Partial Fisher-Yates: only the first `limit` places need drawing.
  for (let i = 0; i < limit; i++) {
    const j = i + Math.floor(random() * (order.length - i));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order
    .slice(0, limit)
    .sort((a, b) => a - b)
    .map((i) => pool[i]);
}
