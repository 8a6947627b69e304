import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import {
  BaseChatModel,
  type BaseChatModelCallOptions,
  type BindToolsInput,
  type ToolChoice,
} from '@langchain/core/language_models/chat_models';
import { AIMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult as LcChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import type OpenAI from 'openai';
import { chatCompletion, type ChatCallOptions, type ChatRequest } from './client';
import { contentText, fromOpenAIToolCalls, toOpenAIMessages } from './messageConversion';
import type { ResolvedModel } from './routing';
import { currentRequestSeed } from './requestSeed';

function seedParam(seed: number | undefined): { seed?: number } {
  return seed === undefined ? {} : { seed };
}

export interface RoutedChatModelCallOptions extends BaseChatModelCallOptions {
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

/** What the client knew about the call, attached to every message and generation for the tracer. */
export interface RoutedResponseMetadata {
  id: string;
  model_name: string;
  finish_reason: string | null;
  logprobs: OpenAI.Chat.ChatCompletion.Choice.Logprobs | null;
  /** The sampled token ids, from servers asked with return_token_ids. */
  token_ids: number[] | null;
  latencyMs: number;
  retries: number;
  simulated: boolean;
  baseUrl: string;
  logicalModel: string;
  modelVersion: string | null;
  system_fingerprint: string | null;
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
    super({ metadata: fields.agent ? { agent: fields.agent } : undefined });
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
    return {
      model: this.resolved.model,
      ...(this.temperature !== undefined ? { temperature: this.temperature } : {}),
      ...(this.resolved.maxTokens !== undefined ? { max_tokens: this.resolved.maxTokens } : {}),
      ...(this.resolved.logprobs ? { logprobs: true } : {}),
      ...(options?.stop?.length ? { stop: options.stop } : {}),
      ...seedParam(options?.seed ?? currentRequestSeed()),
      ...(tools ? { tools } : {}),
      ...(tools && options?.tool_choice !== undefined ? { tool_choice: toOpenAIToolChoice(options.tool_choice) } : {}),
    };
  }

  async _generate(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    _runManager?: CallbackManagerForLLMRun,
  ): Promise<LcChatResult> {
    const { model: _model, ...params } = this.invocationParams(options);
    const r = await chatCompletion(
      this.resolved,
      { ...params, messages: toOpenAIMessages(messages) },
      { signal: options.signal, backoff: this.backoff },
    );
    const c = r.completion;
    const choice = c.choices[0]!;
    const { toolCalls, invalidToolCalls } = fromOpenAIToolCalls(choice.message.tool_calls);
    const usage = c.usage
      ? { input_tokens: c.usage.prompt_tokens, output_tokens: c.usage.completion_tokens, total_tokens: c.usage.total_tokens }
      : undefined;
    const metadata: RoutedResponseMetadata = {
      id: c.id,
      model_name: c.model,
      finish_reason: choice.finish_reason ?? null,
      logprobs: choice.logprobs ?? null,
      token_ids: tokenIdsOf(choice),
      latencyMs: r.latencyMs,
      retries: r.retries,
      simulated: this.resolved.simulated,
      baseUrl: this.resolved.baseUrl,
      logicalModel: this.resolved.logical,
      modelVersion: this.resolved.version,
      system_fingerprint: c.system_fingerprint ?? null,
    };
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

/** LangChain's tool choice ("any", a tool name, or an OpenAI object) in OpenAI's terms. */
function toOpenAIToolChoice(choice: ToolChoice): OpenAI.Chat.ChatCompletionToolChoiceOption {
  if (typeof choice !== 'string') return choice as OpenAI.Chat.ChatCompletionToolChoiceOption;
  if (choice === 'any' || choice === 'required') return 'required';
  if (choice === 'auto' || choice === 'none') return choice;
  return { type: 'function', function: { name: choice } };
}

/** `choices[].token_ids` of vLLM and python-trainer's serve (asked with return_token_ids); null when absent or malformed. */
function tokenIdsOf(choice: object): number[] | null {
  const ids = (choice as { token_ids?: unknown }).token_ids;
  return Array.isArray(ids) && ids.every((x) => Number.isInteger(x)) ? (ids as number[]) : null;
}
