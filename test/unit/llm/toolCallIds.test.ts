import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { uniqueToolCallIds } from '../../../src/core/llm/toolCallIds';
import { newTraceId } from '../../../src/core/trace/ids';
import { LangChainTracer } from '../../../src/core/trace/langchainTracer';
import { Attr } from '../../../src/core/trace/span';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { startOpenAIStub, type OpenAIStub, type StubQuirks } from '../../fakes/openaiStub';
import { resolvedAt } from './tracedCall';

let stub: OpenAIStub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
});

/** A ReAct loop written the plain LangGraph way: model ⇄ ToolNode until the model stops calling tools. */
function reactGraph(model: RoutedChatModel, ran: string[]) {
  const lookup = tool(
    async ({ q }: { q: string }) => {
      ran.push(q);
      return `result for ${q}`;
    },
    { name: 'lookup', description: 'Look something up.', schema: z.object({ q: z.string() }) },
  );
  const bound = model.bindTools([lookup]);
  return new StateGraph(MessagesAnnotation)
    .addNode('Geneticist', async (s) => ({ messages: [await bound.invoke(s.messages)] }))
    .addNode('Geneticist_tools', new ToolNode([lookup]))
    .addEdge(START, 'Geneticist')
    .addConditionalEdges('Geneticist', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'Geneticist_tools' : END))
    .addEdge('Geneticist_tools', 'Geneticist')
    .compile();
}

const call = (q: string) => ({ name: 'lookup', arguments: { q } });
const start = [new SystemMessage('[agent: Geneticist]\nUse the tool.'), new HumanMessage('Does APOE4 raise amyloid?')];

async function runLoop(quirk: StubQuirks['toolCallIds'], rounds: Array<Array<{ name: string; arguments: { q: string } }>>) {
  stub = await startOpenAIStub({ server: 'llama.cpp', quirks: { toolCallIds: quirk }, replies: [...rounds.map((toolCalls) => ({ toolCalls })), { content: 'done' }] });
  const ran: string[] = [];
  const tracer = new RolloutTracer(newTraceId(), null);
  const root = tracer.start('rollout', 'rollout', null);
  const state = await reactGraph(new RoutedChatModel({ resolved: resolvedAt(stub.url), agent: 'Geneticist' }), ran).invoke(
    { messages: start },
    { callbacks: [new LangChainTracer(tracer, root)] },
  );
  tracer.end(root);
  return { ran, messages: state.messages as BaseMessage[], llm: tracer.spans().filter((s) => s.kind === 'llm') };
}

function askedIds(messages: BaseMessage[]): string[] {
  return messages.flatMap((m) => (AIMessage.isInstance(m) ? (m.tool_calls ?? []).map((c) => c.id ?? '') : []));
}

describe('tool-call ids from the server', () => {
  it('a LangGraph ToolNode loop runs every round against a server that sends empty ids (llama.cpp)', async () => {
    const { ran, messages, llm } = await runLoop('empty', [[call('apoe4')], [call('amyloid')], [call('tau')]]);
    assert.deepEqual(ran, ['apoe4', 'amyloid', 'tau'], 'each round ran its tool once');
    const ids = askedIds(messages);
    assert.equal(new Set(ids).size, 3);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9]{9}$/, 'readable by strict templates (Mistral: 9 letters and digits)');
    const answered = messages.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id);
    assert.deepEqual(answered, ids, 'every tool result answers the call that asked for it');
    // What went back to the server pairs each call with its result.
    const last = stub!.requests.at(-1)!.body.messages as Array<{ role: string; tool_call_id?: string; tool_calls?: Array<{ id: string }> }>;
    assert.deepEqual(last.filter((m) => m.role === 'tool').map((m) => m.tool_call_id), ids);
    assert.deepEqual(last.flatMap((m) => m.tool_calls?.map((c) => c.id) ?? []), ids);
    assert.deepEqual(llm.slice(0, 3).map((s) => s.attributes[Attr.toolCallOriginalIds]), [[''], [''], ['']], 'the server ids are kept on the llm span');
    assert.equal(llm[3]!.attributes[Attr.toolCallOriginalIds], undefined);
  });

  for (const quirk of ['missing', 'duplicate', 'restart'] as const) {
    it(`ids that are ${quirk} come out unique across the whole conversation`, async () => {
      const { ran, messages, llm } = await runLoop(quirk, [
        [call('a'), call('b')],
        [call('c'), call('d')],
      ]);
      assert.deepEqual(ran.sort(), ['a', 'b', 'c', 'd']);
      const ids = askedIds(messages);
      assert.equal(new Set(ids).size, 4, `ids: ${ids.join(', ')}`);
      const original = llm.slice(0, 2).map((s) => s.attributes[Attr.toolCallOriginalIds]);
      const expected = { missing: [['', ''], ['', '']], duplicate: [['call_0', 'call_0'], ['call_0', 'call_0']], restart: [null, ['call_0', 'call_1']] }[quirk];
      assert.deepEqual(original.map((o) => o ?? null), expected);
    });
  }

  it('keeps ids that are already unique and records nothing', async () => {
    const { messages, llm } = await runLoop('unique', [[call('a'), call('b')], [call('c')]]);
    assert.deepEqual(askedIds(messages), ['call_0', 'call_1', 'call_2']);
    assert.ok(llm.every((s) => s.attributes[Attr.toolCallOriginalIds] === undefined));
  });

  it('gives the same replacement ids when a conversation is replayed', () => {
    const wire = [
      { id: '', type: 'function' as const, function: { name: 'lookup', arguments: '{"q":"a"}' } },
      { id: '', type: 'function' as const, function: { name: 'lookup', arguments: '{"q":"b"}' } },
    ];
    const taken = new Set(['abc123def']);
    const first = uniqueToolCallIds(wire, taken);
    const again = uniqueToolCallIds(wire, taken);
    assert.deepEqual(first.calls.map((c) => c.id), again.calls.map((c) => c.id));
    assert.deepEqual(first.originalIds, ['', '']);
    assert.ok(!first.calls.some((c) => taken.has(c.id)));
  });

  it('gives agents that make the same first call in parallel different ids, so each tool stays its own agent\'s', () => {
    const wire = [{ id: '', type: 'function' as const, function: { name: 'pubmed_search', arguments: '{"query":"tau"}' } }];
    const geneticist = uniqueToolCallIds(wire, new Set(), 'Geneticist').calls[0]!.id;
    const neurologist = uniqueToolCallIds(wire, new Set(), 'Neurologist').calls[0]!.id;
    assert.notEqual(geneticist, neurologist);
  });
});
