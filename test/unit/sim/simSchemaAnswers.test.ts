import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import OpenAI from 'openai';
import { z } from 'zod';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer } from '../../../src/core/sim/simServer';
import { resolvedAt, traced } from '../llm/tracedCall';

const Verdict = z.object({
  verdict: z.enum(['CORRECT', 'INCORRECT']),
  feedback: z.string().min(3),
  confidence: z.number().min(0).max(1),
  issues: z.array(z.string()).min(2),
  fix: z.string().nullable(),
});

describe('the simulated endpoint enforces response_format as grammar-constrained servers do', () => {
  it('a role it does not know gets a value of the requested JSON Schema, bare (no fences, no prose)', async () => {
    const sim = await startSimServer();
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
      const schema = z.toJSONSchema(Verdict) as Record<string, unknown>;
      for (let seed = 0; seed < 8; seed++) {
        const r = await client.chat.completions.create({
          model: 'sim',
          seed,
          messages: [
            { role: 'system', content: 'You check SQL queries.' },
            { role: 'user', content: 'Question: how many books are there?\nQuery: SELECT count(*) FROM book' },
          ],
          response_format: { type: 'json_schema', json_schema: { name: 'verdict', schema } },
        });
        const text = r.choices[0]!.message.content!;
        assert.doesNotMatch(text, /```|^[A-Za-z]/, 'bare JSON');
        assert.ok(Verdict.safeParse(JSON.parse(text)).success, text);
      }
      const obj = await client.chat.completions.create({
        model: 'sim',
        messages: [{ role: 'user', content: 'Answer with a JSON object giving your answer.' }],
        response_format: { type: 'json_object' },
      });
      assert.equal(typeof JSON.parse(obj.choices[0]!.message.content!), 'object');
    } finally {
      await sim.close();
    }
  });

  it("a user graph's withStructuredOutput gets a valid value from the simulator on the first call, no repair", async () => {
    const sim = await startSimServer();
    try {
      const model = new RoutedChatModel({ resolved: resolvedAt(sim.url, { simulated: true }), agent: 'Checker' });
      const { output, llm } = await traced(model.withStructuredOutput(Verdict, { name: 'verdict' }), [
        new SystemMessage('You check SQL queries.'),
        new HumanMessage('Question: which members live in Leeds?\nQuery: SELECT name FROM member'),
      ]);
      assert.ok(Verdict.safeParse(output).success);
      assert.equal(llm.length, 1, 'one call: the answer validated at once');
      assert.equal(llm[0]!.attributes['rollout_lab.structured_output'], 'json_schema');
    } finally {
      await sim.close();
    }
  });
});
