import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resumePlan } from '../../../src/core/rollout/resumePlan';
import type { RolloutAttempt } from '../../../src/core/store/types';

const attempt = (id: string, taskId: string, status: RolloutAttempt['status'], failure: RolloutAttempt['failure'] = null, error: string | null = null): RolloutAttempt => ({
  id,
  taskId,
  sample: 0,
  status,
  failure,
  error,
});

test('resume plan: what stands, what is redone and which attempts the redo supersedes, rows from older stores included', () => {
  const planned = ['ok#0', 'own#0', 'conn#0', 'old-interrupted#0', 'old-reset#0', 'twice#0', 'cancelled#0', 'never#0'];
  const attempts = [
    attempt('a1', 'ok', 'succeeded'),
    attempt('a2', 'own', 'failed', 'tool_error', 'tool search failed'),
    attempt('a3', 'conn', 'failed', 'connection', 'connection failed (ECONNREFUSED)'),
    // Written before failure categories were stored: read from the error, as the report reads them.
    attempt('a4', 'old-interrupted', 'failed', null, 'interrupted'),
    attempt('a5', 'old-reset', 'failed', null, "model 'main' at http://127.0.0.1:9/v1: connection failed (ECONNRESET) after 4 retries"),
    // An older resume redid it without linking the attempts: the later success stands.
    attempt('a6', 'twice', 'failed', 'interrupted', 'interrupted'),
    attempt('a7', 'twice', 'succeeded'),
    attempt('a8', 'cancelled', 'cancelled', 'cancelled', 'cancelled'),
  ];
  const plan = resumePlan(planned, attempts);
  assert.deepEqual([...plan.skip].sort(), ['ok#0', 'own#0', 'twice#0']);
  assert.deepEqual(Object.fromEntries(plan.supersedes), { 'conn#0': ['a3'], 'old-interrupted#0': ['a4'], 'old-reset#0': ['a5'], 'cancelled#0': ['a8'] });
  assert.deepEqual(plan.summary, { done: 3, transport: { connection: 2 }, unfinished: 2, retried: {}, keptFailed: { tool_error: 1 }, notStarted: 1 });

  const retry = resumePlan(planned, attempts, { retryFailed: true });
  assert.deepEqual(retry.supersedes.get('own#0'), ['a2']);
  assert.deepEqual([retry.summary.retried, retry.summary.keptFailed, retry.summary.done], [{ tool_error: 1 }, {}, 2]);
});

test('resume plan: an attempt still running (another worker at it) is redone without being named: the store keeps whichever ends first with a success', () => {
  const plan = resumePlan(['busy#0', 'mixed#0'], [attempt('r1', 'busy', 'running'), attempt('f1', 'mixed', 'failed', 'connection', 'connection failed'), attempt('r2', 'mixed', 'running')]);
  assert.equal(plan.skip.size, 0);
  assert.deepEqual(plan.supersedes.get('busy#0'), []);
  assert.deepEqual(plan.supersedes.get('mixed#0'), ['f1'], 'the finished failure is replaced by name, the running attempt is not');
  assert.equal(plan.summary.unfinished, 2);
});
