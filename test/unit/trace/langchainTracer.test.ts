import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer } from '../../../src/core/sim/simServer';
import { roleMarker } from '../../../src/core/graph/researchLab/outputs';
import { LangChainTracer, agentOfNode } from '../../../src/core/trace/langchainTracer';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';

const lookup = tool(
  async ({ name }: { name: string }) => {
    if (name.toLowerCase().includes('unknown')) throw new Error(`no entry for ${name}`);
    return JSON.stringify({ name, function: 'binds things' });
  },
  { name: 'protein_lookup', description: 'Look up a protein', schema: z.object({ name: z.string() }) },
);
const literature = tool(async ({ query }: { query: string }) => `[{"id":"1","title":"${query}"}]`, {
  name: 'pubmed_search',
  description: 'Search the literature',
  schema: z.object({ query: z.string(), max_results: z.number().optional() }),
});

/** A user's own graph, written with plain LangGraph: an agent with a ReAct tool loop, then a writer. */
function userGraph(model: RoutedChatModel) {
  const bound = model.bindTools([lookup, literature]);
  const State = Annotation.Root({ ...MessagesAnnotation.spec, done: Annotation<boolean>() });
  return new StateGraph(State)
    .addNode('Geneticist', async (s) => ({ messages: [await bound.invoke([new SystemMessage(`${roleMarker('Geneticist')}\nPropose a hypothesis.`), ...s.messages])] }))
    .addNode('Geneticist_tools', new ToolNode([lookup, literature]))
    .addNode('Writer', async (s) => ({ messages: [await model.invoke([new SystemMessage('Summarise.'), ...s.messages.slice(0, 1)])], done: true }))
    .addEdge(START, 'Geneticist')
    .addConditionalEdges('Geneticist', (s) => ((s.messages.at(-1) as AIMessage).tool_calls?.length ? 'Geneticist_tools' : 'Writer'))
    .addEdge('Geneticist_tools', 'Geneticist')
    .addEdge('Writer', END)
    .compile();
}

test('an unmodified LangGraph graph is traced: node, llm and tool spans in one tree with GenAI attributes', async () => {
  const sim = await startSimServer({ seed: 3 });
  try {
    const model = new RoutedChatModel({
      agent: 'Geneticist',
      resolved: { logical: 'junior', baseUrl: sim.url, model: 'sim-model', apiKey: 'x', timeoutMs: 10_000, maxRetries: 0, logprobs: true, tokenIds: true, version: 'v7', simulated: true },
    });
    const graph = userGraph(model);
    let sawTool = false;
    for (let i = 0; i < 12 && !sawTool; i++) {
      const tracer = new RolloutTracer(newTraceId(), null);
      const root = tracer.start('rollout', 'rollout', null);
      const handler = new LangChainTracer(tracer, root, {
        promptVersion: (a) => (a === 'Geneticist' ? 'abc123' : null),
        model: () => ({ logical: 'junior', version: 'v7' }),
      });
      await graph.invoke({ messages: [new HumanMessage(`Does APOE4 change tau spread in case ${i}? Context: amyloid-beta and TREM2 study ${i}.`)] }, { callbacks: [handler] });
      tracer.end(root);
      const spans = tracer.spans();
      const byId = new Map(spans.map((s) => [s.spanId, s]));
      const kinds = (k: SpanRecord['kind']): SpanRecord[] => spans.filter((s) => s.kind === k);
      for (const s of spans) {
        assert.equal(s.traceId, tracer.traceId);
        if (s !== spans.at(-1)) assert.ok(s.parentSpanId && byId.has(s.parentSpanId), `${s.kind} ${s.name} has a parent in the tree`);
      }
      for (const n of kinds('node')) assert.equal(n.parentSpanId, root.spanId);
      for (const l of kinds('llm')) {
        const parent = byId.get(l.parentSpanId!)!;
        assert.equal(parent.kind, 'node');
        assert.equal(l.attributes[Attr.agentName], agentOfNode(parent.name) === 'Writer' ? 'Writer' : 'Geneticist');
        assert.equal(l.attributes[Attr.requestModel], 'sim-model');
        assert.equal(typeof l.attributes[Attr.inputTokens], 'number');
        assert.ok(Array.isArray(JSON.parse(String(l.attributes[Attr.inputMessages]))));
        assert.ok(Array.isArray(l.attributes[Attr.logprobs]), 'logprobs recorded when the server returns them');
        const ids = l.attributes[Attr.tokenIds] as number[];
        assert.ok(Array.isArray(ids) && ids.every(Number.isInteger), 'token ids recorded when asked for with tokenIds');
        assert.equal(ids.length, (l.attributes[Attr.logprobs] as number[]).length, 'one id per sampled token');
        assert.equal(l.attributes[Attr.simulated], true);
      }
      const gen = kinds('node').find((n) => n.name === 'Geneticist')!;
      assert.equal(gen.attributes[Attr.promptVersion], 'abc123');
      assert.equal(gen.attributes[Attr.modelVersion], 'v7');
      for (const t of kinds('tool')) {
        sawTool = true;
        const parent = byId.get(t.parentSpanId!)!;
        assert.equal(parent.name, 'Geneticist_tools');
        assert.equal(t.attributes[Attr.agentName], 'Geneticist');
        assert.ok(['protein_lookup', 'pubmed_search'].includes(String(t.attributes[Attr.toolName])));
        assert.ok(String(t.attributes[Attr.toolArguments]).startsWith('{'));
        assert.equal(typeof t.attributes[Attr.toolResult], 'string');
        const call = JSON.parse(String(gen.attributes[Attr.output] ?? 'null'));
        assert.equal(call, null);
      }
    }
    assert.ok(sawTool, 'the simulated model called a tool in one of the runs');
  } finally {
    await sim.close();
  }
});

test('a failing tool is an error span and an unfinished run is closed as an error', async () => {
  const tracer = new RolloutTracer(newTraceId(), null);
  const root = tracer.start('rollout', 'rollout', null);
  const handler = new LangChainTracer(tracer, root);
  const node = new ToolNode([lookup]);
  const graph = new StateGraph(MessagesAnnotation).addNode('Geneticist_tools', node).addEdge(START, 'Geneticist_tools').addEdge('Geneticist_tools', END).compile();
  await graph.invoke(
    { messages: [new AIMessage({ content: '', tool_calls: [{ id: 'c1', name: 'protein_lookup', args: { name: 'unknown-x' } }] })] },
    { callbacks: [handler] },
  );
  const toolSpan = tracer.spans().find((s) => s.kind === 'tool')!;
  assert.equal(toolSpan.status, 'error');
  assert.match(String(toolSpan.attributes[Attr.toolResult]), /no entry for unknown-x/);
  assert.equal(toolSpan.attributes[Attr.toolCallId], 'c1');

  handler.handleChainStart({ lc: 1, type: 'not_implemented', id: [] }, {}, 'run-1', undefined, [], { langgraph_node: 'Stuck' }, undefined, 'Stuck');
  handler.closeOpen('cancelled');
  const stuck = tracer.spans().find((s) => s.name === 'Stuck')!;
  assert.equal(stuck.status, 'error');
  assert.equal(stuck.statusMessage, 'cancelled');
});
