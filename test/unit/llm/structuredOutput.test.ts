import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { ReviewOutput } from '../../../src/core/graph/researchLab/outputs';
import { extractJson, JsonExtractError, jsonObjectsIn, parseStructured } from '../../../src/core/llm/structuredOutput';

describe('extractJson', () => {
  it('reads plain JSON, fenced blocks, leading and trailing prose', () => {
    assert.deepEqual(extractJson('{"a": 1}'), { a: 1 });
    assert.deepEqual(extractJson('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nAnything else?'), { a: [1, 2] });
    assert.deepEqual(extractJson('```\n{"a": 2}\n```'), { a: 2 });
    assert.deepEqual(extractJson('My answer is {"a": "x {not} y"} — hope it helps.'), { a: 'x {not} y' });
    assert.deepEqual(extractJson('As in [1], the review: {"decision": "APPROVE"} done'), { decision: 'APPROVE' });
    assert.deepEqual(extractJson('[{"a": 1}] trailing words'), [{ a: 1 }]);
  });

  it('repairs near-JSON: single quotes, trailing commas, a cut-off end', () => {
    assert.deepEqual(extractJson("{'a': 'b', 'c': [1, 2,],}"), { a: 'b', c: [1, 2] });
    assert.deepEqual(extractJson('Result: {"decision": "REVISE", "feedback": "more controls'), { decision: 'REVISE', feedback: 'more controls' });
  });

  it('throws a JsonExtractError that quotes the start of the text', () => {
    assert.throws(() => extractJson('I cannot answer that.'), (err: unknown) => err instanceof JsonExtractError && /starts "I cannot answer that\."/.test(err.message));
    assert.throws(() => extractJson('   '), (err: unknown) => err instanceof JsonExtractError && /empty/.test(err.message));
  });

  it('lists the JSON objects quoted in a prompt', () => {
    assert.deepEqual(jsonObjectsIn('first {"a":1} then [1,2] and {"b":{"c":2}}'), [{ a: 1 }, { b: { c: 2 } }]);
  });
});

describe('parseStructured', () => {
  const good = '{"decision": "APPROVE", "critique_severity": "MINOR", "feedback": "fine"}';

  it('validates fenced output with trailing prose', async () => {
    const r = await parseStructured(ReviewOutput, `\`\`\`json\n${good}\n\`\`\`\nLet me know.`);
    assert.deepEqual(r, { ok: true, value: { decision: 'APPROVE', critique_severity: 'MINOR', feedback: 'fine' }, repaired: false, repair: null, raw: `\`\`\`json\n${good}\n\`\`\`\nLet me know.`, original: `\`\`\`json\n${good}\n\`\`\`\nLet me know.` });
  });

  const broken = '{"decision": APPROVE, critique_severity: "MINOR", feedback: looks fine}';

  it('near-JSON read by local repair is recorded as repaired locally, the original kept, with no repair request', async () => {
    let asked = 0;
    const r = await parseStructured(ReviewOutput, broken, async () => {
      asked++;
      return good;
    });
    assert.deepEqual(r, { ok: true, value: { decision: 'APPROVE', critique_severity: 'MINOR', feedback: 'looks fine' }, repaired: true, repair: 'local', raw: broken, original: broken });
    assert.equal(asked, 0, 'policy "local": fixed here');
  });

  it('policy "request": near-JSON goes back to the model with what is wrong, and its correction is used', async () => {
    const problems: string[] = [];
    const r = await parseStructured(ReviewOutput, broken, async (problem) => {
      problems.push(problem);
      return good;
    }, { policy: 'request' });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^the answer is not valid JSON \(Unexpected token/);
    assert.ok(r.ok);
    assert.deepEqual([r.repair, r.raw, r.original], ['request', good, broken]);
    assert.equal(r.value.feedback, 'fine');
  });

  it('policy "request": a correction no better than the local reading leaves the local reading, marked local', async () => {
    const r = await parseStructured(ReviewOutput, broken, async () => 'sorry, no', { policy: 'request' });
    assert.ok(r.ok);
    assert.deepEqual([r.repair, r.value.feedback], ['local', 'looks fine']);
  });

  it('asks for a repair once, with the problem as path: message lines', async () => {
    const problems: string[] = [];
    const r = await parseStructured(ReviewOutput, '{"decision": "MAYBE"}', async (problem) => {
      problems.push(problem);
      return good;
    });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^decision: /m);
    assert.match(problems[0]!, /^critique_severity: /m);
    assert.ok(r.ok);
    assert.equal(r.repaired, true);
    assert.equal(r.repair, 'request');
    assert.equal(r.raw, good);
    assert.equal(r.original, '{"decision": "MAYBE"}');
  });

  it('returns ok:false without throwing when the repair is still invalid', async () => {
    let calls = 0;
    const r = await parseStructured(ReviewOutput, 'no json here', async () => {
      calls++;
      return '{"decision": "APPROVE"}';
    });
    assert.equal(calls, 1);
    assert.equal(r.ok, false);
    assert.equal(r.repaired, true);
    if (!r.ok) assert.match(r.error, /critique_severity/);
  });

  it('returns ok:false when the repair call itself fails', async () => {
    const r = await parseStructured(ReviewOutput, 'nothing', async () => {
      throw new Error('endpoint down');
    });
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /repair failed: endpoint down/);
  });

  it('returns ok:false without a repair function', async () => {
    const r = await parseStructured(z.object({ n: z.number() }), '{"n": "x"}');
    assert.equal(r.ok, false);
    assert.equal(r.repaired, false);
    if (!r.ok) assert.match(r.error, /^n: /);
  });
});
