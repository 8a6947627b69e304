import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Annotation, END, MessagesAnnotation, START, Send, StateGraph } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { rolloutOverlay } from '../../../src/core/analysis/graphStats';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { summariseAgents } from '../../../src/core/store/agentSummary';
import { LangChainTracer } from '../../../src/core/trace/langchainTracer';
import { RolloutTracer } from '../../../src/core/trace/tracer';
import { newTraceId } from '../../../src/core/trace/ids';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStub } from '../../fakes/openaiStub';

/*
 * A model call, tool call or node belongs to the outermost node named after an
 * agent of lab.json that holds it, however LangGraph nests it; outside every
 * such node, the innermost node names it, as it always did.
 */

const calculator = tool(async ({ expression }: { expression: string }) => String(Function(`"use strict"; return (${expression});`)()), {
  name: 'calculator',
  description: 'Evaluate an arithmetic expression.',
  schema: z.object({ expression: z.string() }),
});

/** A server that asks for the calculator once per conversation that offers it, then answers. */
async function stub(): Promise<OpenAIStub> {
  return startOpenAIStub({
    server: 'vllm',
    replies: (req) => {
      const messages = req.body.messages as Array<{ role: string }>;
      if (req.body.tools?.length && !messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'calculator', arguments: { expression: '6 * 7' } }] };
      return { content: '42' };
    },
  });
}

function model(url: string): RoutedChatModel {
  return new RoutedChatModel({
    agent: 'Solver',
    resolved: { logical: 'main', baseUrl: url, model: 'm', apiKey: 'x', timeoutMs: 10_000, maxRetries: 0, logprobs: false, tokenIds: true, version: null, simulated: false },
  });
}

interface Traced {
  spans: readonly SpanRecord[];
  of(kind: SpanRecord['kind']): Array<[string, unknown, unknown]>;
}

/** Runs a graph under the tracer with lab.json's agent names; each span as [name, agent, inner node]. */
async function trace(graph: { invoke(input: unknown, config: unknown): Promise<unknown> }, labAgents: string[], input: unknown = { messages: [new HumanMessage('6 * 7?')] }): Promise<Traced> {
  const tracer = new RolloutTracer(newTraceId(), null);
  const root = tracer.start('rollout', 'rollout', null);
  await graph.invoke(input, { callbacks: [new LangChainTracer(tracer, root, undefined, labAgents)], runName: 'rollout' });
  tracer.end(root);
  const spans = tracer.spans();
  const ordered = [...spans].sort((a, b) => a.startTime - b.startTime);
  return {
    spans,
    of: (kind) => ordered.filter((s) => s.kind === kind).map((s) => [s.name, s.attributes[Attr.agentName], s.attributes[Attr.innerNode]]),
  };
}

const agentRows = (spans: readonly SpanRecord[]): Array<[string, number, number, number]> =>
  summariseAgents(spans).map((a) => [a.agent, a.visits, a.llmCalls, a.toolCalls]);

test('createReactAgent as a node: its calls, tools and inner nodes are the lab agent\'s, the inner node kept on each span', async () => {
  const server = await stub();
  try {
    const m = model(server.url);
    const solver = createReactAgent({ llm: m, tools: [calculator] });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('Planner', async (s) => ({ messages: [new HumanMessage(`Plan: ${(await m.invoke(s.messages)).text}`)] }))
      .addNode('Solver', solver)
      .addEdge(START, 'Planner')
      .addEdge('Planner', 'Solver')
      .addEdge('Solver', END)
      .compile();

    const t = await trace(graph, ['Planner', 'Solver', 'Checker']);
    assert.deepEqual(t.of('llm'), [
      ['chat m', 'Planner', undefined],
      ['chat m', 'Solver', 'agent'],
      ['chat m', 'Solver', 'agent'],
    ]);
    assert.deepEqual(t.of('tool'), [['execute_tool calculator', 'Solver', 'tools']]);
    assert.deepEqual(t.of('node'), [
      ['Planner', 'Planner', undefined],
      ['Solver', 'Solver', undefined],
      ['agent', 'Solver', 'agent'],
      ['tools', 'Solver', 'tools'],
      ['agent', 'Solver', 'agent'],
    ]);
    assert.deepEqual(agentRows(t.spans), [
      ['Planner', 1, 1, 0],
      ['Solver', 1, 2, 1],
    ]);
    assert.deepEqual(rolloutOverlay([...t.spans]).path, ['Planner', 'Solver'], 'the graph view shows the graph\'s own nodes');

    // No lab agent holds them: the innermost node names the call, and the call the tool it asked for, as before.
    const bare = await trace(graph, []);
    assert.deepEqual(bare.of('llm').map(([, agent, inner]) => [agent, inner]), [['Planner', undefined], ['agent', undefined], ['agent', undefined]]);
    assert.deepEqual(bare.of('tool').map(([, agent, inner]) => [agent, inner]), [['agent', undefined]]);
  } finally {
    await server.close();
  }
});

