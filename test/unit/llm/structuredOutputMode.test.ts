import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { OutputParserException } from '@langchain/core/output_parsers';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { HypothesisOutput, PrincipalOutput, ProtocolOutput, SupervisorOutput } from '../../../src/core/graph/researchLab/outputs';
import { LlmCallError } from '../../../src/core/llm/llmErrors';
import { outputSchemaFor } from '../../../src/core/llm/responseFormat';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer } from '../../../src/core/sim/simServer';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';
import { resolvedAt, traced } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

const ask = [new SystemMessage('[agent: Geneticist]\nPropose a hypothesis as JSON.'), new HumanMessage('Does APOE4 raise amyloid-beta?')];
const hypothesis = { hypothesis: 'APOE4 raises amyloid-beta.', supporting_papers: ['PMID 1'] };
const outputSchema = outputSchemaFor(HypothesisOutput, 'Geneticist');

describe('the JSON Schema sent for an answer', () => {
  it('is strict where OpenAI accepts it, and drops what strict mode rejects', () => {
    const h = outputSchemaFor(HypothesisOutput, 'Geneticist');
    assert.equal(h.strict, true);
    assert.deepEqual(h.schema, {
      type: 'object',
      properties: { hypothesis: { type: 'string' }, supporting_papers: { type: 'array', items: { type: 'string' } } },
      required: ['hypothesis', 'supporting_papers'],
      additionalProperties: false,
    });
    assert.equal(outputSchemaFor(ProtocolOutput, 'ProtocolDesigner').strict, true);
    assert.deepEqual(outputSchemaFor(SupervisorOutput, 'Supervisor').schema.properties, {
      selected_hypothesis_index: { type: 'integer', minimum: 0 },
      justification: { type: 'string' },
    });
    assert.equal(outputSchemaFor(PrincipalOutput, 'PrincipalInvestigator').strict, false, 'a free-form object cannot be strict');
    assert.equal(outputSchemaFor(HypothesisOutput, 'a judge / v2').name, 'a_judge_v2');
    const keyed = outputSchemaFor(z.object({ default: z.string().min(1) }), 'x');
    assert.deepEqual(keyed.schema.properties, { default: { type: 'string' } }, 'a property named like a keyword stays');
  });
});

