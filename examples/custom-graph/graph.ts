/*
 * A custom graph for Rollout Lab: a Writer drafts an answer (it may count its
 * words with a tool first), a Critic approves it or asks for a revision.
 *
 * Use it from .rollout-lab/lab.json:
 *   "graph": { "kind": "module", "module": "examples/custom-graph/graph.ts" },
 *   "agents": { "Writer": { "model": "senior" }, "Critic": { "model": "strong" } }
 *
 * Rollout Lab bundles this file with esbuild and gives it its own LangGraph,
 * LangChain and zod, so every model and tool call is traced with no tracing
 * code here. The default export is a factory that receives the routed models,
 * the lab's tools, the prompts and the turn limit. The final state uses the
 * conventional keys Rollout Lab scores: `final_output`, `decision`, `turns`.
 */
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool, type StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';

/** What Rollout Lab passes to the factory. */
interface LabContext {
  model(agentOrLogicalName: string): BaseChatModel;
  tools: Record<string, StructuredToolInterface>;
  prompt(agent: string): string;
  maxTurns: number;
}

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  draft: Annotation<string>({ reducer: (_a, b) => b, default: () => '' }),
  decision: Annotation<string | null>({ reducer: (_a, b) => b, default: () => null }),
  final_output: Annotation<string | null>({ reducer: (_a, b) => b, default: () => null }),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
});
type S = typeof State.State;

const wordCount = tool(async ({ text }: { text: string }) => String(text.split(/\s+/).filter(Boolean).length), {
  name: 'word_count',
  description: 'Count the words in a piece of text.',
  schema: z.object({ text: z.string().describe('The text to count') }),
});

const WRITER_PROMPT =
  'You write a short, well-grounded answer (at most 120 words) to the research question, using only the context given. ' +
  'If a critic asked for changes, address each one. Reply with the answer text only.';
const CRITIC_PROMPT =
  'You check an answer against the question and its context. Reply with one JSON object with the keys "verdict" ' +
  '("APPROVE" or "REVISE") and "feedback" (what to change).';

function promptOr(ctx: LabContext, agent: string, fallback: string): string {
  try {
    return ctx.prompt(agent);
  } catch {
    return fallback; // the agent has no prompt in lab.json: use the built-in one
  }
}

export default function createGraph(ctx: LabContext) {
  const tools = [wordCount];
  const writer = ctx.model('Writer');
  const critic = ctx.model('Critic');

  async function write(state: S) {
    const bound = writer.bindTools ? writer.bindTools(tools) : writer;
    const system = new SystemMessage(`[agent: Writer]\n${promptOr(ctx, 'Writer', WRITER_PROMPT)}`);
    const reply = await bound.invoke([system, ...state.messages]);
    const draft = reply.tool_calls?.length ? state.draft : reply.text;
    return { messages: [reply], draft, turns: 1 };
  }

  async function critique(state: S) {
    const system = new SystemMessage(`[agent: Critic]\n${promptOr(ctx, 'Critic', CRITIC_PROMPT)}`);
    const question = state.messages.find((m) => m.getType() === 'human')?.text ?? '';
    const reply = await critic.invoke([system, new HumanMessage(`${question}\n\nAnswer to check:\n${state.draft}`)]);
    const verdict = /REVISE/i.test(reply.text) ? 'REVISE' : 'APPROVE';
    // The critique goes back to the writer as a user turn.
    const note = new HumanMessage(`Critic: ${reply.text}`);
    return { messages: verdict === 'REVISE' ? [note] : [], decision: verdict, final_output: state.draft, turns: 1 };
  }

  const afterWriter = (state: S) => {
    const last = state.messages[state.messages.length - 1];
    return last instanceof AIMessage && last.tool_calls?.length && state.turns < ctx.maxTurns ? 'tool call' : 'draft';
  };
  const afterCritic = (state: S) => (state.decision === 'REVISE' && state.turns < ctx.maxTurns ? 'revise' : 'done');

  return new StateGraph(State)
    .addNode('Writer', write)
    .addNode('Writer_tools', new ToolNode(tools))
    .addNode('Critic', critique)
    .addEdge(START, 'Writer')
    .addConditionalEdges('Writer', afterWriter, { 'tool call': 'Writer_tools', draft: 'Critic' })
    .addEdge('Writer_tools', 'Writer')
    .addConditionalEdges('Critic', afterCritic, { revise: 'Writer', done: END })
    .compile();
}
