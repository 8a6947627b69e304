import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classifyFailure,
  classifyThrown,
  noOutputFailure,
  spanIssues,
  truncationCounts,
} from '../../../src/core/reward/failureClassification';
import { LlmCallError } from '../../../src/core/llm/llmErrors';
import { Attr, type Attributes, type SpanKind, type SpanRecord } from '../../../src/core/trace/span';

/*
 * Spans as the llm layer and the research lab write them (the contract): an
 * llm span has `rollout_lab.truncated: true` when the server's finish_reason
 * was "length", a node span's parse error starts with "truncated at max_tokens"
 * when its agent's answer was cut off, and `rollout_lab.prompt.truncated` marks
 * a prompt the server cut.
 */

let t = 0;
function span(kind: SpanKind, agent: string | null, attributes: Attributes = {}, extra: Partial<SpanRecord> = {}): SpanRecord {
  t += 10;
  return {
    traceId: 'a'.repeat(32),
    spanId: t.toString(16).padStart(16, '0'),
    parentSpanId: kind === 'rollout' ? null : 'f'.repeat(16),
    name: kind === 'llm' ? 'chat small' : (agent ?? kind),
    kind,
    startTime: t,
    endTime: t + 5,
    status: 'ok',
    attributes: agent ? { [Attr.agentName]: agent, ...attributes } : attributes,
    ...extra,
  };
}

const cutCall = (agent: string): SpanRecord => span('llm', agent, { [Attr.truncated]: true });
const cutNode = (agent: string): SpanRecord =>
  span('node', agent, { [Attr.parseError]: 'truncated at max_tokens (256): the answer was cut off before it was complete — raise models.senior.maxTokens in .rollout-lab/lab.json', 'rollout_lab.output.ok': false }, { status: 'error' });

test('no output is "truncated" when the answer that went missing was cut at max_tokens', () => {
  // The research lab records the agents whose answers failed: the cut must be theirs.
  assert.deepEqual(noOutputFailure([span('llm', 'Supervisor'), cutCall('PrincipalInvestigator'), cutNode('PrincipalInvestigator')], ['PrincipalInvestigator']), {
    kind: 'truncated',
    agent: 'PrincipalInvestigator',
  });
  assert.equal(noOutputFailure([cutNode('PrincipalInvestigator')], ['PrincipalInvestigator']).kind, 'truncated', 'the parse error alone says so');
  // A cut answer of an agent whose output was used (it was repaired) does not explain a missing output elsewhere.
  assert.deepEqual(noOutputFailure([cutCall('HypothesisRefiner'), span('llm', 'PrincipalInvestigator')], ['PrincipalInvestigator']), { kind: 'no_output', agent: null });
  // A graph that records no failures: the last model answer is what went missing.
  assert.deepEqual(noOutputFailure([span('llm', 'Writer'), cutCall('Writer')], []), { kind: 'truncated', agent: 'Writer' });
  assert.equal(noOutputFailure([cutCall('Writer'), span('llm', 'Critic')], []).kind, 'no_output', 'an earlier cut answer is not the missing one');
  assert.equal(noOutputFailure([span('llm', 'Writer'), cutCall('Judge')], []).kind, 'no_output', "the judge's calls are not the graph's");
  assert.equal(noOutputFailure([], []).kind, 'no_output');
});

test('truncation counts: answers cut at max_tokens and prompts the server cut, over model calls', () => {
  const spans = [cutCall('A'), cutCall('B'), cutNode('B'), span('llm', 'C', { [Attr.promptTruncated]: true }), span('llm', 'D')];
  assert.deepEqual(truncationCounts(spans), { answers: 2, prompts: 1 });
  assert.deepEqual(truncationCounts([]), { answers: 0, prompts: 0 });
});

test('span issues: a cut answer is "truncated", not "invalid output"', () => {
  const issues = spanIssues([span('rollout', null), cutCall('ProtocolDesigner'), cutNode('ProtocolDesigner'), span('node', 'PeerReviewer', { [Attr.parseError]: 'no JSON object', 'rollout_lab.output.ok': false })]);
  assert.deepEqual(
    issues.map((i) => [i.kind, i.agent]),
    [
      ['truncated', 'ProtocolDesigner'],
      ['truncated', 'ProtocolDesigner'],
      ['invalid_output', 'PeerReviewer'],
    ],
  );
  assert.match(issues[0]!.message, /ProtocolDesigner's answer was cut at max_tokens/);
});

test('classifies the errors the runner and the store write, and what a rollout threw', () => {
  assert.equal(classifyFailure('interrupted'), 'interrupted');
  assert.equal(classifyFailure('the graph finished without a final output (PI: no JSON object)'), 'no_output');
  assert.equal(classifyFailure("the graph gave no final output: PI's answer was truncated at max_tokens (256): …"), 'truncated');
  assert.equal(classifyThrown(new LlmCallError('HTTP 429', 429, 0, 'small', 'http://x'), 'HTTP 429'), 'rate_limit');
  assert.equal(classifyThrown(new LlmCallError('bad gateway', 502, 2, 'small', 'http://x'), 'bad gateway'), 'server_error');
  const abort = new Error('stopped');
  abort.name = 'AbortError';
  assert.equal(classifyThrown(abort, 'stopped'), 'cancelled');
  assert.equal(classifyThrown('a string', 'a string'), 'other');
});
