/*
 * A learnt selection policy the Supervisor node can consult (the contextual
 * bandit trained from earlier rollouts). The graph only needs this shape; the
 * training layer provides it, and the rollout environment passes it in.
 */

/** One hypothesis as the policy sees it: who proposed it and its text. */
export interface SupervisorCandidate {
  agent: string;
  text: string;
}

export interface SupervisorPolicy {
  /** "advise": its ranking goes into the Supervisor's briefing; "decide": it picks and the Supervisor's model is not called. */
  readonly mode: 'advise' | 'decide';
  /** The policy version, recorded on the Supervisor's span and so in later bandit records. */
  readonly version: string;
  /** The estimated reward of each candidate, in candidate order (advise). */
  estimates(candidates: readonly SupervisorCandidate[]): number[];
  /** ε-greedy pick with the given random stream (decide). */
  choose(candidates: readonly SupervisorCandidate[], rng: () => number): { index: number; explored: boolean; scores: number[] };
}

/** Span attribute names the Supervisor node records when a policy is in use. */
export const BANDIT_ATTR = {
  mode: 'rollout_lab.bandit.mode',
  policyVersion: 'rollout_lab.bandit.policy_version',
  chosen: 'rollout_lab.bandit.chosen',
  explored: 'rollout_lab.bandit.explored',
  scores: 'rollout_lab.bandit.scores',
} as const;

/** The line appended to the Supervisor's briefing in mode "advise": `policy V ranks: [2] (0.71), [0] (0.55)`. */
export function policyAdviceLine(version: string, estimates: readonly number[]): string {
  const ranked = estimates.map((s, i) => ({ i, s })).sort((a, b) => b.s - a.s || a.i - b.i);
  return `policy ${version} ranks: ${ranked.map(({ i, s }) => `[${i}] (${s.toFixed(2)})`).join(', ')}`;
}
