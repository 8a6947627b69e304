/*
 * Text-to-SQL on sql.js, shaped like Agent Lightning's SQL agent: the
 * SqlWriter writes a SQLite query for a question, the Checker judges it
 * against the question and what it returns on the database, and the Rewriter
 * fixes a query the Checker calls INCORRECT, back to the Checker until it
 * says CORRECT or the turn limit is reached. The writers may try queries
 * first with the run_sql tool, which runs in its own graph node, `execute`.
 *
 * The agents see the question, the db_id and the schema read from the
 * database; the gold query goes to reward.ts alone. Setup: README.md here.
 */
import { Annotation, END, MessagesAnnotation, REMOVE_ALL_MESSAGES, START, StateGraph, getCurrentTaskInput } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { OutputParserException } from '@langchain/core/output_parsers';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { describeDatabase, formatResult, runQuery } from './taskDatabase';

/** What Rollout Lab passes to the factory. */
interface LabContext {
  model(agent: string): BaseChatModel;
  prompt(agent: string): string;
  maxTurns: number;
}

type Writer = 'SqlWriter' | 'Rewriter';
type Verdict = 'CORRECT' | 'INCORRECT';
/** A parsed answer as the lab's output.valid / output.invalid AIR rules read it. */
type ParsedAnswer = { ok: true; value: unknown } | { ok: false; error: string };

export const prompts = {
  SqlWriter:
    'You write one SQLite query that answers a question about a database. You are given the question, the database name, and its ' +
    'schema with the first rows of each table. You may call run_sql to try queries on the database first. Answer with the final ' +
    'query alone in a ```sql code block: one SELECT statement that returns exactly the columns the question asks for.',
  Checker:
    'You check a SQLite query written to answer a question. You are given the question, the schema, the query and what it returned ' +
    'on the database (or its error). Decide whether it answers the question exactly: the right rows and only the columns asked for. ' +
    'Answer with JSON: {"verdict": "CORRECT" or "INCORRECT", "feedback": what is wrong and how to fix it, empty when CORRECT}.',
  Rewriter:
    'You fix a SQLite query that a checker found INCORRECT. You are given the question, the schema, the query, what it returned and ' +
    "the checker's feedback. You may call run_sql to try queries on the database first. Answer with the corrected query alone in a " +
    '```sql code block: one SELECT statement.',
};

const VerdictSchema = z.object({
  verdict: z.enum(['CORRECT', 'INCORRECT']).describe('Whether the query answers the question exactly'),
  feedback: z.string().describe('What is wrong and how to fix it; empty when CORRECT'),
});

const latest = <T>(initial: () => T) => Annotation<T>({ reducer: (_old, next) => next, default: initial });

const State = Annotation.Root({
  // The conversation of the agent writing SQL now: the SqlWriter's, then each Rewriter round's own.
  ...MessagesAnnotation.spec,
  question: latest(() => ''),
  db_id: latest(() => ''),
  sql: latest<string | null>(() => null),
  /** What the Checker saw the query return, for the Rewriter. */
  execution: latest(() => ''),
  verdict: latest<Verdict | null>(() => null),
  feedback: latest(() => ''),
  /** Who gets the run_sql results back. */
  writer: latest<Writer>(() => 'SqlWriter'),
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  failures: Annotation<Array<{ agent: string; error: string }>>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  lastOutput: latest<ParsedAnswer | null>(() => null),
});
type S = typeof State.State;

/** The graph's input: the visible task holds the question (goal) and db_id, which lab.json declares visible. */
export function input(task: { goal: string; db_id?: unknown }): Partial<S> {
  if (typeof task.db_id !== 'string' || !task.db_id) {
    throw new Error('the task has no db_id: declare it visible in .rollout-lab/lab.json ("fields": {"visible": ["db_id"]} under the dataset)');
  }
  return { question: task.goal, db_id: task.db_id };
}

export function outcome(state: S) {
  return { finalOutput: state.sql, decision: state.verdict, turns: state.turns, failures: state.failures };
}

/** The last ```sql block of an answer, or the whole answer when it is a bare query; null when neither is a SELECT. */
function extractSql(text: string): string | null {
  const blocks = [...text.matchAll(/```[a-z]*\s*([\s\S]*?)```/gi)];
  const candidate = (blocks.at(-1)?.[1] ?? text).trim().replace(/;\s*$/, '').trim();
  return /^(select|with)\b/i.test(candidate) ? candidate : null;
}

