import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TraceStore } from '../../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { conversationProblem, mergeUserRuns, type ChatMessage } from '../../../src/core/train/export/adapters/chatMessages';
import { airByCall, creditedReward } from '../../../src/core/train/export/adapters/rlAdapter';
import { applyAirRules } from '../../../src/core/reward/air';
import { banditRecords } from '../../../src/core/train/export/adapters/banditAdapter';
import { llmCalls } from '../../../src/core/train/export/adapters/llmCalls';
import { researchLabToolDefinition, toolDefinition } from '../../../src/core/train/export/adapters/toolDefinitions';
import { fixtureRolloutId, writeFixtureStore } from '../../fixtures/train/fixtureStore';

const call = (id: string, name = 'pubmed_search', args = '{"query":"x"}'): NonNullable<ChatMessage['tool_calls']>[number] => ({
  id,
  type: 'function',
  function: { name, arguments: args },
});
const S: ChatMessage = { role: 'system', content: 'sys' };
const U: ChatMessage = { role: 'user', content: 'q' };
const A: ChatMessage = { role: 'assistant', content: 'a' };

test('chat-template rules: a well-formed tool conversation passes', () => {
  const ok: ChatMessage[] = [
    S,
    U,
    { role: 'assistant', content: '', tool_calls: [call('c1'), call('c2', 'protein_lookup', '{"name":"MAPT"}')] },
    { role: 'tool', content: 'r1', tool_call_id: 'c1' },
    { role: 'tool', content: 'r2', tool_call_id: 'c2' },
    A,
  ];
  assert.equal(conversationProblem(ok), null);
  assert.equal(conversationProblem([U, A]), null, 'no system message is fine');
  // The turn-limit note comes after the tool results.
  assert.equal(conversationProblem([S, U, { role: 'assistant', content: '', tool_calls: [call('c1')] }, { role: 'tool', content: 'r', tool_call_id: 'c1' }, U, A]), null);
});

test('chat-template rules: each broken shape is named', () => {
  const asks = (id: string): ChatMessage => ({ role: 'assistant', content: '', tool_calls: [call(id)] });
  const cases: Array<[ChatMessage[], RegExp]> = [
    [[], /no messages/],
    [[S, A], /starts with the assistant/],
    [[S, U, U, A], /two user turns/],
    [[S, U, A, A], /two assistant turns/],
    [[U, A, S, U, A], /system message after the start/],
    [[S, U], /does not end with an assistant/],
    [[S, U, { role: 'tool', content: 'r', tool_call_id: 'c1' }, A], /no assistant tool call before it/],
    [[S, U, asks('c1'), { role: 'tool', content: 'r', tool_call_id: 'zz' }, A], /answers tool call "zz"/],
    [[S, U, asks('c1'), { role: 'tool', content: 'r', tool_call_id: 'c1' }, { role: 'tool', content: 'r', tool_call_id: 'c1' }, A], /answered already/],
    [[S, U, asks('c1'), A], /before every tool call of the assistant was answered/],
    [[S, U, asks(''), { role: 'tool', content: 'r', tool_call_id: '' }, A], /without an id/],
    [[S, U, asks('c1'), { role: 'tool', content: 'r', tool_call_id: 'c1' }, U, asks('c1'), { role: 'tool', content: 'r', tool_call_id: 'c1' }, A], /used twice/],
    [[S, U, { role: 'assistant', content: '', tool_calls: [call('c1', 'x', '{not json')] }], /not valid JSON/],
    [[S, U, { role: 'assistant', content: '', tool_calls: [call('c1', 'x', '[1]')] }], /not a JSON object/],
    [[S, U, { role: 'assistant', content: '  ' }], /neither text nor tool calls/],
    [[S, { role: 'function' as ChatMessage['role'], content: 'x' }, A], /role "function"/],
  ];
  for (const [messages, expected] of cases) assert.match(conversationProblem(messages) ?? 'passed', expected, JSON.stringify(messages));
});

test('consecutive user turns are merged; other runs are kept', () => {
  assert.deepEqual(mergeUserRuns([S, U, { role: 'user', content: 'note' }, A, U]), [S, { role: 'user', content: 'q\n\nnote' }, A, U]);
});

