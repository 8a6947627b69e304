/*
 * Execution match, the usual text-to-SQL reward: the gold query and the
 * predicted one run on the task's database, and the reward is 1 when they
 * return the same rows (as a multiset, or in order when the gold query has
 * ORDER BY, since then the order is part of the answer), else 0. Two queries
 * written differently that return the same rows are both right.
 *
 *   "reward": { "module": "reward.ts" }     with the dataset's "fields": { "expected": "query" }
 *
 * The judge is never called, so scoring costs no model calls.
 */
import { runQuery, type QueryResult } from './taskDatabase';

interface RewardInput {
  task: { id: string; expected?: unknown; meta: Record<string, unknown> };
  outcome: { finalOutput: string | null };
}

/** A value as compared: floats rounded to 12 digits, so two ways of computing an average that differ in the last bits agree. */
function canonical(value: unknown): unknown {
  return typeof value === 'number' && !Number.isInteger(value) ? Number(value.toPrecision(12)) : value;
}

function rowKeys(result: Extract<QueryResult, { ok: true }>, ordered: boolean): string[] {
  const keys = result.rows.map((row) => JSON.stringify(row.map(canonical)));
  return ordered ? keys : keys.sort();
}

export default async function executionMatch({ task, outcome }: RewardInput) {
  const dbId = task.meta.db_id;
  const gold = task.expected;
  if (typeof dbId !== 'string' || typeof gold !== 'string') {
    // A dataset problem, not the agents': thrown, it marks the rollout's reward as failed with this message.
    throw new Error(`task ${task.id} needs "db_id" and the gold query: map "expected" to "query" under the dataset's "fields" in lab.json`);
  }
  const predicted = outcome.finalOutput;
  if (!predicted) return { reward: 0, breakdown: { executes: 0, match: 0 }, info: 'no query' };
  const [expected, got] = await Promise.all([runQuery(dbId, gold), runQuery(dbId, predicted)]);
  if (!expected.ok) throw new Error(`the gold query of task ${task.id} fails on ${dbId}: ${expected.error}`);
  if (!got.ok) return { reward: 0, breakdown: { executes: 0, match: 0 }, info: `error: ${got.error}` };
  const ordered = /\border\s+by\b/i.test(gold);
  const a = rowKeys(expected, ordered);
  const b = rowKeys(got, ordered);
  const match = a.length === b.length && a.every((key, i) => key === b[i]) ? 1 : 0;
  return { reward: match, breakdown: { executes: 1, match }, info: `${got.rows.length} rows, gold ${expected.rows.length}${ordered ? ' (ordered)' : ''}` };
}
