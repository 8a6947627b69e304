import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import type { RunnableConfig } from '@langchain/core/runnables';
import { JUDGE_MARKER, JUDGE_SCALE, judgeJsonSchema, judgeKeysLine, judgeOutputSchema } from './judgeSchema';
import { maxTokensCutOf, truncatedError, type MaxTokensCut } from '../llm/maxTokensCut';
import { repairRequest } from '../llm/repairRequest';
import { outputSchemaOf, type OutputSchemaCallOption } from '../llm/responseFormat';
import { RoutedChatModel, repairPolicyOf } from '../llm/routedChatModel';
import { parseStructured, type RepairKind } from '../llm/structuredOutput';
import { contentText } from '../llm/messageConversion';
import { errorMessage } from '../errors';
import { clamp01 } from './weighted';

export interface JudgeInput {
  goal: string;
  context: string;
  output: string;
  criteria: Record<string, { description: string }>;
  /** Replaces the built-in instructions (config reward.judge.promptText). */
  instructions?: string;
}

export interface JudgeVerdict {
  scores: Record<string, number>;
  rationale: string;
  failed: boolean;
  error?: string;
  /** The answer needed repair: 'local' (near-JSON fixed here) or 'request' (the model was asked to correct it); null when none. */
  repaired: boolean;
  repair: RepairKind | null;
}

const INSTRUCTIONS = `You are an impartial scientific reviewer scoring an experimental protocol written for a research question.
Score each criterion as an integer from 0 (absent or wrong) to ${JUDGE_SCALE} (excellent), judging only what the protocol states.
Penalise claims the context does not support. Reply with JSON only.`;

export function judgeMessages(input: JudgeInput): BaseMessage[] {
  const keys = Object.keys(input.criteria);
  const criteria = Object.entries(input.criteria)
    .map(([k, c]) => `- ${k}: ${c.description}`)
    .join('\n');
  return [
    new SystemMessage(`${JUDGE_MARKER}\n${input.instructions ?? INSTRUCTIONS}`),
    new HumanMessage(
      `Research question:\n${input.goal}\n\nContext:\n${input.context}\n\nProtocol to score:\n${input.output}\n\nCriteria:\n${criteria}\n\n${judgeKeysLine(keys)}`,
    ),
  ];
}

/** " (model 'judge' = qwen2.5:7b at http://…)": which server answered, so a server whose grammar lets bad values through is named. */
function judgeServer(model: BaseChatModel): string {
  if (!(model instanceof RoutedChatModel)) return '';
  const { logical, model: served, baseUrl } = model.resolved;
  return ` (model '${logical}'${served && served !== logical ? ` = ${served}` : ''} at ${baseUrl})`;
}

/**
 * Asks the judge model for per-criterion scores, asking the model to enforce
 * their schema (response_format on a routed model). Output that is not the
 * JSON asked for gets one repair round trip (asking for a shorter answer when
 * it was cut at max_tokens); after that, or on a call error, the verdict is a
 * failure (the caller applies the configured penalty) and never throws, except
 * when the run is being cancelled. The error of an answer cut at max_tokens
 * starts with "truncated at max_tokens".
 */
export async function judgeOutput(
  model: BaseChatModel,
  input: JudgeInput,
  opts: { callbacks?: Callbacks; signal?: AbortSignal } = {},
): Promise<JudgeVerdict> {
  const keys = Object.keys(input.criteria);
  const schema = judgeOutputSchema(keys);
  const messages = judgeMessages(input);
  const options: RunnableConfig & OutputSchemaCallOption = {
    callbacks: opts.callbacks,
    signal: opts.signal,
    metadata: { agent: 'Judge' },
    outputSchema: outputSchemaOf(judgeJsonSchema(keys), 'judge_scores'),
  };
  let cut: MaxTokensCut | null = null;
  const call = async (msgs: BaseMessage[]): Promise<string> => {
    const reply = await model.invoke(msgs, options);
    cut = maxTokensCutOf(reply) ?? cut;
    return contentText(reply.content);
  };
  try {
    const first = await call(messages);
    const firstCut = cut;
    const parsed = await parseStructured(schema, first, async (problem) => call([...messages, new HumanMessage(repairRequest(problem, schema, firstCut))]), {
      policy: repairPolicyOf(model),
    });
    if (!parsed.ok) {
      const error = `judge output unusable${judgeServer(model)}: ${parsed.error.replace(/\n/g, '; ')}`;
      return { scores: {}, rationale: '', failed: true, error: cut ? truncatedError(cut, error) : error, repaired: parsed.repaired, repair: parsed.repair };
    }
    const value = parsed.value as { scores?: Record<string, unknown>; rationale?: unknown } & Record<string, unknown>;
    const source = (value.scores ?? value) as Record<string, unknown>;
    const scores: Record<string, number> = {};
    // Already on 0..1: the schema mapped each 0..10 score.
    for (const k of keys) scores[k] = clamp01(Number(source[k]));
    return { scores, rationale: typeof value.rationale === 'string' ? value.rationale : '', failed: false, repaired: parsed.repaired, repair: parsed.repair };
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    return { scores: {}, rationale: '', failed: true, error: `judge call failed: ${errorMessage(err)}`, repaired: false, repair: null };
  }
}
