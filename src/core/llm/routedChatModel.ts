import { dispatchCustomEvent } from '@langchain/core/callbacks/dispatch';
import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput, StructuredOutputMethodOptions } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
  type ToolChoice,
} from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import { OutputParserException } from '@langchain/core/output_parsers';
import type { ChatResult as LcChatResult } from '@langchain/core/outputs';
import { RunnableLambda, type Runnable, type RunnableConfig } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import type OpenAI from 'openai';
import { z } from 'zod';
import { DEFAULT_MAX_TOKENS, DEFAULT_TOP_LOGPROBS, type RepairPolicy, type StructuredOutputMode } from '../config/schema';
import { chatCompletion, type ChatCallOptions, type ChatRequest } from './client';
import { contentText, fromOpenAIToolCalls, toOpenAIMessages } from './messageConversion';
import { maxTokensCutOf, truncatedError } from './maxTokensCut';
import { repairRequest } from './repairRequest';
import { outputSchemaFor, outputSchemaOf, responseFormatFor, type OutputSchema, type OutputSchemaCallOption } from './responseFormat';
import { parseStructured } from './structuredOutput';
import type { ResolvedModel } from './routing';
import { currentRequestSeed } from './requestSeed';
import { toolCallIdsIn } from './toolCallIds';
import { readCompletion } from './responseMetadata';

function seedParam(seed: number | undefined): { seed?: number } {
  return seed === undefined ? {} : { seed };
}

/**
 * Custom callback event a routed model's structured output dispatches when an answer needed repair, so the tracer
 * marks the graph step it belongs to (a user graph has no lastOutput report): { repair, original, ok }.
 */
export const STRUCTURED_REPAIR_EVENT = 'rollout_lab_structured_repair';

/** Callback metadata key a routed model sets when the simulated endpoint answers it. */
export const SIMULATED_CALL_METADATA = 'rollout_lab_simulated';

export interface RoutedChatModelCallOptions extends BaseChatModelCallOptions, OutputSchemaCallOption {
  tools?: OpenAI.Chat.ChatCompletionFunctionTool[];
  /** Forwarded to the server; the simulator uses it to vary samples of the same task. */
  seed?: number;
}

export interface RoutedChatModelFields {
  resolved: ResolvedModel;
  /** The agent this model speaks for; put in callback metadata so traces can name it. */
  agent?: string;
  /** Overrides the resolved temperature. */
  temperature?: number;
  /** Backoff override for tests. */
  backoff?: ChatCallOptions['backoff'];
}

/**
 * A LangChain chat model over the routed, retrying OpenAI client. Being a
 * BaseChatModel, LangGraph's callbacks see each call (start with invocation
 * params, end with usage and metadata) without any wiring in the graph.
 */
export class RoutedChatModel extends BaseChatModel<RoutedChatModelCallOptions, AIMessageChunk> {
  readonly resolved: ResolvedModel;
  readonly agent: string | undefined;
  readonly temperature: number | undefined;
  private readonly backoff: ChatCallOptions['backoff'];

  static lc_name(): string {
    return 'RoutedChatModel';
  }

  constructor(fields: RoutedChatModelFields) {
    // In callback metadata, so the tracer marks a call to the simulated endpoint from its start, errors included.
    super({ metadata: { ...(fields.agent ? { agent: fields.agent } : {}), ...(fields.resolved.simulated ? { [SIMULATED_CALL_METADATA]: true } : {}) } });
    this.resolved = fields.resolved;
    this.agent = fields.agent;
    this.temperature = fields.temperature ?? fields.resolved.temperature;
    this.backoff = fields.backoff;
  }

  _llmType(): string {
    return 'rollout-lab-openai';
  }

  override bindTools(
    tools: BindToolsInput[],
    kwargs?: Partial<RoutedChatModelCallOptions>,
  ): Runnable<BaseLanguageModelInput, AIMessageChunk, RoutedChatModelCallOptions> {
    return this.withConfig({
      tools: tools.map((t) => convertToOpenAITool(t) as OpenAI.Chat.ChatCompletionFunctionTool),
      ...kwargs,
    });
  }

  override invocationParams(options?: this['ParsedCallOptions']): Omit<ChatRequest, 'messages'> & { model: string } {
    const tools = options?.tools?.length ? options.tools : undefined;
    // Never a format together with tools: it would forbid the tool calls (vLLM) or change how they are parsed (llama.cpp).
    const format = options?.outputSchema && !tools ? responseFormatFor(this.structuredOutput, options.outputSchema) : undefined;
    return {
      model: this.resolved.model,
      ...(this.temperature !== undefined ? { temperature: this.temperature } : {}),
      max_tokens: this.resolved.maxTokens ?? DEFAULT_MAX_TOKENS,
      ...(this.resolved.logprobs ? { logprobs: true, top_logprobs: this.resolved.topLogprobs ?? DEFAULT_TOP_LOGPROBS } : {}),
      ...(options?.stop?.length ? { stop: options.stop } : {}),
      ...seedParam(options?.seed ?? currentRequestSeed()),
      ...(tools ? { tools } : {}),
      ...(tools && options?.tool_choice !== undefined ? { tool_choice: toOpenAIToolChoice(options.tool_choice) } : {}),
      ...(format ? { response_format: format } : {}),
    };
  }

  /** How a malformed structured answer is repaired (models.<name>.repair, "local" unless set). */
  get repairPolicy(): RepairPolicy {
    return this.resolved.repair ?? 'local';
  }

