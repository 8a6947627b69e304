import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { StructuredToolInterface } from '@langchain/core/tools';
import type { z } from 'zod';
import { ConfigError } from '../../errors';
import { maxTokensCutOf, truncatedError, type MaxTokensCut } from '../../llm/maxTokensCut';
import { repairRequest } from '../../llm/repairRequest';
import { outputSchemaFor, type OutputSchemaCallOption } from '../../llm/responseFormat';
import { repairPolicyOf } from '../../llm/routedChatModel';
import { parseStructured, type StructuredResult } from '../../llm/structuredOutput';
import { roleMarker } from './outputs';

// Other features (the judge's and the prompt optimiser's repairs) import it from here.

export interface AgentTurnOptions<T> {
  agent: string;
  model: BaseChatModel;
  systemPrompt: string;
  /** The agent's conversation so far (its thread in the graph state). */
  thread: BaseMessage[];
  /** The user message that opens a new visit; used unless the turn continues after tool results. */
  briefing: () => string;
  schema: z.ZodType<T>;
  /** Tools bound to the model this turn; empty when the agent has none or the turn limit is reached. */
  tools: StructuredToolInterface[];
  /** The agent has tools but may not call them any more. */
  turnLimitReached: boolean;
}

export type AgentTurnResult<T> =
  | { kind: 'tool_calls'; messages: BaseMessage[] }
  | ({ kind: 'answer'; messages: BaseMessage[] } & StructuredResult<T>);

const TURN_LIMIT_NOTE = 'The turn limit is reached: you cannot call tools any more. Answer now with your final JSON object.';

/** The messages of the current visit: from the latest briefing on. */
function currentVisit(thread: BaseMessage[]): BaseMessage[] {
  for (let i = thread.length - 1; i >= 0; i--) {
    if (HumanMessage.isInstance(thread[i])) return thread.slice(i);
  }
  return [...thread];
}

/**
 * One ReAct step of an agent: call its model on its own thread; hand back the
 * tool calls it asked for, or its parsed answer. The model is asked to enforce
 * the schema (`outputSchema`; a routed model sends it as response_format when
 * no tools are bound). An answer that does not match the schema gets one
 * repair round trip that says what was wrong; an answer the server cut at
 * max_tokens is asked again shorter, and if it still fails its error starts
 * with "truncated at max_tokens". Bad model output never throws; transport
 * errors (after the client's retries) do.
 */
export async function runAgentTurn<T>(opts: AgentTurnOptions<T>, config: RunnableConfig): Promise<AgentTurnResult<T>> {
  const last = opts.thread[opts.thread.length - 1];
  const continuing = last !== undefined && ToolMessage.isInstance(last);
  const opening = continuing ? [] : [new HumanMessage(opts.briefing())];
  // While a visit continues after tool results, its latest human message is still its briefing.
  const visit = currentVisit([...opts.thread, ...opening]);
  const note = opts.turnLimitReached ? [new HumanMessage(TURN_LIMIT_NOTE)] : [];
  const added: BaseMessage[] = [...opening, ...note];

  const system = new SystemMessage(`${roleMarker(opts.agent)}\n${opts.systemPrompt}`);
  const conversation = [system, ...visit, ...note];
  let runnable: Pick<BaseChatModel, 'invoke'> = opts.model;
  if (opts.tools.length) {
    if (!opts.model.bindTools) {
      throw new ConfigError(`the model of agent ${opts.agent} cannot call tools; remove its "tools" in lab.json or route it to a chat model that supports tool calls`);
    }
    runnable = opts.model.bindTools(opts.tools) as unknown as Pick<BaseChatModel, 'invoke'>;
  }
  const structured: RunnableConfig & OutputSchemaCallOption = { ...config, outputSchema: outputSchemaFor(opts.schema, opts.agent) };
  const reply = await runnable.invoke(conversation, structured);
  added.push(reply);

  if (opts.tools.length && reply.tool_calls?.length) return { kind: 'tool_calls', messages: added };

  // A model that ignores the missing tools and still asks for some: its text is the answer.
  const text = reply.text;
  const answered = reply.tool_calls?.length ? new AIMessage(text) : reply;
  // parseStructured turns a failed repair call into a parse failure; a transport
  // error or a cancellation must still end the rollout, so it is rethrown.
  let transportError: { error: unknown } | null = null;
  let cut: MaxTokensCut | null = maxTokensCutOf(reply);
  // A tool call cut off mid-arguments arrives as an invalid call with no text: say so rather than "empty output".
  const cutCalls = cut ? (reply.invalid_tool_calls ?? []).map((c) => c.name ?? 'tool') : [];
  const callNote = cutCalls.length ? `the arguments of its ${cutCalls.join(', ')} tool call were cut off; ` : '';
  const parsed = await parseStructured(opts.schema, text, async (problem) => {
    const request = new HumanMessage(repairRequest(`${callNote}${problem}`, opts.schema, cut));
    try {
      const fixed = await opts.model.invoke([...conversation, answered, request], structured);
      added.push(request, fixed);
      cut = maxTokensCutOf(fixed) ?? cut;
      return fixed.text;
    } catch (error) {
      transportError = { error };
      throw error;
    }
  }, { policy: repairPolicyOf(opts.model) });
  if (transportError) throw (transportError as { error: unknown }).error;
  if (!parsed.ok && cut) return { kind: 'answer', messages: added, ...parsed, error: truncatedError(cut, `${callNote}${parsed.error}`) };
  return { kind: 'answer', messages: added, ...parsed };
}
