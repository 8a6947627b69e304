import { test } from 'node:test';
import { rmSync } from 'node:fs';
import { AGENT, CUSTOMER, TOOL, assertTicketRows, runAndExport, startTicketServer, ticketLab } from './supportTicket';

/*
 * The support ticket written four ways with LangGraph.js, each a graph module
 * as a user writes one (the lab gives it its own LangGraph, LangChain and
 * zod), run through the CLI against the test server: every one must give the
 * same training rows.
 */

/** What every module starts with: the tool, returning the customer record. */
const PRELUDE = `
import { Annotation, END, MessagesAnnotation, START, Send, StateGraph } from '@langchain/langgraph';
import { ToolNode, createReactAgent } from '@langchain/langgraph/prebuilt';
import { AIMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';

const lookupCustomer = tool(
  async ({ id }) => {
    if (id !== ${JSON.stringify(CUSTOMER.id)}) throw new Error('no customer ' + id);
    return JSON.stringify(${JSON.stringify(CUSTOMER)});
  },
  { name: ${JSON.stringify(TOOL)}, description: 'Look a customer up by id.', schema: z.object({ id: z.string().describe('The customer id, e.g. C-17') }) },
);

/** One model turn of the agent, with the tool bound and the agent's prompt first. */
function supportTurn(ctx) {
  const model = ctx.model(${JSON.stringify(AGENT)}).bindTools([lookupCustomer]);
  return async (state) => ({ messages: [await model.invoke([new SystemMessage(ctx.prompt(${JSON.stringify(AGENT)})), ...state.messages])] });
}

const askedForTool = (state) => (AIMessage.isInstance(state.messages.at(-1)) && state.messages.at(-1).tool_calls?.length ? 'tools' : END);
`;

/** Each way of writing the agent: the module's body after PRELUDE. */
const GRAPHS: Record<string, string> = {
  // The LangGraph tutorial's shape: the agent's node and a ToolNode of its own, named "tools" (no agent of the lab).
  'StateGraph + ToolNode': `
export default function createGraph(ctx) {
  return new StateGraph(MessagesAnnotation)
    .addNode(${JSON.stringify(AGENT)}, supportTurn(ctx))
    .addNode('tools', new ToolNode([lookupCustomer]))
    .addEdge(START, ${JSON.stringify(AGENT)})
    .addConditionalEdges(${JSON.stringify(AGENT)}, askedForTool, ['tools', END])
    .addEdge('tools', ${JSON.stringify(AGENT)})
    .compile();
}`,
  // The prebuilt ReAct agent is the whole graph: its nodes are "agent" and "tools"; the model is the Support agent's.
  createReactAgent: `
export default function createGraph(ctx) {
  return createReactAgent({ llm: ctx.model(${JSON.stringify(AGENT)}), tools: [lookupCustomer], prompt: ctx.prompt(${JSON.stringify(AGENT)}), name: ${JSON.stringify(AGENT)} });
}`,
  // The agent is a subgraph (its own model node and ToolNode) added as the Support node of the user's graph.
  subgraph: `
export default function createGraph(ctx) {
  const agent = new StateGraph(MessagesAnnotation)
    .addNode('call_model', supportTurn(ctx))
    .addNode('tools', new ToolNode([lookupCustomer]))
    .addEdge(START, 'call_model')
    .addConditionalEdges('call_model', askedForTool, ['tools', END])
    .addEdge('tools', 'call_model')
    .compile();
  return new StateGraph(MessagesAnnotation).addNode(${JSON.stringify(AGENT)}, agent).addEdge(START, ${JSON.stringify(AGENT)}).addEdge(${JSON.stringify(AGENT)}, END).compile();
}`,
  // A router fans each ticket out with Send to the Support node, which runs the prebuilt agent inside its own function.
  'Send fan-out': `
const Tickets = Annotation.Root({ ...MessagesAnnotation.spec });
export default function createGraph(ctx) {
  const agent = createReactAgent({ llm: ctx.model(${JSON.stringify(AGENT)}), tools: [lookupCustomer], prompt: ctx.prompt(${JSON.stringify(AGENT)}) });
  const fanOut = (state) => state.messages.filter((m) => m.getType() === 'human').map((ticket) => new Send(${JSON.stringify(AGENT)}, { messages: [ticket] }));
  return new StateGraph(Tickets)
    .addNode(${JSON.stringify(AGENT)}, async (state) => ({ messages: (await agent.invoke({ messages: state.messages })).messages.slice(state.messages.length) }))
    .addConditionalEdges(START, fanOut, [${JSON.stringify(AGENT)}])
    .addEdge(${JSON.stringify(AGENT)}, END)
    .compile();
}`,
};

for (const [framework, body] of Object.entries(GRAPHS)) {
  test(`LangGraph.js, ${framework}: two Support rows, the tool call credited its AIR reward, token ids`, async () => {
    const server = await startTicketServer();
    const ws = ticketLab({ kind: 'module', module: 'graph.mjs' }, server.url, { 'graph.mjs': PRELUDE + body });
    try {
      assertTicketRows(await runAndExport(ws));
    } finally {
      await server.close();
      rmSync(ws, { recursive: true, force: true });
    }
  });
}