  /** The configured structured-output mode ("json_schema" unless the model says otherwise). */
  get structuredOutput(): StructuredOutputMode {
    return this.resolved.structuredOutput ?? 'json_schema';
  }

  /**
   * Answers parsed into `schema` (zod, or a plain JSON Schema), enforced the
   * configured way (`structuredOutput`: response_format json_schema or
   * json_object, or only the prompt). An answer that does not validate gets one
   * repair round trip; one that still does not throws an OutputParserException
   * that says why ("truncated at max_tokens ..." when the answer was cut off).
   */
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    schema: z.ZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<false>,
  ): Runnable<BaseLanguageModelInput, RunOutput>;
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    schema: z.ZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<true>,
  ): Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }>;
  override withStructuredOutput<RunOutput extends Record<string, any> = Record<string, any>>(
    schema: z.ZodType<RunOutput> | Record<string, any>,
    config?: StructuredOutputMethodOptions<boolean>,
  ): Runnable<BaseLanguageModelInput, RunOutput> | Runnable<BaseLanguageModelInput, { raw: BaseMessage; parsed: RunOutput }> {
    const zodSchema = schema instanceof z.ZodType ? (schema as z.ZodType<RunOutput>) : null;
    const title = zodSchema ? undefined : (schema as { title?: unknown }).title;
    const name = config?.name ?? (typeof title === 'string' ? title : 'answer');
    const out: OutputSchema = zodSchema ? outputSchemaFor(zodSchema, name) : outputSchemaOf(schema as Record<string, unknown>, name);
    // A plain JSON Schema is enforced by the server; here it is only read as a JSON object.
    const validator = zodSchema ?? (z.record(z.string(), z.unknown()) as unknown as z.ZodType<RunOutput>);
    const includeRaw = config?.includeRaw === true;
    return RunnableLambda.from(async (input: BaseLanguageModelInput, runConfig?: RunnableConfig) => {
      const messages = RoutedChatModel._convertInputToPromptValue(input).toChatMessages();
      const options = { ...runConfig, outputSchema: out } as Partial<RoutedChatModelCallOptions>;
      const raw = await this.invoke(messages, options);
      let cut = maxTokensCutOf(raw);
      const parsed = await parseStructured(validator, raw.text, async (problem) => {
        const fixed = await this.invoke([...messages, new AIMessage(raw.text), new HumanMessage(repairRequest(problem, zodSchema, cut))], options);
        cut = maxTokensCutOf(fixed) ?? cut;
        return fixed.text;
      }, { policy: this.repairPolicy });
      if (parsed.repair) {
        await dispatchCustomEvent(STRUCTURED_REPAIR_EVENT, { repair: parsed.repair, original: parsed.original, ok: parsed.ok }, runConfig);
      }
      if (!parsed.ok) {
        const problem = `the answer of model '${this.resolved.logical}' does not match the ${name} schema after one repair: ${parsed.error}`;
        throw new OutputParserException(cut ? truncatedError(cut, problem) : problem, parsed.raw);
      }
      return includeRaw ? { raw, parsed: parsed.value } : parsed.value;
    }).withConfig({ runName: 'RoutedChatModelStructuredOutput' }) as Runnable<BaseLanguageModelInput, RunOutput>;
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    _runManager?: CallbackManagerForLLMRun,
  ): Promise<LcChatResult> {
    const { model: _model, ...params } = this.invocationParams(options);
    const wire = toOpenAIMessages(messages);
    const r = await chatCompletion(this.resolved, { ...params, messages: wire }, { signal: options.signal, backoff: this.backoff, agent: this.agent });
    const c = r.completion;
    const choice = c.choices[0]!;
    // Tool-call ids made unique before LangChain sees them, so ToolNode, the trace and training data all use the same ids.
    const { metadata, toolCalls: calls } = readCompletion(r, this.resolved, wire, {
      takenToolCallIds: toolCallIdsIn(messages),
      agent: this.agent,
      schemaAsked: Boolean(options.outputSchema),
    });
    const { toolCalls, invalidToolCalls } = fromOpenAIToolCalls(calls);
    const usage = c.usage
      ? { input_tokens: c.usage.prompt_tokens, output_tokens: c.usage.completion_tokens, total_tokens: c.usage.total_tokens }
      : undefined;
    const text = choice.message.content ?? '';
    const message = new AIMessage({
      id: c.id,
      content: text,
      tool_calls: toolCalls,
      invalid_tool_calls: invalidToolCalls,
      usage_metadata: usage,
      response_metadata: { ...metadata },
    });
    return {
      generations: [{ text: contentText(text), message, generationInfo: { ...metadata } }],
      llmOutput: usage
        ? { tokenUsage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.total_tokens } }
        : {},
    };
  }
}

/** The repair policy of a model: a routed model's own; any other chat model's answers are repaired locally. */
export function repairPolicyOf(model: unknown): RepairPolicy {
  return model instanceof RoutedChatModel ? model.repairPolicy : 'local';
}

/** LangChain's tool choice ("any", a tool name, or an OpenAI object) in OpenAI's terms. */
function toOpenAIToolChoice(choice: ToolChoice): OpenAI.Chat.ChatCompletionToolChoiceOption {
  if (typeof choice !== 'string') return choice as OpenAI.Chat.ChatCompletionToolChoiceOption;
  if (choice === 'any' || choice === 'required') return 'required';
  if (choice === 'auto' || choice === 'none') return choice;
  return { type: 'function', function: { name: choice } };
}