const runSql = tool(
  async ({ sql }: { sql: string }, config) => {
    // The database is the task's: read from the graph state, so the model cannot pick another one.
    const { db_id } = getCurrentTaskInput<S>(config);
    const result = await runQuery(db_id, sql);
    // Thrown, it becomes a ToolMessage with status "error", which the tool.error AIR rule sees.
    if (!result.ok) throw new Error(result.error);
    return formatResult(result);
  },
  {
    name: 'run_sql',
    description: "Run one SQLite query on the task's database and see what it returns (the first 20 rows).",
    schema: z.object({ sql: z.string().describe('One SQLite SELECT statement') }),
  },
);

async function taskText(state: S): Promise<string> {
  return `Question: ${state.question}\nDatabase: ${state.db_id}\n\nSchema:\n${await describeDatabase(state.db_id)}`;
}

export default function createGraph(ctx: LabContext) {
  const models = { SqlWriter: ctx.model('SqlWriter'), Rewriter: ctx.model('Rewriter') };
  const checker = ctx.model('Checker').withStructuredOutput(VerdictSchema, { name: 'verdict' });

  function writerNode(agent: Writer) {
    const model = models[agent];
    const withTools = model.bindTools?.([runSql]) ?? model;
    return async (state: S): Promise<Partial<S>> => {
      // Back from `execute` the writer goes on with its conversation; otherwise it starts its own.
      const resuming = state.writer === agent && ToolMessage.isInstance(state.messages.at(-1));
      const start = resuming ? [] : [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new HumanMessage(await roundText(agent, state))];
      const conversation = resuming ? state.messages : start.slice(1);
      // On the last turn it gets no tools, so it has to answer with a query.
      const lastTurn = state.turns + 1 >= ctx.maxTurns;
      const reply = await (lastTurn ? model : withTools).invoke([new SystemMessage(ctx.prompt(agent)), ...conversation]);
      const update: Partial<S> = { messages: [...start, reply], writer: agent, turns: 1 };
      if (reply.tool_calls?.length) return update;
      const sql = extractSql(reply.text);
      if (sql) return { ...update, sql, lastOutput: { ok: true, value: sql } };
      const error = 'the answer holds no SQL query; expected one SELECT statement in a ```sql block';
      return { ...update, lastOutput: { ok: false, error }, failures: [{ agent, error }] };
    };
  }

  async function roundText(agent: Writer, state: S): Promise<string> {
    const task = await taskText(state);
    if (agent === 'SqlWriter') return task;
    return `${task}\n\nQuery:\n\`\`\`sql\n${state.sql}\n\`\`\`\n\nResult:\n${state.execution}\n\nChecker's feedback: ${state.feedback}`;
  }

  async function check(state: S): Promise<Partial<S>> {
    const execution = formatResult(await runQuery(state.db_id, state.sql!));
    const request = new HumanMessage(`${await taskText(state)}\n\nQuery:\n\`\`\`sql\n${state.sql}\n\`\`\`\n\nResult:\n${execution}`);
    try {
      const answer = await checker.invoke([new SystemMessage(ctx.prompt('Checker')), request]);
      return { execution, verdict: answer.verdict, feedback: answer.feedback, turns: 1, lastOutput: { ok: true, value: answer } };
    } catch (err) {
      // An answer that stays unparseable after the model's repair ends the rollout with the query as it is; other errors fail it.
      if (!(err instanceof OutputParserException)) throw err;
      return { execution, turns: 1, lastOutput: { ok: false, error: err.message }, failures: [{ agent: 'Checker', error: err.message }] };
    }
  }

  const afterWriter = (state: S): string => {
    const last = state.messages.at(-1);
    if (AIMessage.isInstance(last) && last.tool_calls?.length) return 'execute';
    return state.lastOutput?.ok && state.turns < ctx.maxTurns ? 'Checker' : END;
  };
  const afterChecker = (state: S): string =>
    state.lastOutput?.ok && state.verdict === 'INCORRECT' && state.turns < ctx.maxTurns ? 'Rewriter' : END;

  return new StateGraph(State)
    .addNode('SqlWriter', writerNode('SqlWriter'))
    .addNode('execute', new ToolNode([runSql]))
    .addNode('Checker', check)
    .addNode('Rewriter', writerNode('Rewriter'))
    .addEdge(START, 'SqlWriter')
    .addConditionalEdges('SqlWriter', afterWriter, ['execute', 'Checker', END])
    .addConditionalEdges('execute', (state: S) => state.writer, ['SqlWriter', 'Rewriter'])
    .addConditionalEdges('Checker', afterChecker, ['Rewriter', END])
    .addConditionalEdges('Rewriter', afterWriter, ['execute', 'Checker', END])
    .compile();
}
