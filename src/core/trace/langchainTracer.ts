import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { LLMResult } from '@langchain/core/outputs';
import type { ChainValues } from '@langchain/core/utils/types';
import { SIMULATED_CALL_METADATA, STRUCTURED_REPAIR_EVENT } from '../llm/routedChatModel';
import { Attr, type Attributes } from './span';
import { agentAttributes, llmErrorAttributes, llmRequestAttributes, llmResponseAttributes, llmSpanName, type AgentVersions } from './llmSpanAttributes';
import { traceText, toMessageRecord } from './messages';
import type { OpenSpan, RolloutTracer } from './tracer';

const TOOL_NODE_SUFFIX = /_tools$/;

/** The agent a LangGraph node belongs to: a tool node `X_tools` belongs to agent X. */
export function agentOfNode(node: string): string {
  return node.replace(TOOL_NODE_SUFFIX, '');
}

interface Run {
  span: OpenSpan | null;
  /** The span children of this run hang under (itself, or the nearest traced ancestor). */
  parent: OpenSpan | null;
  /** The outermost lab agent whose node holds this run; null outside every lab agent's node. */
  agent: string | null;
  /** The checkpoint namespace of the nearest graph node this run is in (one node's step keeps one). */
  nodeNs: string | null;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/**
 * Turns LangChain / LangGraph callbacks into spans, so any LangGraph.js graph is
 * traced with no change to its code: a `node` span per graph step, an `llm`
 * span per chat-model call and a `tool` span per tool call. Internal runnables
 * (channel writes, branches, sequences) are not spans; their children attach
 * to the nearest traced ancestor.
 *
 * Attribution follows the graph: a model call, tool call or node belongs to
 * the outermost node named after an agent of lab.json (`labAgents`) that
 * holds it, however deep the framework nests it (a prebuilt ReAct agent's
 * `agent` and `tools` nodes, a subgraph, a graph invoked inside a node, a
 * `Send` task), and keeps the inner node's name in `rollout_lab.node.inner`.
 * Outside every lab agent's node, the innermost node names the agent (a tool
 * run in a node of its own: the agent whose model call asked for it), unless
 * that node is no lab agent and the model was made for one.
 */
export class LangChainTracer extends BaseCallbackHandler {
  name = 'rollout-lab-tracer';
  // Spans must be recorded before invoke() returns, not in the background.
  override awaitHandlers = true;
  private readonly runs = new Map<string, Run>();
  /** The agent whose model call asked for each tool call (by id), so a tool run in a node of its own is still that agent's. */
  private readonly toolCallAgents = new Map<string, string>();

  private readonly labAgents: ReadonlySet<string>;

  constructor(
    private readonly tracer: RolloutTracer,
    private readonly root: OpenSpan,
    private readonly versions?: AgentVersions,
    /** The agents of lab.json: a node named after one holds everything under it. */
    labAgents: Iterable<string> = [],
  ) {
    super();
    this.labAgents = new Set(labAgents);
  }

  private runOf(parentRunId: string | undefined): Run | undefined {
    return parentRunId ? this.runs.get(parentRunId) : undefined;
  }

  /** The lab agent a graph node is named after (`X` or its tool node `X_tools`), if any. */
  private labAgentOfNode(node: string): string | null {
    const agent = agentOfNode(node);
    return this.labAgents.has(agent) ? agent : null;
  }

  /** The node a span ran in, when the lab agent it is credited to is not that node's (an outer node's agent, or the model's). */
  private static innerNodeAttrs(labAgent: string | null, node: string | undefined): Attributes {
    return labAgent && node && agentOfNode(node) !== labAgent ? { [Attr.innerNode]: node } : {};
  }

  private agentAttrs(agent: string | undefined): Attributes {
    return agentAttributes(agent, this.versions);
  }

