/*
 * Ticket routing: the Router reads a short support ticket and names the queue
 * that handles it (bill, ship, tech or user); the Responder writes the
 * customer a one-line acknowledgement naming that queue. The Router is the
 * policy the lab trains (its own logical model, "student"); the Responder
 * keeps its model. The outcome is the Router's queue, which reward.ts checks.
 * Setup: README.md here.
 */
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';

/** What Rollout Lab passes to the factory. */
interface LabContext {
  model(agent: string): BaseChatModel;
  prompt(agent: string): string;
}

// Short on purpose: the trained Router reads bytes, one token each.
export const prompts = {
  Router: 'Route: bill, ship, tech or user.',
  Responder: 'Tell the customer in one line which team has their ticket.',
};

const latest = <T>(initial: () => T) => Annotation<T>({ reducer: (_old, next) => next, default: initial });

const State = Annotation.Root({
  ticket: latest(() => ''),
  queue: latest<string | null>(() => null),
  reply: latest(() => ''),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});
type S = typeof State.State;

/** The graph's input: the ticket text is the task's goal. */
export function input(task: { goal: string }): Partial<S> {
  return { ticket: task.goal };
}

export function outcome(state: S) {
  return { finalOutput: state.queue, decision: null, turns: state.turns, failures: [] };
}

export default function createGraph(ctx: LabContext) {
  const router = ctx.model('Router');
  const responder = ctx.model('Responder');

  async function route(state: S): Promise<Partial<S>> {
    const reply = await router.invoke([new SystemMessage(ctx.prompt('Router')), new HumanMessage(state.ticket)]);
    // The first word of the answer, lower-case: "ship" and "Ship." route alike.
    const queue = reply.text.trim().toLowerCase().match(/^[a-z]+/)?.[0] ?? null;
    return { queue, turns: 1 };
  }

  async function respond(state: S): Promise<Partial<S>> {
    const reply = await responder.invoke([new SystemMessage(ctx.prompt('Responder')), new HumanMessage(`${state.ticket}\nQueue: ${state.queue ?? 'none'}`)]);
    return { reply: reply.text, turns: 1 };
  }

  return new StateGraph(State).addNode('Router', route).addNode('Responder', respond).addEdge(START, 'Router').addEdge('Router', 'Responder').addEdge('Responder', END).compile();
}
