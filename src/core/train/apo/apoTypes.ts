/** One prompt scored (or discarded) in a round of prompt optimisation. */
export interface ApoCandidate {
  text: string;
  /** promptHash of the text: the prompt version its rollouts record. */
  version: string;
  /** Mean final reward over the validation tasks (a failed rollout counts 0); null when not scored. */
  score: number | null;
  /** The run that scored it; null when it was not run. */
  runId: string | null;
  /** Whether it is in the beam after its round. */
  kept: boolean;
  /** Why it was discarded (a dropped placeholder, an unusable editor answer) or not fully scored (cancelled). */
  error?: string;
}

export interface ApoRound {
  round: number;
  /** The critic's critique of each prompt in the beam the round started from. */
  critique: string;
  candidates: ApoCandidate[];
  /** The beam after the round, best first: prompts kept from earlier rounds (the baseline among them) included. */
  beam?: Array<{ version: string; score: number | null; round: number }>;
}

export interface ApoResult {
  agent: string;
  baseline: { text: string; version: string; score: number | null };
  rounds: ApoRound[];
  /** The best prompt scored, the baseline included (round 0). */
  best: { text: string; version: string; score: number | null; round: number };
}

export interface ApoOptions {
  agent: string;
  rounds?: number;
  beam?: number;
  candidates?: number;
  validationTasks?: number;
  /** The critic's low-reward examples may come from simulated rollouts (left out by default). */
  includeSimulated?: boolean;
  signal?: AbortSignal;
  onRound?: (r: ApoRound) => void;
  /** Called as each prompt starts scoring: round 0 is the baseline. */
  onScoring?: (info: { round: number; candidate: number; of: number; runId: string }) => void;
}
