/**
 * The span model: OpenTelemetry-shaped (hex trace and span ids, start/end
 * times, status, flat attributes) with GenAI semantic-convention names.
 * One rollout is one trace: its id is the trace id.
 */
export type SpanKind = 'rollout' | 'node' | 'llm' | 'tool' | 'reward';
export const SPAN_KINDS: readonly SpanKind[] = ['rollout', 'node', 'llm', 'tool', 'reward'];

export type SpanStatus = 'ok' | 'error' | 'unset';

export type AttributeValue = string | number | boolean | string[] | number[] | boolean[] | null;
export type Attributes = Record<string, AttributeValue>;

export interface SpanRecord {
  /** 32 lowercase hex chars; equals the rollout id. */
  traceId: string;
  /** 16 lowercase hex chars. */
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: SpanKind;
  /** Unix epoch milliseconds (fractional allowed). */
  startTime: number;
  endTime: number;
  status: SpanStatus;
  statusMessage?: string;
  attributes: Attributes;
}

/** Attribute names. GenAI semantic conventions where one exists, `rollout_lab.*` otherwise. */
export const Attr = {
  operationName: 'gen_ai.operation.name',
  providerName: 'gen_ai.provider.name',
  requestModel: 'gen_ai.request.model',
  requestTemperature: 'gen_ai.request.temperature',
  requestMaxTokens: 'gen_ai.request.max_tokens',
  /** The lab.json key that set max_tokens (models.X.maxTokens, agents.X.maxTokens, reward.judge.maxTokens). */
  maxTokensSetting: 'rollout_lab.max_tokens.setting',
  responseModel: 'gen_ai.response.model',
  responseId: 'gen_ai.response.id',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  agentName: 'gen_ai.agent.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  errorType: 'error.type',
  serverAddress: 'server.address',

  /** On spans a command agent exports (a resource attribute): the rollout they belong to. */
  rolloutId: 'rollout_lab.rollout.id',
  runId: 'rollout_lab.run.id',
  taskId: 'rollout_lab.task.id',
  split: 'rollout_lab.task.split',
  sample: 'rollout_lab.sample',
  simulated: 'rollout_lab.simulated',
  logicalModel: 'rollout_lab.model.logical',
  modelVersion: 'rollout_lab.model.version',
  promptVersion: 'rollout_lab.prompt.version',
  nodeName: 'rollout_lab.node.name',
  nodeStep: 'rollout_lab.node.step',
  /**
   * On a span inside the node of a lab agent that holds a graph of its own (a prebuilt agent, a subgraph, a nested
   * graph): the inner graph node it ran in, while gen_ai.agent.name names the outer agent.
   */
  innerNode: 'rollout_lab.node.inner',
  latencyMs: 'rollout_lab.latency_ms',
  retries: 'rollout_lab.retries',
  /** On an llm span: why each retry of the call was made, in order (HTTP 429, a timeout, a broken response body...). */
  retryReasons: 'rollout_lab.retry.reasons',
  logprobs: 'rollout_lab.logprobs',
  logprobMean: 'rollout_lab.logprob.mean',
  tokenIds: 'rollout_lab.completion.token_ids',
  /** On an llm span: the prompt's token ids, from servers that return them (vLLM). */
  promptTokenIds: 'rollout_lab.prompt.token_ids',
  logprobTokens: 'rollout_lab.logprob.tokens',
  /** On an llm span: true when the server stopped the answer at max_tokens (finish_reason "length"). */
  truncated: 'rollout_lab.truncated',
  /** On an llm span: true when the server evidently cut the prompt to fit its context (usage.prompt_tokens well under the estimate). */
  promptTruncated: 'rollout_lab.prompt.truncated',
  /** On an llm span: a lower bound on the prompt's tokens. */
  promptEstimatedTokens: 'rollout_lab.prompt.estimated_tokens',
  /** On an llm span: the server's tool-call ids ("" for none) when some were missing, empty or repeated and were replaced. */
  toolCallOriginalIds: 'rollout_lab.tool_calls.original_ids',
  /** On an llm span that asked for a schema: json_schema, json_object or off, as used. */
  structuredOutput: 'rollout_lab.structured_output',
  /** On an llm span: why a weaker structured-output mode than configured was used. */
  structuredOutputFallback: 'rollout_lab.structured_output.fallback',
  turn: 'rollout_lab.turn',
  rewardName: 'rollout_lab.reward.name',
  rewardValue: 'rollout_lab.reward.value',
  rewardBreakdown: 'rollout_lab.reward.breakdown',
  /** On the custom reward span: the text the reward module gave beside its number. */
  rewardInfo: 'rollout_lab.reward.info',
  rewardKind: 'rollout_lab.reward.kind',
  /** On an AIR reward of a tool span: how its model call was found ("tool_call_id", or "preceding_call" without a matching id). */
  airCredit: 'rollout_lab.air.credit',
  /** On an AIR reward of a tool span: the span id of the model call it is credited to. */
  airCall: 'rollout_lab.air.call',
  decision: 'rollout_lab.decision',
  expectedDecision: 'rollout_lab.expected_decision',
  output: 'rollout_lab.output',
  /** On the rollout's root span: the text the judge scored (the final protocol). */
  finalOutput: 'rollout_lab.output.final',
  parseError: 'rollout_lab.parse_error',
  outputOk: 'rollout_lab.output.ok',
  taskGoal: 'rollout_lab.task.goal',
  rewardError: 'rollout_lab.reward.error',
  judgeRationale: 'rollout_lab.judge.rationale',
  /** On the judge's reward span: its answer needed repair, and how ('local' or 'request'). */
  judgeRepaired: 'rollout_lab.judge.repaired',
  judgeRepair: 'rollout_lab.judge.repair',
  rewardModule: 'rollout_lab.reward.module',
  /** On a node span: true when the agent's structured answer needed repair (locally, or by a repair request). */
  outputRepaired: 'rollout_lab.output.repaired',
  /** On a node span whose answer was repaired: 'local' (near-JSON fixed by jsonrepair) or 'request' (the model corrected it). */
  outputRepair: 'rollout_lab.output.repair',
  /** On a node span whose answer was repaired: the model's answer as it first came, before any repair. */
  outputOriginal: 'rollout_lab.output.original',
  /** On the rollout's root span: runner.maxTurns when it ran, and true when the graph's own turn count went over it. */
  turnLimit: 'rollout_lab.turn_limit',
  turnLimitExceeded: 'rollout_lab.turn_limit.exceeded',
  /** On an llm span the recording gateway wrote: 'gateway' (a framework's own record of the same call is merged into it). */
  callSource: 'rollout_lab.llm.source',
  /** On a gateway llm span: the caller's current span when it sent the request (the span id of its `traceparent` header). */
  callerSpanId: 'rollout_lab.gateway.caller_span_id',
  /** On an llm span where the gateway's record and a framework's span of the same call became one: how they were matched ('response_id', 'trace_context', 'content'). */
  matchedBy: 'rollout_lab.llm.matched_by',
  /** On such a merged span: the id of the span merged into it (the other record of the call). */
  mergedSpanId: 'rollout_lab.llm.merged_span_id',
  /**
   * On a framework's llm span that matched none of the gateway's records in a rollout whose calls go through the
   * gateway: true. It may be a second record of a call the gateway has, so training exports and call counts skip it.
   */
  unmatchedCall: 'rollout_lab.llm.unmatched',
  /**
   * On a command agent's framework span (OpenInference CHAIN or AGENT, an agent span) that stands for no agent of
   * lab.json (the Agents SDK's "Agent workflow" and turn spans, a LangChain RunnableSequence): true. It stays in the
   * trace, but it is no graph step: the graph view and the agents' visits are the lab's agents.
   */
  frameworkStep: 'rollout_lab.framework.step',
  /** A span written again with the same id (a merge): the copy with the highest revision is the span. */
  spanRevision: 'rollout_lab.span.revision',
  /** On the rollout's root span: why it failed (a FailureKind), or null. */
  failure: 'rollout_lab.failure',
} as const;
