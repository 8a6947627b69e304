import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TraceStore } from '../../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { criticMessages } from '../../../src/core/train/apo/apoMessages';
import { lowRewardExamples, type ApoExample } from '../../../src/core/train/apo/lowRewardExamples';
import { makeAgent, makeRollout, makeRun, spanId } from '../store/helpers/storeFixtures';

/** A rollout of SqlWriter scored by a custom reward in mode "replace": no judge span, no criterion scores. */
function customScored(store: TraceStore, i: number, reward: number, simulated: boolean): string {
  const r = { ...makeRollout({ runId: 'run-c', taskId: `t${i}`, finalReward: reward, startTime: 10_000 + i, agents: [makeAgent('SqlWriter', { promptVersion: 'pv-1' })] }), criteria: null, simulated };
  const span = (kind: SpanRecord['kind'], attributes: SpanRecord['attributes']): SpanRecord => ({
    traceId: r.id,
    spanId: spanId(),
    parentSpanId: null,
    name: kind,
    kind,
    startTime: r.startTime + 1,
    endTime: r.startTime + 2,
    status: 'ok',
    attributes,
  });
  store.startRollout({ ...r, status: 'running', endTime: null });
  store.writeSpan(
    span('llm', {
      [Attr.agentName]: 'SqlWriter',
      [Attr.inputMessages]: JSON.stringify([{ role: 'system', content: 'Write SQL.' }, { role: 'user', content: `question ${i}` }]),
      [Attr.outputMessages]: JSON.stringify([{ role: 'assistant', content: 'SELECT *' }]),
    }),
  );
  store.writeSpan(
    span('reward', {
      [Attr.rewardName]: 'custom',
      [Attr.rewardKind]: 'custom',
      [Attr.rewardValue]: reward,
      [Attr.rewardBreakdown]: JSON.stringify({ executed: 1, matched: reward }),
      'rollout_lab.reward.info': `rows differ on task ${i}`,
    }),
  );
  store.finishRollout(r);
  return r.id;
}

test('prompt optimisation with a custom reward: the critic sees the final reward, the breakdown and the note; simulated rollouts only when asked for', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-apo-examples-'));
  const store = await TraceStore.open(dir);
  try {
    store.startRun(makeRun('run-c'));
    const real = customScored(store, 0, 0.2, false);
    const simulated = customScored(store, 1, 0.1, true);
    const examples = lowRewardExamples(store, 'SqlWriter', { promptVersion: 'pv-1', limit: 5 });
    assert.deepEqual(examples.map((e) => e.rolloutId), [real]);
    assert.deepEqual(examples[0]!.custom, { reward: 0.2, breakdown: { executed: 1, matched: 0.2 }, info: 'rows differ on task 0' });
    assert.equal(examples[0]!.criteria, null);
    const all = lowRewardExamples(store, 'SqlWriter', { promptVersion: 'pv-1', limit: 5, includeSimulated: true });
    assert.deepEqual(all.map((e) => e.rolloutId), [simulated, real], 'lowest reward first');

    const text = criticMessages('SqlWriter', 'Write SQL.', 0.2, examples)[1]!.text;
    assert.match(text, /### Rollout 1: task t0, reward 0\.20\ncustom reward 0\.20; breakdown: executed 1\.00, matched 0\.20; note: rows differ on task 0\nWhat the agent saw:/);
    assert.doesNotMatch(text, /scores: none recorded/);
    assert.doesNotMatch(text, /Judge rationale/);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a judged example reads as before: criterion scores and the judge\'s rationale', () => {
  const judged: ApoExample = { rolloutId: 'r', taskId: 't1', reward: 0.3, criteria: { novelty: 0.2 }, rationale: 'Too vague.', custom: null, saw: 'user: q', answered: 'assistant: a' };
  const text = criticMessages('Supervisor', 'Pick one.', 0.4, [judged])[1]!.text;
  assert.match(text, /### Rollout 1: task t1, reward 0\.30\nscores: novelty 0\.20\nJudge rationale: Too vague\.\nWhat the agent saw:/);
  const bare = criticMessages('Supervisor', 'Pick one.', 0.4, [{ ...judged, criteria: null, rationale: null }])[1]!.text;
  assert.match(bare, /scores: none recorded\nJudge rationale: none given/);
});