test('credit assignment: equal, last, discounted', () => {
  assert.equal(creditedReward(0.8, 0, 3, 'equal'), 0.8);
  assert.equal(creditedReward(0.8, 2, 3, 'equal'), 0.8);
  assert.deepEqual([0, 1, 2].map((i) => creditedReward(0.8, i, 3, 'last')), [0, 0, 0.8]);
  assert.deepEqual([0, 1, 2].map((i) => creditedReward(0.8, i, 3, 'discounted', 0.5)), [0.2, 0.4, 0.8]);
  assert.ok(Math.abs(creditedReward(1, 0, 3, 'discounted') - 0.81) < 1e-12, 'default gamma 0.9');
  assert.equal(creditedReward(0.6, 0, 1, 'discounted', 0), 0.6, 'a single call keeps the whole reward');
});

function span(id: string, kind: SpanRecord['kind'], parent: string | null, start: number, end: number, attributes: SpanRecord['attributes'] = {}): SpanRecord {
  return { traceId: 't'.repeat(32), spanId: id, parentSpanId: parent, name: id, kind, startTime: start, endTime: end, status: 'ok', attributes };
}

test('AIR rewards go to the call that asked for the tool, or to the answer the node parsed', () => {
  const agent = { [Attr.agentName]: 'ProtocolDesigner' };
  const spans = [
    span('root', 'rollout', null, 0, 100),
    span('n1', 'node', 'root', 1, 5, agent),
    span('c1', 'llm', 'n1', 2, 3, agent),
    span('nt', 'node', 'root', 6, 9, agent),
    span('t1', 'tool', 'nt', 7, 8, agent),
    span('n2', 'node', 'root', 10, 15, agent),
    span('c2', 'llm', 'n2', 11, 12, agent),
    span('c3', 'llm', 'n2', 13, 14, agent),
    span('other', 'llm', 'root', 16, 17, { [Attr.agentName]: 'PeerReviewer' }),
    span('r1', 'reward', 't1', 20, 20, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: 0.05, ...agent }),
    span('r2', 'reward', 'n2', 21, 21, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: 0.1, ...agent }),
    span('r3', 'reward', 'n2', 22, 22, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: -0.02, ...agent }),
    span('final', 'reward', 'root', 23, 23, { [Attr.rewardKind]: 'final', [Attr.rewardValue]: 0.9 }),
  ];
  const air = airByCall(spans);
  assert.equal(air.get('c1'), 0.05);
  assert.ok(Math.abs(air.get('c3')! - 0.08) < 1e-12, 'both node rewards on the repaired answer, the last call in the node');
  assert.equal(air.has('c2'), false);
  assert.equal(air.has('other'), false);
});

test('a reward emitted from inside an agent\'s span goes to the agent\'s call just before it, not to its last call in that span', () => {
  const support = { [Attr.agentName]: 'Support' };
  const spans = [
    span('root', 'rollout', null, 0, 100),
    span('agent', 'node', 'root', 1, 50, support),
    span('c0', 'llm', 'agent', 2, 5, support),
    // Emitted between the two calls (an evaluation event at t=8 on the agent's span).
    span('r0', 'reward', 'agent', 8, 8, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: 0.2, ...support }),
    span('c1', 'llm', 'agent', 10, 20, support),
  ];
  const air = airByCall(spans);
  assert.equal(air.get('c0'), 0.2);
  assert.equal(air.has('c1'), false);
});

