import { END, START, StateGraph, type CompiledStateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { BaseMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { z } from 'zod';
import { ConfigError } from '../../errors';
import { seededRandom } from '../../data/seededRandom';
import { currentRequestSeed } from '../../llm/requestSeed';
import { runAgentTurn, type AgentTurnResult } from './agentTurn';
import {
  designerBriefing,
  juniorBriefing,
  orderedHypotheses,
  principalBriefing,
  refinerBriefing,
  reviewerBriefing,
  supervisorBriefing,
} from './briefings';
import {
  HypothesisOutput,
  JUNIOR_AGENTS,
  PrincipalOutput,
  ProtocolOutput,
  RefinerOutput,
  RESEARCH_LAB_AGENTS,
  ReviewOutput,
  SupervisorOutput,
  type ResearchLabAgent,
  type Review,
} from './outputs';
import { REVIEW_ROUTE, TOOL_ROUTE, TURN_LIMIT_ROUTE, routeAfterAgent, routeAfterAnswer, routeAfterReview, toolNodeName } from './routing';
import { BANDIT_ATTR, policyAdviceLine, type SupervisorPolicy } from './supervisorPolicy';
import {
  ResearchLabState,
  type AgentOutputReport,
  type ResearchLabStateType,
  type ResearchLabUpdate,
} from './state';

/*
 * The research-lab agent society as a LangGraph state graph.
 *
 * START fans out to the three juniors; each runs its own ReAct loop
 * (`<Agent>` ⇄ `<Agent>_tools`) on its own message thread. The Supervisor is a
 * deferred node, so it runs once, after every junior loop has finished,
 * however many tool rounds each took. Then Supervisor → HypothesisRefiner ⇄
 * tools → ProtocolDesigner ⇄ tools → PeerReviewer → SafetyOfficer → router:
 * turn limit reached → PrincipalInvestigator; any CRITICAL → HypothesisRefiner;
 * any MAJOR → ProtocolDesigner; else → PrincipalInvestigator → END. Any agent
 * the config gives tools gets a tool loop; the others have plain edges.
 *
 * The turn limit (runner.maxTurns) holds at every step, the PI's closing turn
 * included: the agents from the Supervisor on share maxTurns − 1 turns, an
 * agent whose step is the last of those answers without tools, and the one
 * that used it goes straight to the PI (see workTurnsUsed in routing.ts).
 *
 * Contract with the trace layer: every agent node's state update carries
 * `lastOutput: AgentOutputReport` ({ agent, ok, repaired, error?, value?, turn })
 * once the agent has answered (null on a step that only asked for tools), and
 * `turns: 1`. The LangChain callback handler reads them from the node's
 * outputs in handleChainEnd and records `rollout_lab.output` /
 * `rollout_lab.parse_error`. Answers that stay invalid after the one repair
 * round trip are also appended to `failures` with their raw text, and the node
 * continues with a safe fallback; only transport errors escape a node.
 */

export interface ResearchLabDeps {
  /** Routed model per agent, temperature already applied. */
  model(agent: string): BaseChatModel;
  tools: Record<string, StructuredToolInterface>;
  /** Names of the tools the agent may call (from config). */
  agentTools(agent: string): string[];
  /** The agent's system prompt, without the role marker. */
  prompt(agent: string): string;
  /** MAX_TURNS: the most agent steps from the Supervisor on, the PI's included; each junior also gets this many. At least 2. */
  maxTurns: number;
  /** The configured agents; must include all nine research-lab agents. */
  agents?: string[];
  /** A learnt selection policy the Supervisor consults (lab.json "bandit"); none when the mode is "off". */
  supervisorPolicy?: SupervisorPolicy | null;
}

type Spec = typeof ResearchLabState.spec;
export type ResearchLabGraph = CompiledStateGraph<ResearchLabStateType, ResearchLabUpdate, string, Spec, Spec, Spec>;

type NodeFn = (state: ResearchLabStateType, config: LangGraphRunnableConfig) => Promise<ResearchLabUpdate>;
type Answer<T> = Extract<AgentTurnResult<T>, { kind: 'answer' }>;

const FALLBACK_REVIEW: Review = {
  decision: 'APPROVE',
  critique_severity: 'MINOR',
  feedback: '(this review could not be parsed; counted as MINOR)',
};

/** A loosely typed builder: node names come from config, so they are plain strings. */
type Builder = StateGraph<Spec, ResearchLabStateType, ResearchLabUpdate, string, Spec, Spec, Spec>;

export function buildResearchLabGraph(deps: ResearchLabDeps): ResearchLabGraph {
  checkDeps(deps);
  // Deduplicated: a tool listed twice would be bound twice, which endpoints reject.
  const toolsOf = (agent: string): StructuredToolInterface[] => [...new Set(deps.agentTools(agent))].map((n) => deps.tools[n]!);

  /** One agent step: its turn, then `onAnswer` maps a finished answer to state. */
  function agentNode<T>(
    agent: ResearchLabAgent,
    schema: (s: ResearchLabStateType) => z.ZodType<T>,
    briefing: (s: ResearchLabStateType) => string,
    onAnswer: (a: Answer<T>, s: ResearchLabStateType) => ResearchLabUpdate,
  ): NodeFn {
    return async (state, config) => {
      const tools = toolsOf(agent);
      // The three juniors run in parallel before the shared turn counter starts: each
      // has its own budget of steps, so one junior's tool use cannot starve the others
      // or the revision loops that come later.
      const isJunior = (JUNIOR_AGENTS as readonly string[]).includes(agent);
      const stepsSoFar = isJunior ? (state.threads[agent] ?? []).filter((m) => m.getType() === 'ai').length : state.turns;
      // The last shared turn is the PI's: the others must answer on the turn before it.
      const lastStep = isJunior || agent === 'PrincipalInvestigator' ? deps.maxTurns : deps.maxTurns - 1;
      const turnLimitReached = tools.length > 0 && stepsSoFar + 1 >= lastStep;
      const result = await runAgentTurn(
        {
          agent,
          model: deps.model(agent),
          systemPrompt: deps.prompt(agent),
          thread: state.threads[agent] ?? [],
          briefing: () => briefing(state),
          schema: schema(state),
          tools: turnLimitReached ? [] : tools,
          turnLimitReached,
        },
        config,
      );
      const base: ResearchLabUpdate = { threads: { [agent]: result.messages }, turns: isJunior ? 0 : 1, sender: agent };
      if (result.kind === 'tool_calls') return { ...base, lastOutput: null };
      // A repaired answer says how, and keeps what the model first wrote: a server whose structured output is broken shows.
      const repairAttrs = result.repair ? { repair: result.repair, original: result.original } : {};
      const report: AgentOutputReport = result.ok
        ? { agent, ok: true, repaired: result.repaired, value: result.value, turn: state.turns + (isJunior ? 0 : 1), ...repairAttrs }
        : { agent, ok: false, repaired: result.repaired, error: result.error, turn: state.turns + (isJunior ? 0 : 1), ...repairAttrs };
      const failures = result.ok ? [] : [{ agent, error: result.error, raw: result.raw }];
      return { ...base, ...onAnswer(result, state), lastOutput: report, failures };
    };
  }

  const junior = (agent: ResearchLabAgent): NodeFn =>
    agentNode(agent, () => HypothesisOutput, juniorBriefing, (a) =>
      a.ok ? { hypotheses: [{ agent, hypothesis: a.value.hypothesis, supporting_papers: a.value.supporting_papers }] } : {},
    );

  /** The Supervisor's own model call; `advice` is the policy's ranking, added to its briefing. */
  const supervisorAnswer = (advice: string | null): NodeFn =>
    agentNode(
      'Supervisor',
      (s) => {
        const n = s.hypotheses.length;
        return SupervisorOutput.refine((v) => v.selected_hypothesis_index < n, {
          message: `selected_hypothesis_index must be one of the listed indices 0..${n - 1}`,
          path: ['selected_hypothesis_index'],
        });
      },
      (s) => supervisorBriefing(s, orderedHypotheses(s.hypotheses), advice),
      (a) =>
        a.ok
          ? { selectedIndex: a.value.selected_hypothesis_index, selectionJustification: a.value.justification }
          : { selectedIndex: 0, selectionJustification: null },
    );
  const unadvised = supervisorAnswer(null);
  const policy = deps.supervisorPolicy ?? null;
  const supervisor: NodeFn = async (state, config) => {
    if (state.hypotheses.length === 0) {
      // Every junior failed: nothing to choose from; the refiner starts from the question.
      const report: AgentOutputReport = { agent: 'Supervisor', ok: false, repaired: false, error: 'no hypotheses to choose from', turn: state.turns + 1 };
      return { turns: 1, sender: 'Supervisor', selectedIndex: null, lastOutput: report };
    }
    if (!policy) return unadvised(state, config);
    const candidates = orderedHypotheses(state.hypotheses).map((h) => ({ agent: h.agent, text: h.hypothesis }));
    if (policy.mode === 'advise') {
      const estimates = policy.estimates(candidates);
      const update = await supervisorAnswer(policyAdviceLine(policy.version, estimates))(state, config);
      if (!update.lastOutput) return update; // a step that only asked for tools
      const chosen = typeof update.selectedIndex === 'number' ? update.selectedIndex : null;
      const attributes = banditAttributes(policy, chosen, false, estimates);
      return { ...update, lastOutput: { ...update.lastOutput, attributes } };
    }
    // decide: the policy picks, seeded per rollout so a rollout replays with the same pick.
    // The Supervisor's model is not called: its answer would be thrown away.
    const rng = seededRandom(((currentRequestSeed() ?? 0) ^ 0x2545f491) >>> 0);
    const choice = policy.choose(candidates, rng);
    const how = choice.explored ? 'an exploratory random pick' : `the highest score, ${choice.scores[choice.index]!.toFixed(2)}`;
    // The version is on the span; the reason the refiner reads leaves it out, so a retrained identical policy replays the same rollout.
    const value = { selected_hypothesis_index: choice.index, justification: `Chosen by the learnt bandit policy (${how}).` };
    const report: AgentOutputReport = {
      agent: 'Supervisor',
      ok: true,
      repaired: false,
      value,
      turn: state.turns + 1,
      attributes: banditAttributes(policy, choice.index, choice.explored, choice.scores),
    };
    return { turns: 1, sender: 'Supervisor', selectedIndex: choice.index, selectionJustification: value.justification, lastOutput: report };
  };

  const refiner = agentNode('HypothesisRefiner', () => RefinerOutput, refinerBriefing, (a, s) => {
    if (a.ok) return { refinedHypothesis: a.value.refined_hypothesis };
    // Keep the last good statement, or fall back to the hypothesis the supervisor chose.
    const selected = s.selectedIndex !== null ? orderedHypotheses(s.hypotheses)[s.selectedIndex] : undefined;
    return { refinedHypothesis: s.refinedHypothesis ?? selected?.hypothesis ?? null };
  });

  const designer = agentNode('ProtocolDesigner', () => ProtocolOutput, designerBriefing, (a) => ({
    protocol: a.ok ? a.value : null,
  }));

  const reviewer = (agent: 'PeerReviewer' | 'SafetyOfficer'): NodeFn => {
    // PeerReviewer opens a review round; SafetyOfficer reviews within it.
    const opensRound = agent === 'PeerReviewer';
    return agentNode(agent, () => ReviewOutput, reviewerBriefing, (a, s) => {
      const round = s.round + (opensRound ? 1 : 0);
      const update: ResearchLabUpdate = { round: opensRound ? 1 : 0 };
      // An unreadable review still replaces this reviewer's review of the last round.
      if (!a.ok) return { ...update, reviews: { [agent]: { agent, ...FALLBACK_REVIEW } } };
      return { ...update, reviews: { [agent]: { agent, ...a.value } }, reviewHistory: [{ agent, round, ...a.value }] };
    });
  };

  const principal = agentNode('PrincipalInvestigator', () => PrincipalOutput, principalBriefing, (a) =>
    a.ok
      ? { finalProtocol: a.value.final_protocol, finalDecision: a.value.final_decision, finalRationale: a.value.final_rationale }
      : { finalProtocol: null, finalDecision: null, finalRationale: null },
  );

  const nodes: Record<ResearchLabAgent, NodeFn> = {
    Geneticist: junior('Geneticist'),
    Pharmacologist: junior('Pharmacologist'),
    Neurologist: junior('Neurologist'),
    Supervisor: supervisor,
    HypothesisRefiner: refiner,
    ProtocolDesigner: designer,
    PeerReviewer: reviewer('PeerReviewer'),
    SafetyOfficer: reviewer('SafetyOfficer'),
    PrincipalInvestigator: principal,
  };
  /** Where each agent goes once it has answered; the SafetyOfficer's answer goes to the review router. */
  const next: Record<Exclude<ResearchLabAgent, 'SafetyOfficer'>, string> = {
    Geneticist: 'Supervisor',
    Pharmacologist: 'Supervisor',
    Neurologist: 'Supervisor',
    Supervisor: 'HypothesisRefiner',
    HypothesisRefiner: 'ProtocolDesigner',
    ProtocolDesigner: 'PeerReviewer',
    PeerReviewer: 'SafetyOfficer',
    PrincipalInvestigator: END,
  };
  const reviewTargets = {
    [REVIEW_ROUTE.critical]: 'HypothesisRefiner',
    [REVIEW_ROUTE.major]: 'ProtocolDesigner',
    [REVIEW_ROUTE.done]: 'PrincipalInvestigator',
  };

  const g = new StateGraph(ResearchLabState) as unknown as Builder;
  for (const agent of RESEARCH_LAB_AGENTS) {
    // Deferred: runs only when no junior loop has work left, i.e. once, after all three.
    g.addNode(agent, nodes[agent], { metadata: { kind: 'agent', agent }, ...(agent === 'Supervisor' ? { defer: true } : {}) });
  }
  for (const agent of JUNIOR_AGENTS) g.addEdge(START, agent);

  for (const agent of RESEARCH_LAB_AGENTS) {
    const tools = toolsOf(agent);
    if (tools.length) {
      const toolNode = new ToolNode(tools, { name: toolNodeName(agent) });
      const runTools = async (state: ResearchLabStateType, config: LangGraphRunnableConfig): Promise<ResearchLabUpdate> => {
        const results = (await toolNode.invoke(state.threads[agent] ?? [], config)) as BaseMessage[];
        return { threads: { [agent]: results } };
      };
      g.addNode(toolNodeName(agent), runTools, { metadata: { kind: 'tools', agent } });
      g.addEdge(toolNodeName(agent), agent);
    }
    const reviews = agent === 'SafetyOfficer';
    // Every agent on the shared turn counter can be the one that reaches the limit.
    const counted = !(JUNIOR_AGENTS as readonly string[]).includes(agent) && agent !== 'PrincipalInvestigator';
    if (!tools.length && !reviews && !counted) {
      g.addEdge(agent, next[agent as keyof typeof next]);
      continue;
    }
    const answered = (s: ResearchLabStateType): string =>
      reviews ? reviewRoute(s, deps.maxTurns) : counted ? routeAfterAnswer(s.turns, deps.maxTurns) : TOOL_ROUTE.answer;
    g.addConditionalEdges(
      agent,
      (s: ResearchLabStateType) => (tools.length && routeAfterAgent(s.threads[agent]) === TOOL_ROUTE.toolCall ? TOOL_ROUTE.toolCall : answered(s)),
      {
        ...(tools.length ? { [TOOL_ROUTE.toolCall]: toolNodeName(agent) } : {}),
        ...(reviews
          ? reviewTargets
          : { [TOOL_ROUTE.answer]: next[agent as keyof typeof next], ...(counted ? { [TURN_LIMIT_ROUTE]: 'PrincipalInvestigator' } : {}) }),
      },
    );
  }

  // Worst case: every agent step plus a tool step each, and the agents that
  // still run after the limit; the caller's own recursionLimit overrides this.
  return g.compile().withConfig({ recursionLimit: 2 * deps.maxTurns + 4 * RESEARCH_LAB_AGENTS.length + 10 }) as ResearchLabGraph;
}

function banditAttributes(policy: SupervisorPolicy, chosen: number | null, explored: boolean, scores: number[]): NonNullable<AgentOutputReport['attributes']> {
  return {
    [BANDIT_ATTR.mode]: policy.mode,
    [BANDIT_ATTR.policyVersion]: policy.version,
    [BANDIT_ATTR.chosen]: chosen ?? -1,
    [BANDIT_ATTR.explored]: explored,
    [BANDIT_ATTR.scores]: scores.map((x) => Math.round(x * 1e6) / 1e6),
  };
}

function reviewRoute(s: ResearchLabStateType, maxTurns: number): string {
  return routeAfterReview(s.turns, maxTurns, Object.values(s.reviews));
}

function checkDeps(deps: ResearchLabDeps): void {
  if (!Number.isInteger(deps.maxTurns) || deps.maxTurns < 2) {
    // The Supervisor and the PrincipalInvestigator take a turn each, whatever else happens.
    throw new ConfigError(`runner.maxTurns must be an integer of at least 2 for the research-lab graph (got ${deps.maxTurns}); the reference value is 15`);
  }
  if (deps.agents) {
    const missing = RESEARCH_LAB_AGENTS.filter((a) => !deps.agents!.includes(a));
    if (missing.length) {
      throw new ConfigError(
        `the research-lab graph needs all nine agents; add ${missing.join(', ')} under "agents" in lab.json (or use graph kind "module" for a different graph)`,
      );
    }
  }
  const known = Object.keys(deps.tools);
  for (const agent of RESEARCH_LAB_AGENTS) {
    for (const name of deps.agentTools(agent)) {
      if (!deps.tools[name]) {
        throw new ConfigError(
          `agent ${agent} lists tool "${name}", which does not exist; use one of: ${known.join(', ') || '(no tools defined)'}`,
        );
      }
    }
  }
}
