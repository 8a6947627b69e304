import { Annotation } from '@langchain/langgraph';
import type { BaseMessage } from '@langchain/core/messages';
import type { Protocol, Review } from './outputs';

/** One dataset task as the graph sees it. */
export interface LabTask {
  id: string;
  goal: string;
  context: string;
}

export interface AgentHypothesis {
  agent: string;
  hypothesis: string;
  supporting_papers: string[];
}

export interface AgentReview extends Review {
  agent: string;
}

export interface ReviewRecord extends AgentReview {
  /** 1 for the first review round, 2 after the first revision, ... */
  round: number;
}

/** An agent answer that stayed invalid after the repair round trip. */
export interface AgentFailure {
  agent: string;
  error: string;
  raw: string;
}

/**
 * What an agent node reports about its answer, for the trace layer (see
 * graph.ts). `value` is the parsed output when `ok`, absent otherwise.
 */
export interface AgentOutputReport {
  agent: string;
  ok: boolean;
  repaired: boolean;
  /** How a repaired answer was repaired: 'local' (near-JSON fixed here) or 'request' (the model corrected it). */
  repair?: 'local' | 'request';
  /** A repaired answer as the model first wrote it. */
  original?: string;
  error?: string;
  value?: unknown;
  /** The turn counter after this step. */
  turn: number;
  /** Extra attributes for the node's span (the Supervisor's bandit decision). */
  attributes?: Record<string, string | number | boolean | number[]>;
}

// Parallel juniors write these in the same superstep, so each needs a reducer:
// LastValue channels reject concurrent writes.
const lastWins = <T>(_: T, b: T): T => b;

export const ResearchLabState = Annotation.Root({
  task: Annotation<LabTask>,
  /** Each agent's own conversation (briefings, its answers, its tool results), merged by agent. */
  threads: Annotation<Record<string, BaseMessage[]>>({
    reducer: (a, b) => {
      const out = { ...a };
      for (const [agent, msgs] of Object.entries(b)) out[agent] = [...(out[agent] ?? []), ...msgs];
      return out;
    },
    default: () => ({}),
  }),
  hypotheses: Annotation<AgentHypothesis[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  selectedIndex: Annotation<number | null>({ reducer: lastWins, default: () => null }),
  selectionJustification: Annotation<string | null>({ reducer: lastWins, default: () => null }),
  refinedHypothesis: Annotation<string | null>({ reducer: lastWins, default: () => null }),
  protocol: Annotation<Protocol | null>({ reducer: lastWins, default: () => null }),
  /** Reviews of the current round, by reviewer; the next round overwrites them. */
  reviews: Annotation<Record<string, AgentReview>>({ reducer: (a, b) => ({ ...a, ...b }), default: () => ({}) }),
  reviewHistory: Annotation<ReviewRecord[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  /** Review rounds started; PeerReviewer opens each round. */
  round: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  /** Agent steps from the Supervisor on (the parallel junior round does not count; each junior has its own step budget); the reducer adds. Tool steps do not count. */
  turns: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  /** The agent that acted last, so a tool result goes back to it. */
  sender: Annotation<string | null>({ reducer: lastWins, default: () => null }),
  finalProtocol: Annotation<string | Record<string, unknown> | null>({ reducer: lastWins, default: () => null }),
  finalDecision: Annotation<'GO' | 'NO-GO' | null>({ reducer: lastWins, default: () => null }),
  finalRationale: Annotation<string | null>({ reducer: lastWins, default: () => null }),
  failures: Annotation<AgentFailure[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  lastOutput: Annotation<AgentOutputReport | null>({ reducer: lastWins, default: () => null }),
});

export type ResearchLabStateType = typeof ResearchLabState.State;
export type ResearchLabUpdate = typeof ResearchLabState.Update;