test('AIR of a tool run in a node of its own goes to the model call that asked for it (same tool-call id), not to that node', () => {
  const writer = { [Attr.agentName]: 'SqlWriter' };
  const exec = { [Attr.agentName]: 'execute' };
  const asks = (id: string): string => JSON.stringify([{ role: 'assistant', content: '', tool_calls: [{ id, name: 'run_sql', arguments: '{}' }] }]);
  const spans = [
    span('root', 'rollout', null, 0, 100),
    span('n1', 'node', 'root', 1, 9, writer),
    span('c0', 'llm', 'n1', 2, 3, { ...writer, [Attr.outputMessages]: asks('call_0') }),
    span('c1', 'llm', 'n1', 4, 5, { ...writer, [Attr.outputMessages]: asks('call_1') }),
    span('nx', 'node', 'root', 10, 19, exec),
    span('t0', 'tool', 'nx', 11, 12, { ...exec, [Attr.toolCallId]: 'call_0', [Attr.toolName]: 'run_sql' }),
    span('t1', 'tool', 'nx', 13, 14, { ...exec, [Attr.toolCallId]: 'call_1', [Attr.toolName]: 'run_sql' }),
    span('t2', 'tool', 'nx', 15, 16, { ...exec, [Attr.toolName]: 'run_sql' }),
    span('n2', 'node', 'root', 20, 29, writer),
    // A later call of the same agent: the ids are in its prompt, not in its answer.
    span('c2', 'llm', 'n2', 21, 22, { ...writer, [Attr.inputMessages]: asks('call_1'), [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: 'SELECT 1' }]) }),
    span('r0', 'reward', 't0', 30, 30, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: 0.1, ...writer }),
    // Stored before rewards named the requesting agent: the tool node's name.
    span('r1', 'reward', 't1', 31, 31, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: -0.2, ...exec }),
    // No id: the latest call that finished before the tool started (c1), though the execute node made no call of its own.
    span('r2', 'reward', 't2', 32, 32, { [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: 0.5, ...exec }),
  ];
  const air = airByCall(spans);
  assert.equal(air.get('c0'), 0.1);
  assert.ok(Math.abs(air.get('c1')! - 0.3) < 1e-12, '-0.2 by id, 0.5 as the preceding call');
  assert.equal(air.has('c2'), false);
  assert.equal([...air.values()].length, 2);
});

test('AIR of a tool without a tool-call id goes to the latest model call of the rollout, by any agent, that finished before the tool started', () => {
  const writer = { [Attr.agentName]: 'SqlWriter' };
  const checker = { [Attr.agentName]: 'Checker' };
  const exec = { [Attr.agentName]: 'execute' };
  const intermediate = (value: number, agent: SpanRecord['attributes']) => ({ [Attr.rewardKind]: 'intermediate', [Attr.rewardValue]: value, ...agent });
  const spans = [
    span('root', 'rollout', null, 0, 100),
    // The writer's call ends after the first tool starts: it cannot have written what that tool ran.
    span('w1', 'llm', 'root', 1, 3, writer),
    span('t1', 'tool', 'root', 4, 5, { ...exec, [Attr.toolName]: 'execute_sql' }),
    span('c1', 'llm', 'root', 6, 8, checker),
    span('w2', 'llm', 'root', 9, 12, writer),
    span('t2', 'tool', 'root', 11, 13, { ...exec, [Attr.toolName]: 'execute_sql' }),
    span('w3', 'llm', 'root', 14, 15, { ...writer }),
    // w3 failed: it returned nothing a tool could run, so t3's call is w2.
    span('t3', 'tool', 'root', 16, 17, { ...exec, [Attr.toolName]: 'execute_sql' }),
    span('r1', 'reward', 't1', 30, 30, intermediate(0.1, exec)),
    span('r2', 'reward', 't2', 31, 31, intermediate(-0.1, exec)),
    span('r3', 'reward', 't3', 32, 32, intermediate(0.05, exec)),
  ];
  spans[6] = { ...spans[6]!, status: 'error' };
  const air = airByCall(spans);
  assert.deepEqual(Object.fromEntries(air), { w1: 0.1, c1: -0.1, w2: 0.05 });
  const rewards = applyAirRules([{ name: 'ran', when: 'tool.ok', tools: ['execute_sql'], reward: 0.1 }], spans);
  assert.deepEqual(
    rewards.map((r) => [r.spanId, r.agent, r.callSpanId, r.credit]),
    [
      ['t1', 'SqlWriter', 'w1', 'preceding_call'],
      ['t2', 'Checker', 'c1', 'preceding_call'],
      ['t3', 'SqlWriter', 'w2', 'preceding_call'],
    ],
  );
  // Nothing before the tool: the node's agent keeps the reward, as before, with no call credited.
  const alone = applyAirRules([{ name: 'ran', when: 'tool.ok', reward: 0.1 }], [span('t0', 'tool', 'root', 1, 2, { ...exec, [Attr.toolName]: 'execute_sql' })]);
  assert.deepEqual(alone.map((r) => [r.agent, r.callSpanId, r.credit]), [['execute', null, null]]);
});