  // The declared BaseCallbackHandler signature lists runType before parentRunId, but
  // @langchain/core's CallbackManager calls (chain, inputs, runId, parentRunId, tags,
  // metadata, runType, runName); this follows what is actually passed.
  override handleChainStart(
    _chain: Serialized,
    _inputs: ChainValues,
    runId: string,
    parentRunId?: string,
    tags?: string[],
    metadata?: Record<string, unknown>,
    _runType?: string,
    runName?: string,
  ): void {
    const up = this.runOf(parentRunId);
    const parent = up?.parent ?? this.root;
    const container = up?.agent ?? null;
    const node = str(metadata?.langgraph_node);
    const ns = str(metadata?.langgraph_checkpoint_ns) ?? null;
    // A graph a node runs (a prebuilt agent named like its node) starts inside that node's step, in its namespace: not a node of its own.
    const sameStep = ns !== null && ns === up?.nodeNs;
    const isNode = node !== undefined && node === runName && !tags?.includes('langsmith:hidden') && !sameStep;
    if (!isNode) {
      this.runs.set(runId, { span: null, parent, agent: container, nodeNs: up?.nodeNs ?? null });
      return;
    }
    const agent = container ?? this.labAgentOfNode(node);
    const span = this.tracer.start(node, 'node', parent, {
      [Attr.nodeName]: node,
      [Attr.nodeStep]: typeof metadata?.langgraph_step === 'number' ? metadata.langgraph_step : null,
      ...this.agentAttrs(agent ?? agentOfNode(node)),
      // Inside a lab agent's node every node is an inner one, even one named like that agent: a step of its visit, not a visit.
      ...(container ? { [Attr.innerNode]: node } : {}),
    });
    this.runs.set(runId, { span, parent: span, agent, nodeNs: ns });
  }

  override handleChainEnd(outputs: ChainValues, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    const last = (
      outputs as
        | {
            lastOutput?: { ok?: boolean; repaired?: boolean; repair?: unknown; original?: unknown; error?: string; value?: unknown; turn?: number; attributes?: Attributes };
          }
        | undefined
    )?.lastOutput;
    if (last && typeof last === 'object') {
      if (last.attributes && typeof last.attributes === 'object') Object.assign(run.span.attributes, last.attributes);
      run.span.attributes[Attr.outputOk] = last.ok !== false;
      run.span.attributes[Attr.outputRepaired] = Boolean(last.repaired);
      if (last.repair === 'local' || last.repair === 'request') run.span.attributes[Attr.outputRepair] = last.repair;
      if (last.repaired && typeof last.original === 'string') run.span.attributes[Attr.outputOriginal] = last.original;
      if (last.value !== undefined) run.span.attributes[Attr.output] = JSON.stringify(last.value);
      if (last.error) run.span.attributes[Attr.parseError] = last.error;
    }
    if (typeof last?.turn === 'number') run.span.attributes[Attr.turn] = last.turn;
    this.tracer.end(run.span, last && last.ok === false ? 'error' : 'ok', last?.ok === false ? last.error : undefined);
  }

  /** A routed model's structured answer needed repair: the graph step it ran in says so, with the original text. */
  override handleCustomEvent(eventName: string, data: unknown, runId: string): void {
    if (eventName !== STRUCTURED_REPAIR_EVENT || !data || typeof data !== 'object') return;
    const node = this.runs.get(runId)?.parent;
    if (!node || node.kind !== 'node') return;
    const { repair, original } = data as { repair?: unknown; original?: unknown };
    node.attributes[Attr.outputRepaired] = true;
    if (repair === 'local' || repair === 'request') node.attributes[Attr.outputRepair] = repair;
    if (typeof original === 'string') node.attributes[Attr.outputOriginal] = original;
  }

  override handleChainError(err: Error, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    run.span.attributes[Attr.errorType] = err.name || 'Error';
    this.tracer.end(run.span, 'error', err.message);
  }

  override handleChatModelStart(
    _llm: Serialized,
    messages: BaseMessage[][],
    runId: string,
    parentRunId?: string,
    extraParams?: Record<string, unknown>,
    _tags?: string[],
    metadata?: Record<string, unknown>,
  ): void {
    const up = this.runOf(parentRunId);
    const container = up?.agent ?? null;
    const params = (extraParams?.invocation_params ?? {}) as Record<string, unknown>;
    const node = str(metadata?.langgraph_node);
    // The graph node says which agent is calling (one model object may serve several nodes); outside a graph (the judge)
    // the model's own agent label does, and so it does in a node that is no lab agent when the label is one (a graph
    // that is a prebuilt agent as a whole: its node "agent" runs the model ctx.model('Support') made).
    const own = str(metadata?.agent);
    const byModel = own !== undefined && this.labAgents.has(own) && (!node || !this.labAgentOfNode(node));
    const labAgent = container ?? (byModel ? own : null);
    const agent = labAgent ?? (node ? agentOfNode(node) : own);
    const attrs: Attributes = {
      ...llmRequestAttributes({ ...params, messages: (messages[0] ?? []).map(toMessageRecord), simulated: metadata?.[SIMULATED_CALL_METADATA] === true }),
      ...this.agentAttrs(agent),
      ...LangChainTracer.innerNodeAttrs(labAgent, node),
    };
    const span = this.tracer.start(llmSpanName(attrs), 'llm', up?.parent ?? this.root, attrs);
    this.runs.set(runId, { span, parent: span, agent: container, nodeNs: up?.nodeNs ?? null });
  }

