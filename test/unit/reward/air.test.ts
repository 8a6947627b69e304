import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyAirRules, airTotalsByAgent } from '../../../src/core/reward/air';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';

function span(kind: SpanRecord['kind'], status: SpanRecord['status'], attributes: SpanRecord['attributes'], id: string): SpanRecord {
  return { traceId: 't'.repeat(32), spanId: id, parentSpanId: null, name: id, kind, startTime: 0, endTime: 1, status, attributes };
}

test('AIR rules fire on tool outcomes and output validity, filtered by agent and tool', () => {
  const spans = [
    span('tool', 'ok', { [Attr.agentName]: 'Geneticist', [Attr.toolName]: 'pubmed_search' }, 's1'),
    span('tool', 'error', { [Attr.agentName]: 'Geneticist', [Attr.toolName]: 'protein_lookup' }, 's2'),
    span('tool', 'ok', { [Attr.agentName]: 'ProtocolDesigner', [Attr.toolName]: 'protein_lookup' }, 's3'),
    span('node', 'error', { [Attr.agentName]: 'PeerReviewer', 'rollout_lab.output.ok': false }, 's4'),
    span('node', 'ok', { [Attr.agentName]: 'Supervisor', 'rollout_lab.output.ok': true }, 's5'),
    span('llm', 'ok', { [Attr.agentName]: 'Supervisor' }, 's6'),
  ];
  const rewards = applyAirRules(
    [
      { name: 'tool-ok', when: 'tool.ok', reward: 0.3 },
      { name: 'tool-fail', when: 'tool.error', reward: -0.2 },
      { name: 'designer-lookup', when: 'tool.ok', agents: ['ProtocolDesigner'], tools: ['protein_lookup'], reward: 0.1 },
      { name: 'bad-json', when: 'output.invalid', reward: -0.1 },
      { name: 'good-json', when: 'output.valid', agents: ['Nobody'], reward: 0.5 },
    ],
    spans,
  );
  assert.deepEqual(
    rewards.map((r) => [r.rule, r.spanId, r.reward]),
    [
      ['tool-ok', 's1', 0.3],
      ['tool-fail', 's2', -0.2],
      ['tool-ok', 's3', 0.3],
      ['designer-lookup', 's3', 0.1],
      ['bad-json', 's4', -0.1],
    ],
  );
  const totals = airTotalsByAgent(rewards);
  assert.ok(Math.abs(totals.Geneticist! - 0.1) < 1e-12);
  assert.ok(Math.abs(totals.ProtocolDesigner! - 0.4) < 1e-12);
  assert.equal(applyAirRules([], spans).length, 0);
});

test('a tool run in a node of its own earns its reward for the agent whose model call asked for it (by tool-call id)', () => {
  const asked = JSON.stringify([{ role: 'assistant', content: '', tool_calls: [{ id: 'call_7', name: 'run_sql', arguments: '{"sql":"SELECT 1"}' }] }]);
  const spans = [
    span('llm', 'ok', { [Attr.agentName]: 'SqlWriter', [Attr.outputMessages]: asked }, 'c1'),
    span('tool', 'ok', { [Attr.agentName]: 'execute', [Attr.toolName]: 'run_sql', [Attr.toolCallId]: 'call_7' }, 't1'),
    span('tool', 'error', { [Attr.agentName]: 'execute', [Attr.toolName]: 'run_sql', [Attr.toolCallId]: 'call_unknown' }, 't2'),
  ];
  const rewards = applyAirRules(
    [
      { name: 'sql-ok', when: 'tool.ok', agents: ['SqlWriter'], reward: 0.2 },
      { name: 'any-ok', when: 'tool.ok', reward: 0.1 },
      { name: 'sql-error', when: 'tool.error', reward: -0.3 },
    ],
    spans,
  );
  assert.deepEqual(
    rewards.map((r) => [r.rule, r.spanId, r.agent, r.callSpanId, r.credit]),
    [
      ['sql-ok', 't1', 'SqlWriter', 'c1', 'tool_call_id'],
      ['any-ok', 't1', 'SqlWriter', 'c1', 'tool_call_id'],
      // No call lists this id, and none finished before the tool started: the node that ran the tool.
      ['sql-error', 't2', 'execute', null, null],
    ],
  );
  const totals = airTotalsByAgent(rewards);
  assert.ok(Math.abs(totals.SqlWriter! - 0.3) < 1e-12);
  assert.equal(totals.execute, -0.3);
  assert.equal(totals.execute_tools, undefined);
});
