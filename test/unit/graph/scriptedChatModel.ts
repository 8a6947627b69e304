import type { BaseLanguageModelInput } from '@langchain/core/language_models/base';
import { BaseChatModel, type BaseChatModelCallOptions, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessage, type AIMessageChunk, type BaseMessage, type ToolCall } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import type { Runnable } from '@langchain/core/runnables';
import { ROLE_MARKER_RE } from '../../../src/core/graph/researchLab/outputs';

/** One call as the scripted model saw it. */
export interface ScriptedCall {
  agent: string;
  messages: BaseMessage[];
  /** Names of the tools bound for this call. */
  tools: string[];
  /** Text of the last human message. */
  user: string;
  /** How many earlier calls this agent made. */
  n: number;
}

export type ScriptedReply = string | { content?: string; tool_calls?: Array<Omit<ToolCall, 'type'>> };

interface ScriptedCallOptions extends BaseChatModelCallOptions {
  toolNames?: string[];
}

/**
 * A chat model at the machine edge for routing tests: the script answers each
 * call from the agent named in the system prompt's role marker. Everything
 * above it (LangGraph, callbacks, tool binding) is real.
 */
export class ScriptedChatModel extends BaseChatModel<ScriptedCallOptions, AIMessageChunk> {
  readonly calls: ScriptedCall[] = [];

  constructor(private readonly script: (call: ScriptedCall) => ScriptedReply) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(tools: BindToolsInput[]): Runnable<BaseLanguageModelInput, AIMessageChunk, ScriptedCallOptions> {
    return this.withConfig({ toolNames: tools.map((t) => (t as { name: string }).name) });
  }

  async _generate(messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    const system = messages[0]?.text ?? '';
    const agent = ROLE_MARKER_RE.exec(system)?.[1] ?? 'unknown';
    const human = [...messages].reverse().find((m) => m.getType() === 'human');
    const call: ScriptedCall = {
      agent,
      messages,
      tools: options.toolNames ?? [],
      user: human?.text ?? '',
      n: this.calls.filter((c) => c.agent === agent).length,
    };
    this.calls.push(call);
    const reply = this.script(call);
    const r = typeof reply === 'string' ? { content: reply } : reply;
    const message = new AIMessage({
      content: r.content ?? '',
      tool_calls: (r.tool_calls ?? []).map((tc) => ({ ...tc, type: 'tool_call' as const })),
    });
    return { generations: [{ text: message.text, message }] };
  }
}

/** Valid answers for every research-lab agent; tests override the ones they probe. */
export function validAnswer(agent: string): string {
  switch (agent) {
    case 'Geneticist':
    case 'Pharmacologist':
    case 'Neurologist':
      return JSON.stringify({ hypothesis: `${agent} hypothesis`, supporting_papers: [`${agent} paper`] });
    case 'Supervisor':
      return JSON.stringify({ selected_hypothesis_index: 1, justification: 'most feasible' });
    case 'HypothesisRefiner':
      return JSON.stringify({ refined_hypothesis: 'refined statement' });
    case 'ProtocolDesigner':
      return JSON.stringify({ title: 'Study', steps: ['recruit', 'measure'], safety_concerns: 'none', budget_usd: 1000 });
    case 'PeerReviewer':
    case 'SafetyOfficer':
      return JSON.stringify({ decision: 'APPROVE', critique_severity: 'MINOR', feedback: 'fine' });
    case 'PrincipalInvestigator':
      return JSON.stringify({ final_protocol: { title: 'Study', steps: ['recruit'] }, final_decision: 'GO', final_rationale: 'sound' });
    default:
      throw new Error(`no scripted answer for ${agent}`);
  }
}
