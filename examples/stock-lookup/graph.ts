/*
 * Stock lookup: the Clerk answers a shop customer's question by calling one of
 * two catalogue tools, get_price or get_stock, with the item the question
 * names; the tool runs in a graph node of its own, `lookup` (a LangGraph
 * ToolNode), and the Responder writes the customer a one-line reply from what
 * it returned. The Clerk is the policy the lab trains (its own logical model,
 * "student"); the Responder keeps its model. The outcome is what the Clerk's
 * call returned, which reward.ts compares with what the right call returns.
 * Setup: README.md here.
 */
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { lookup } from './catalogue';

/** What Rollout Lab passes to the factory. */
interface LabContext {
  model(agent: string): BaseChatModel;
  prompt(agent: string): string;
}

// Short on purpose: the trained Clerk is a small model that reads every token of it.
export const prompts = {
  Clerk: 'Look it up: call get_price or get_stock with the item.',
  Responder: 'Answer the customer in one line from the lookup result.',
};

const Item = z.object({ item: z.string().describe('The item, as the customer names it') });
const getPrice = tool(async ({ item }) => lookup('get_price', item), { name: 'get_price', description: 'The price of an item.', schema: Item });
const getStock = tool(async ({ item }) => lookup('get_stock', item), { name: 'get_stock', description: 'How many of an item are in stock.', schema: Item });

const latest = <T>(initial: () => T) => Annotation<T>({ reducer: (_old, next) => next, default: initial });

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  question: latest(() => ''),
  reply: latest(() => ''),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});
type S = typeof State.State;

/** The graph's input: the question is the task's goal. */
export function input(task: { goal: string }): Partial<S> {
  return { question: task.goal };
}

/** What the Clerk's first call returned; null when it called no tool or the call failed (an unknown item). */
function result(state: S): string | null {
  const msg = state.messages.find((m) => ToolMessage.isInstance(m));
  return msg && ToolMessage.isInstance(msg) && msg.status !== 'error' ? msg.text : null;
}

export function outcome(state: S) {
  const answer = result(state);
  const failures = answer === null ? [{ agent: 'Clerk', error: 'no lookup returned a result (no tool call, or a call the catalogue could not answer)' }] : [];
  return { finalOutput: answer, decision: null, turns: state.turns, failures };
}

export default function createGraph(ctx: LabContext) {
  const clerk = ctx.model('Clerk');
  const withTools = clerk.bindTools?.([getPrice, getStock]) ?? clerk;
  const responder = ctx.model('Responder');

  async function ask(state: S): Promise<Partial<S>> {
    const question = new HumanMessage(state.question);
    const reply = await withTools.invoke([new SystemMessage(ctx.prompt('Clerk')), question]);
    return { messages: [question, reply], turns: 1 };
  }

  async function respond(state: S): Promise<Partial<S>> {
    const found = result(state);
    const reply = await responder.invoke([new SystemMessage(ctx.prompt('Responder')), new HumanMessage(`${state.question}\nLookup: ${found ?? 'nothing found'}`)]);
    return { reply: reply.text, turns: 1 };
  }

  const afterClerk = (state: S): string => {
    const last = state.messages.at(-1);
    return AIMessage.isInstance(last) && last.tool_calls?.length ? 'lookup' : 'Responder';
  };

  return new StateGraph(State)
    .addNode('Clerk', ask)
    .addNode('lookup', new ToolNode([getPrice, getStock], { handleToolErrors: true }))
    .addNode('Responder', respond)
    .addEdge(START, 'Clerk')
    .addConditionalEdges('Clerk', afterClerk, ['lookup', 'Responder'])
    .addEdge('lookup', 'Responder')
    .addEdge('Responder', END)
    .compile();
}