describe('structured output on the wire', () => {
  it('sends response_format json_schema by default and records the mode on the llm span', async () => {
    stub = await startOpenAIStub({ replies: [{ json: hypothesis }] });
    const { llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }), ask, { outputSchema });
    assert.deepEqual(stub.requests[0]!.body.response_format, { type: 'json_schema', json_schema: { name: 'Geneticist', schema: outputSchema.schema, strict: true } });
    assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'json_schema');
    assert.equal(llm[0]!.attributes[Attr.structuredOutputFallback], undefined);
  });

  it('sends json_object, or nothing for "off", as the model is configured', async () => {
    stub = await startOpenAIStub({ replies: () => ({ json: hypothesis }) });
    const { llm: objectSpans } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url, { structuredOutput: 'json_object' }) }), ask, { outputSchema });
    const { llm: offSpans } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url, { structuredOutput: 'off' }) }), ask, { outputSchema });
    await new RoutedChatModel({ resolved: resolvedAt(stub.url) }).invoke(ask);
    assert.deepEqual(stub.requests[0]!.body.response_format, { type: 'json_object' });
    assert.equal(stub.requests[1]!.body.response_format, undefined);
    assert.equal(stub.requests[2]!.body.response_format, undefined, 'no schema asked, no format sent');
    assert.equal(objectSpans[0]!.attributes[Attr.structuredOutput], 'json_object');
    assert.equal(offSpans[0]!.attributes[Attr.structuredOutput], 'off');
  });

  it('never sends a format together with tools: a server that rejects the pair still answers', async () => {
    stub = await startOpenAIStub({ quirks: { rejectsFormatWithTools: true }, replies: [{ toolCalls: [{ name: 'pubmed_search', arguments: { query: 'APOE4' } }] }] });
    const search = tool(async () => '[]', { name: 'pubmed_search', description: 'Search.', schema: z.object({ query: z.string() }) });
    const { llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }).bindTools([search]), ask, { outputSchema });
    assert.equal(stub.requests[0]!.body.response_format, undefined);
    assert.equal(llm[0]!.status, 'ok');
    assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'off');
  });

  it('falls back when LM Studio rejects json_object with HTTP 400, records why, and skips it on later calls', async () => {
    stub = await startOpenAIStub({ server: 'lmstudio', replies: () => ({ content: JSON.stringify(hypothesis) }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { structuredOutput: 'json_object' }) });
    const first = await traced(model, ask, { outputSchema });
    assert.deepEqual(stub.requests.map((r) => r.body.response_format?.type ?? null), ['json_object', null]);
    assert.equal(first.llm[0]!.attributes[Attr.structuredOutput], 'off');
    assert.match(String(first.llm[0]!.attributes[Attr.structuredOutputFallback]), /rejected response_format json_object \(.*must be 'json_schema'/);
    const second = await traced(model, ask, { outputSchema });
    assert.equal(stub.requests.length, 3, 'the second call went straight to what works');
    assert.equal(stub.requests[2]!.body.response_format, undefined);
    assert.equal(second.llm[0]!.attributes[Attr.structuredOutput], 'off');
    assert.match(String(second.llm[0]!.attributes[Attr.structuredOutputFallback]), /json_object/);
  });

  it('falls back from json_schema to json_object on a server that only knows json_object (older llama.cpp)', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', quirks: { responseFormats: ['json_object'] }, replies: () => ({ json: hypothesis }) });
    const { output, llm } = await traced(new RoutedChatModel({ resolved: resolvedAt(stub.url) }), ask, { outputSchema });
    assert.deepEqual(stub.requests.map((r) => r.body.response_format?.type), ['json_schema', 'json_object']);
    assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'json_object');
    assert.deepEqual(JSON.parse(String((output as { content: string }).content)), hypothesis);
  });

  it('a json_schema one schema could not take is skipped for that schema only, not for every agent', async () => {
    // A server that cannot turn one schema into a grammar (the Supervisor's) but takes the others.
    stub = await startOpenAIStub({
      replies: (req) => {
        const format = req.body.response_format as { type?: string; json_schema?: { name?: string } } | undefined;
        if (format?.json_schema?.name === 'Supervisor') return { error: { status: 400, message: 'failed to convert the schema to a grammar' } };
        return { content: JSON.stringify(format?.json_schema?.name === 'Supervisor' || format?.type === 'json_object' ? { selected_hypothesis_index: 0, justification: 'x' } : hypothesis) };
      },
    });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url) });
    const supervisor = outputSchemaFor(SupervisorOutput, 'Supervisor');
    await traced(model, ask, { outputSchema: supervisor });
    await traced(model, ask, { outputSchema: supervisor });
    const { llm } = await traced(model, ask, { outputSchema });
    assert.deepEqual(stub.requests.map((r) => r.body.response_format?.type ?? null), ['json_schema', 'json_object', 'json_object', 'json_schema']);
    assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'json_schema', "the Geneticist's schema is still enforced");
  });

  it('reports a 400 that is not about the format, after trying without it', async () => {
    stub = await startOpenAIStub({ replies: () => ({ error: { status: 400, message: 'context length exceeded' } }) });
    await assert.rejects(new RoutedChatModel({ resolved: resolvedAt(stub.url) }).invoke(ask, { outputSchema }), (err: unknown) => {
      assert.ok(err instanceof LlmCallError);
      assert.equal(err.status, 400);
      assert.match(err.message, /context length exceeded/);
      return true;
    });
    assert.deepEqual(stub.requests.map((r) => r.body.response_format?.type ?? null), ['json_schema', 'json_object', null]);
  });

  it('the simulated endpoint answers requests with response_format and top_logprobs 0', async () => {
    const sim = await startSimServer({ seed: 2 });
    try {
      const model = new RoutedChatModel({ resolved: resolvedAt(sim.url, { simulated: true, logprobs: true, topLogprobs: 0 }) });
      const { llm } = await traced(model, ask, { outputSchema });
      assert.equal(llm[0]!.status, 'ok');
      assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'json_schema');
    } finally {
      await sim.close();
    }
  });
});

describe('RoutedChatModel.withStructuredOutput', () => {
  it('enforces the schema the configured way and returns the validated value', async () => {
    stub = await startOpenAIStub({ server: 'llama.cpp', replies: () => ({ json: hypothesis }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url) });
    const { output, llm } = await traced(model.withStructuredOutput(HypothesisOutput, { name: 'hypothesis' }), ask);
    assert.deepEqual(output, hypothesis);
    assert.equal(stub.requests[0]!.body.response_format.json_schema.name, 'hypothesis');
    assert.equal(llm[0]!.attributes[Attr.structuredOutput], 'json_schema');
    const raw = await model.withStructuredOutput(HypothesisOutput, { includeRaw: true }).invoke(ask);
    assert.deepEqual(raw.parsed, hypothesis);
    assert.equal(typeof raw.raw.content, 'string');
  });

  it('takes a plain JSON Schema too', async () => {
    stub = await startOpenAIStub({ replies: () => ({ json: { answer: 'yes' } }) });
    const schema = { title: 'decision', type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };
    const out = await new RoutedChatModel({ resolved: resolvedAt(stub.url) }).withStructuredOutput(schema).invoke(ask);
    assert.deepEqual(out, { answer: 'yes' });
    assert.equal(stub.requests[0]!.body.response_format.json_schema.name, 'decision');
  });

  it('repairs once, then throws an error that says what is wrong', async () => {
    stub = await startOpenAIStub({ replies: () => ({ content: 'I think APOE4 matters.' }) });
    const model = new RoutedChatModel({ resolved: resolvedAt(stub.url, { structuredOutput: 'off' }) });
    await assert.rejects(model.withStructuredOutput(HypothesisOutput).invoke(ask), (err: unknown) => {
      assert.ok(err instanceof OutputParserException);
      assert.match(err.message, /the answer of model 'small' does not match the answer schema after one repair: no JSON object/);
      return true;
    });
    assert.equal(stub.requests.length, 2);
    assert.match(String(stub.requests[1]!.body.messages.at(-1).content), /"hypothesis", "supporting_papers"/);
  });
});