  override handleLLMEnd(output: LLMResult, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    const a = run.span.attributes;
    const gen = output.generations?.[0]?.[0] as { text?: string; message?: BaseMessage; generationInfo?: Record<string, unknown> } | undefined;
    const msg = gen?.message;
    const meta = ((msg as { response_metadata?: Record<string, unknown> } | undefined)?.response_metadata ?? gen?.generationInfo ?? {}) as Record<
      string,
      unknown
    >;
    const usage = (msg as { usage_metadata?: { input_tokens?: number; output_tokens?: number } } | undefined)?.usage_metadata;
    const llmUsage = (output.llmOutput?.tokenUsage ?? {}) as { promptTokens?: number; completionTokens?: number };
    const answer = msg ? toMessageRecord(msg) : { role: 'assistant', content: traceText(gen?.text ?? '') };
    Object.assign(
      a,
      llmResponseAttributes(meta, answer, {
        input: usage?.input_tokens ?? llmUsage.promptTokens ?? null,
        output: usage?.output_tokens ?? llmUsage.completionTokens ?? null,
      }),
    );
    const caller = a[Attr.agentName];
    if (typeof caller === 'string' && msg && AIMessage.isInstance(msg)) {
      for (const call of msg.tool_calls ?? []) if (call.id) this.toolCallAgents.set(call.id, caller);
    }
    this.tracer.end(run.span, 'ok');
  }

  override handleLLMError(err: Error, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    Object.assign(run.span.attributes, llmErrorAttributes(err));
    this.tracer.end(run.span, 'error', err.message);
  }

  override handleToolStart(
    _tool: Serialized,
    input: string,
    runId: string,
    parentRunId?: string,
    _tags?: string[],
    metadata?: Record<string, unknown>,
    runName?: string,
    toolCallId?: string,
  ): void {
    const up = this.runOf(parentRunId);
    const container = up?.agent ?? null;
    const node = str(metadata?.langgraph_node);
    const asker = toolCallId ? this.toolCallAgents.get(toolCallId) : undefined;
    const labAgent = container ?? (asker !== undefined && this.labAgents.has(asker) ? asker : null);
    const attrs: Attributes = {
      [Attr.operationName]: 'execute_tool',
      [Attr.toolName]: runName ?? 'tool',
      [Attr.toolArguments]: typeof input === 'string' ? input : JSON.stringify(input),
      ...this.agentAttrs(labAgent ?? asker ?? (node ? agentOfNode(node) : undefined)),
      ...LangChainTracer.innerNodeAttrs(labAgent, node),
    };
    if (toolCallId) attrs[Attr.toolCallId] = toolCallId;
    const span = this.tracer.start(`execute_tool ${runName ?? 'tool'}`, 'tool', up?.parent ?? this.root, attrs);
    this.runs.set(runId, { span, parent: span, agent: container, nodeNs: up?.nodeNs ?? null });
  }

  override handleToolEnd(output: unknown, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    const msg = output as { content?: unknown; status?: string; tool_call_id?: string } | string;
    const text = typeof msg === 'string' ? msg : traceText(msg?.content ?? output);
    run.span.attributes[Attr.toolResult] = text;
    const failed = typeof msg === 'object' && msg?.status === 'error';
    this.tracer.end(run.span, failed ? 'error' : 'ok', failed ? text.slice(0, 500) : undefined);
  }

  override handleToolError(err: Error, runId: string): void {
    const run = this.takeRun(runId);
    if (!run?.span) return;
    run.span.attributes[Attr.errorType] = err.name || 'Error';
    run.span.attributes[Attr.toolResult] = err.message;
    this.tracer.end(run.span, 'error', err.message);
  }

  /** Spans whose runs never ended (the graph was cancelled or crashed) are closed as errors. */
  closeOpen(reason: string): void {
    for (const [id, run] of this.runs) {
      if (run.span) this.tracer.end(run.span, 'error', reason);
      this.runs.delete(id);
    }
  }

  private takeRun(runId: string): Run | undefined {
    const run = this.runs.get(runId);
    // Keep non-span runs until the end: their children may still look them up.
    if (run?.span) this.runs.delete(runId);
    return run;
  }
}
