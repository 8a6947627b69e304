import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentTurns } from '../../../src/core/trace/agentTurns';
import { rolloutOverlay, stepTransitions } from '../../../src/core/analysis/graphStats';
import { summariseAgents } from '../../../src/core/store/agentSummary';
import { Attr, type SpanKind, type SpanRecord } from '../../../src/core/trace/span';

/*
 * A command agent's rollout has no graph steps: its model calls (through the
 * gateway) and tool spans (over OTLP) carry agent names. Each run of calls by
 * one agent is a turn, and the turns stand for the steps in summaries and the
 * graph view; the judge's calls under the reward span are not the graph's.
 */

let n = 0;
function span(kind: SpanKind, agent: string | null, start: number, end: number, parent: string | null = 'root', status: SpanRecord['status'] = 'ok', extra: SpanRecord['attributes'] = {}): SpanRecord {
  const spanId = (++n).toString(16).padStart(16, '0');
  return { traceId: 'a'.repeat(32), spanId, parentSpanId: parent, name: `${kind} ${agent ?? ''}`, kind, startTime: start, endTime: end, status, attributes: { ...(agent ? { [Attr.agentName]: agent } : {}), ...extra } };
}

const root: SpanRecord = { traceId: 'a'.repeat(32), spanId: 'root', parentSpanId: null, name: 'rollout', kind: 'rollout', startTime: 0, endTime: 100, status: 'ok', attributes: {} };
const reward: SpanRecord = { ...root, spanId: 'reward0000000000', parentSpanId: 'root', name: 'reward', kind: 'reward', startTime: 90, endTime: 99 };
const spans: SpanRecord[] = [
  root,
  span('llm', 'Router', 1, 10, 'root', 'ok', { [Attr.retries]: 1 }),
  span('tool', 'Router', 11, 12),
  span('llm', 'Responder', 20, 30),
  span('llm', 'Router', 40, 45, 'root', 'error'),
  span('llm', 'Responder', 50, 60),
  reward,
  span('llm', 'Judge', 91, 98, reward.spanId),
];

test('turns: runs of one agent\'s calls in start order, the judge left out', () => {
  const turns = agentTurns(spans);
  assert.deepEqual(
    turns.map((t) => [t.agent, t.startTime, t.endTime, t.llmCalls, t.retried, t.error]),
    [
      ['Router', 1, 12, 1, 1, false],
      ['Responder', 20, 30, 1, 0, false],
      ['Router', 40, 45, 1, 0, true],
      ['Responder', 50, 60, 1, 0, false],
    ],
  );
});

test('the graph view\'s path and transitions follow the turns', () => {
  const overlay = rolloutOverlay(spans);
  assert.deepEqual(overlay.path, ['Router', 'Responder', 'Router', 'Responder']);
  assert.deepEqual(overlay.visits, { Router: 2, Responder: 2 });
  assert.deepEqual(overlay.errors, { Router: 1 });
  const steps = stepTransitions(overlay.path.map((name) => ({ name, step: Number.MAX_SAFE_INTEGER })));
  assert.deepEqual(steps, [['__start__', 'Router'], ['Router', 'Responder'], ['Responder', 'Router'], ['Router', 'Responder'], ['Responder', '__end__']]);
});

test('per-agent facts count a turn as a visit; with graph steps, only node spans are visits', () => {
  const byAgent = Object.fromEntries(summariseAgents(spans).map((a) => [a.agent, a]));
  assert.equal(byAgent.Router!.visits, 2);
  assert.equal(byAgent.Router!.latencyMs, 11 + 5);
  assert.equal(byAgent.Responder!.visits, 2);
  assert.equal(byAgent.Router!.toolCalls, 1);
  assert.equal(byAgent.Judge, undefined);
  const node = span('node', 'Router', 0, 50);
  node.name = 'Router';
  const withSteps = summariseAgents([...spans, node]);
  assert.equal(withSteps.find((a) => a.agent === 'Router')!.visits, 1);
  assert.equal(withSteps.find((a) => a.agent === 'Responder')!.visits, 0);
});
