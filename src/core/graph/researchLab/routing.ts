import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { AgentReview } from './state';

/*
 * Route names double as edge labels: LangGraph's getGraphAsync() labels a
 * conditional edge with its path-map key, so the graph view shows these.
 */
export const TOOL_ROUTE = { toolCall: 'tool call', answer: 'answer' } as const;
export const REVIEW_ROUTE = { critical: 'CRITICAL', major: 'MAJOR', done: 'approve/turn limit' } as const;
/** From any agent after the Supervisor: its answer used the last turn before the PrincipalInvestigator's. */
export const TURN_LIMIT_ROUTE = 'turn limit';
export type ToolRoute = (typeof TOOL_ROUTE)[keyof typeof TOOL_ROUTE];
export type ReviewRoute = (typeof REVIEW_ROUTE)[keyof typeof REVIEW_ROUTE];

export function toolNodeName(agent: string): string {
  return `${agent}_tools`;
}

/**
 * An agent goes to its tool node while its last message asks for tools. The
 * agent node only leaves tool calls standing when it was allowed to call tools
 * (below the turn limit), so no turn check is needed here: re-checking the
 * shared counter would strand a junior whose parallel siblings pushed it over
 * the limit in the same step, with tool calls and no answer.
 */
export function routeAfterAgent(thread: BaseMessage[] | undefined): ToolRoute {
  const last = thread?.[thread.length - 1];
  return last && AIMessage.isInstance(last) && last.tool_calls?.length ? TOOL_ROUTE.toolCall : TOOL_ROUTE.answer;
}

/**
 * The turn limit counts the PrincipalInvestigator's closing turn: the agents
 * before it may use maxTurns − 1 turns, and once they have, the graph goes to
 * the PI from whichever agent just answered (not only after a review), so a
 * rollout never takes more than maxTurns turns. The parallel juniors do not
 * count (each has its own budget of maxTurns steps).
 */
export function workTurnsUsed(turns: number, maxTurns: number): boolean {
  return turns >= maxTurns - 1;
}

/** Where an agent of the shared counter goes once it has answered: on, or to the PI at the turn limit. */
export function routeAfterAnswer(turns: number, maxTurns: number): typeof TOOL_ROUTE.answer | typeof TURN_LIMIT_ROUTE {
  return workTurnsUsed(turns, maxTurns) ? TURN_LIMIT_ROUTE : TOOL_ROUTE.answer;
}

/** Reference rule: turn limit first (see workTurnsUsed), then the worst severity of the current round. */
export function routeAfterReview(turns: number, maxTurns: number, reviews: AgentReview[]): ReviewRoute {
  if (workTurnsUsed(turns, maxTurns)) return REVIEW_ROUTE.done;
  if (reviews.some((r) => r.critique_severity === 'CRITICAL')) return REVIEW_ROUTE.critical;
  if (reviews.some((r) => r.critique_severity === 'MAJOR')) return REVIEW_ROUTE.major;
  return REVIEW_ROUTE.done;
}
