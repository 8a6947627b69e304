import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { judgeOutput } from '../../../src/core/reward/judge';
import { judgeKeysLine, parseJudgeKeys } from '../../../src/core/reward/judgeSchema';
import { startOpenAIStub, type OpenAIStub, type StubReply } from '../../fakes/openaiStub';
import { resolvedAt } from '../llm/tracedCall';

/*
 * The judge against a llama.cpp-like server: its grammar enforces an enum but ignores a schema's numeric
 * minimum/maximum, so a score asked for as a number in [0, 1] may come back as any number at all.
 */

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

const input = {
  goal: 'Does APOE4 raise amyloid?',
  context: 'APOE4 carriers showed more amyloid.',
  output: '{"title": "APOE4 and amyloid"}',
  criteria: { novelty: { description: 'new' }, clarity: { description: 'clear' } },
};

async function judgeAt(replies: StubReply[]): Promise<{ verdict: Awaited<ReturnType<typeof judgeOutput>>; stub: OpenAIStub }> {
  stub = await startOpenAIStub({ server: 'llama.cpp', replies });
  const judge = new RoutedChatModel({ resolved: resolvedAt(stub.url, { logical: 'judge', model: 'qwen2.5-7b-instruct', maxTokensSetting: 'reward.judge.maxTokens' }), agent: 'Judge' });
  return { verdict: await judgeOutput(judge, input), stub };
}

describe('the judge on servers whose grammar ignores numeric bounds', () => {
  it('asks for each score as an integer 0..10 in an enum (no minimum/maximum) and maps it to 0..1', async () => {
    const { verdict, stub } = await judgeAt([{ json: { novelty: 7, clarity: 10, rationale: 'clear and new' } }]);
    assert.equal(verdict.failed, false, verdict.error);
    assert.deepEqual(verdict.scores, { novelty: 0.7, clarity: 1 });
    const schema = stub.requests[0]!.body.response_format.json_schema.schema;
    assert.deepEqual(schema.properties.novelty, { type: 'integer', enum: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10] });
    assert.equal(JSON.stringify(schema).includes('minimum'), false, 'no bound a grammar would ignore');
    assert.deepEqual(schema.required, ['novelty', 'clarity', 'rationale']);
    const prompt = stub.requests[0]!.body.messages.map((m: { content: string }) => m.content).join('\n');
    assert.match(prompt, /each an integer from 0 to 10/);
  });

  it('a score still out of range is the judge\'s invalid output, naming the server, the model and the value, after one repair request', async () => {
    const wild = { novelty: -5634162669002972, clarity: 6, rationale: 'x' };
    const { verdict, stub } = await judgeAt([{ json: wild }, { json: wild }]);
    assert.equal(verdict.failed, true);
    assert.equal(stub.requests.length, 2, 'one repair request');
    assert.match(stub.requests[1]!.body.messages.at(-1).content, /score -5634162669002972 for criterion novelty is not an integer from 0 to 10/);
    assert.match(verdict.error!, new RegExp(`^judge output unusable \\(model 'judge' = qwen2\\.5-7b-instruct at ${stub.url.replace(/[./]/g, '\\$&')}\\): .*score -5634162669002972 for criterion novelty is not an integer from 0 to 10`));
  });

  it('a missing score reads "missing score for criterion X", not "received NaN"', async () => {
    const { verdict } = await judgeAt([{ content: '{"novelty": 4, "rationale": "x"}' }, { content: '{"novelty": 4, "rationale": "x"}' }]);
    assert.equal(verdict.failed, true);
    assert.match(verdict.error!, /missing score for criterion clarity/);
    assert.doesNotMatch(verdict.error!, /NaN/);
  });

  it('a numeric string is read as its number', async () => {
    const { verdict } = await judgeAt([{ content: '{"novelty": "3", "clarity": 8, "rationale": "x"}' }]);
    assert.deepEqual(verdict.scores, { novelty: 0.3, clarity: 0.8 });
  });

  it("reads the keys of today's judge prompt and of one stored before scores were integers", () => {
    assert.deepEqual(parseJudgeKeys(judgeKeysLine(['novelty', 'clarity'])), ['novelty', 'clarity']);
    assert.deepEqual(parseJudgeKeys('Return JSON with these keys: novelty, clarity (each a number from 0 to 1), and "rationale".'), ['novelty', 'clarity']);
  });
});