test('a prebuilt agent invoked inside a node function, named like the node: one visit of that agent, not two', async () => {
  const server = await stub();
  try {
    const solver = createReactAgent({ llm: model(server.url), tools: [calculator], name: 'Solver' });
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('Solver', async (s) => ({ messages: (await solver.invoke({ messages: s.messages })).messages.slice(-1) }))
      .addEdge(START, 'Solver')
      .addEdge('Solver', END)
      .compile();
    const t = await trace(graph, ['Solver']);
    assert.deepEqual(t.of('node').map(([name]) => name), ['Solver', 'agent', 'tools', 'agent']);
    assert.deepEqual(agentRows(t.spans), [['Solver', 1, 2, 1]]);
  } finally {
    await server.close();
  }
});

test('Send fan-out: inside a lab agent\'s subgraph its tasks are that agent\'s; as the graph\'s own nodes each task is a visit', async () => {
  const server = await stub();
  try {
    const m = model(server.url);
    const Topics = Annotation.Root({ ...MessagesAnnotation.spec, topics: Annotation<string[]>({ reducer: (_a, b) => b, default: () => ['tau', 'amyloid'] }) });
    const fanOut = (target: string) => (s: typeof Topics.State) => s.topics.map((topic) => new Send(target, { ...s, messages: [new HumanMessage(topic)] }));
    const worker = async (s: typeof Topics.State) => ({ messages: [await m.invoke(s.messages)] });
    const research = new StateGraph(Topics).addNode('worker', worker).addConditionalEdges(START, fanOut('worker'), ['worker']).addEdge('worker', END).compile();
    const outer = new StateGraph(Topics).addNode('Research', research).addEdge(START, 'Research').addEdge('Research', END).compile();
    const inside = await trace(outer, ['Research']);
    assert.deepEqual(inside.of('llm').map(([, agent, inner]) => [agent, inner]), [['Research', 'worker'], ['Research', 'worker']]);
    assert.deepEqual(agentRows(inside.spans), [['Research', 1, 2, 0]]);

    const flat = new StateGraph(Topics).addNode('Worker', worker).addConditionalEdges(START, fanOut('Worker'), ['Worker']).addEdge('Worker', END).compile();
    const top = await trace(flat, ['Worker']);
    assert.deepEqual(top.of('llm').map(([, agent, inner]) => [agent, inner]), [['Worker', undefined], ['Worker', undefined]]);
    assert.deepEqual(agentRows(top.spans), [['Worker', 2, 2, 0]]);
  } finally {
    await server.close();
  }
});

test('nested graphs: the outermost lab agent wins over a lab agent nested in it; a wrapper that is no agent credits the agents inside it', async () => {
  const server = await stub();
  try {
    const m = model(server.url);
    const inner = new StateGraph(MessagesAnnotation)
      .addNode('Solver', async (s) => ({ messages: [await m.invoke(s.messages)] }))
      .addEdge(START, 'Solver')
      .addEdge('Solver', END)
      .compile();
    const team = new StateGraph(MessagesAnnotation).addNode('Team', inner).addEdge(START, 'Team').addEdge('Team', END).compile();

    const owned = await trace(team, ['Team', 'Solver']);
    assert.deepEqual(owned.of('llm').map(([, agent, inner]) => [agent, inner]), [['Team', 'Solver']]);
    assert.deepEqual(agentRows(owned.spans), [['Team', 1, 1, 0]]);

    // A subgraph whose inner node is named like the agent holding it: still one visit.
    const solo = new StateGraph(MessagesAnnotation).addNode('Solver', inner).addEdge(START, 'Solver').addEdge('Solver', END).compile();
    const same = await trace(solo, ['Solver']);
    assert.deepEqual(same.of('node'), [['Solver', 'Solver', undefined], ['Solver', 'Solver', 'Solver']]);
    assert.deepEqual(agentRows(same.spans), [['Solver', 1, 1, 0]]);
    assert.deepEqual(rolloutOverlay([...same.spans]).path, ['Solver']);

    const wrapper = await trace(team, ['Solver']);
    assert.deepEqual(wrapper.of('llm').map(([, agent, inner]) => [agent, inner]), [['Solver', undefined]]);
    assert.deepEqual(agentRows(wrapper.spans).filter(([, , calls]) => calls > 0), [['Solver', 1, 1, 0]]);
  } finally {
    await server.close();
  }
});

test('a graph that is a prebuilt agent as a whole: its calls and tools are the agent the model was made for, when that is a lab agent', async () => {
  const server = await stub();
  try {
    const whole = createReactAgent({ llm: model(server.url), tools: [calculator] });
    const t = await trace(whole, ['Solver']);
    assert.deepEqual(t.of('llm').map(([, agent, inner]) => [agent, inner]), [['Solver', 'agent'], ['Solver', 'agent']]);
    assert.deepEqual(t.of('tool').map(([, agent, inner]) => [agent, inner]), [['Solver', 'tools']]);
    assert.deepEqual(agentRows(t.spans).filter(([, , calls, tools]) => calls + tools > 0), [['Solver', 0, 2, 1]]);

    // The model's agent is no agent of the lab: the node names the call, as before.
    const other = await trace(whole, ['Checker']);
    assert.deepEqual(other.of('llm').map(([, agent, inner]) => [agent, inner]), [['agent', undefined], ['agent', undefined]]);
  } finally {
    await server.close();
  }
});