test('llm calls: tool definitions from the span, else the research-lab definition by name; schema marker dropped', () => {
  const def = toolDefinition({ type: 'function', function: { name: 'x', description: 'd', parameters: { $schema: 'draft', type: 'object', properties: {} } } });
  assert.deepEqual(def, { type: 'function', function: { name: 'x', description: 'd', parameters: { type: 'object', properties: {} } } });
  assert.equal(toolDefinition({ function: {} }), null);
  const lookup = researchLabToolDefinition('protein_lookup');
  assert.equal(lookup?.function.name, 'protein_lookup');
  assert.deepEqual((lookup?.function.parameters as { required?: string[] }).required, ['name']);
  assert.equal(researchLabToolDefinition('nope'), null);
});

async function fixtureStore(): Promise<{ store: TraceStore; cleanup: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-adapters-'));
  const store = await TraceStore.open(dir);
  writeFixtureStore(store);
  return {
    store,
    cleanup: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test('llm calls of a stored rollout: indices, per-agent positions, problems', async () => {
  const { store, cleanup } = await fixtureStore();
  try {
    const gamma = llmCalls(store.getSpans(fixtureRolloutId('gamma')), new Set(['Geneticist', 'Pharmacologist']));
    assert.deepEqual(
      gamma.map((c) => [c.agent, c.index, c.agentIndex, c.agentCalls]),
      [
        ['Geneticist', 0, 0, 2],
        ['Geneticist', 1, 1, 2],
        ['Pharmacologist', 2, 0, 2],
        ['Pharmacologist', 3, 1, 2],
      ],
    );
    assert.equal(gamma[0]!.problem, null);
    assert.match(gamma[1]!.problem!, /answers tool call "call_other"/);
    assert.equal(gamma[2]!.problem, 'call_failed');
    assert.equal(gamma[3]!.problem, null);
    const alpha = llmCalls(store.getSpans(fixtureRolloutId('alpha')), new Set(['ProtocolDesigner']));
    assert.deepEqual(alpha[0]!.logprobs, [-0.1, -0.25, -0.5]);
    assert.deepEqual(alpha[0]!.tokenIds, [101, 202, 303]);
  } finally {
    await cleanup();
  }
});

test('banditRecords: one per Supervisor decision with a reward, in start order, with split and run filters', async () => {
  const { store, cleanup } = await fixtureStore();
  try {
    const all = banditRecords(store);
    // gamma's Supervisor answer was invalid and delta failed: no records for them.
    assert.deepEqual(
      all.map((r) => [r.rolloutId, r.chosen, r.reward, r.policyVersion]),
      [
        [fixtureRolloutId('alpha'), 1, 0.8, null],
        [fixtureRolloutId('beta'), 0, 0.4, 'bandit-0001'],
        // zeta and epsilon start together: the id breaks the tie.
        [fixtureRolloutId('zeta'), 1, 0.7, null],
        [fixtureRolloutId('epsilon'), 2, 0.75, null],
      ],
    );
    assert.ok(fixtureRolloutId('zeta') < fixtureRolloutId('epsilon'));
    assert.deepEqual(all[0]!.candidates, [
      { agent: 'Geneticist', text: 'APOE4 carriers show faster decline.' },
      { agent: 'Pharmacologist', text: 'A GLP-1 agonist slows decline.' },
      { agent: 'Neurologist', text: 'Sleep loss mediates the decline.' },
    ]);
    assert.equal(all[0]!.taskId, 't1');
    assert.equal(all[0]!.runId, 'run-fixture');
    assert.deepEqual(banditRecords(store, { split: 'val' }).map((r) => r.rolloutId), [fixtureRolloutId('epsilon')]);
    assert.equal(banditRecords(store, { runId: 'no-such-run' }).length, 0);
  } finally {
    await cleanup();
  }
});

test("llmCalls skips a framework's copy of a call flagged unmatched: the gateway's record is the one row", () => {
  const prompt = JSON.stringify([{ role: 'user', content: 'q' }]);
  const answer = JSON.stringify([{ role: 'assistant', content: 'a' }]);
  const attrs = { [Attr.agentName]: 'Support', [Attr.inputMessages]: prompt, [Attr.outputMessages]: answer };
  const spans = [
    span('r0', 'rollout', null, 0, 10),
    span('g1', 'llm', 'r0', 1, 2, { ...attrs, [Attr.tokenIds]: [1] }),
    span('f1', 'llm', 'r0', 3, 4, { ...attrs, [Attr.unmatchedCall]: true }),
  ];
  const calls = llmCalls(spans, new Set(['Support']));
  assert.deepEqual(calls.map((c) => [c.span.spanId, c.agentCalls]), [['g1', 1]]);
});
