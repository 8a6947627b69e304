/*
 * The shapes a custom reward works with, for editor completion. Rollout Lab
 * bundles the reward module with esbuild, so a local import like this one is
 * fine; types cost nothing at run time.
 */
export interface RewardInput {
  /**
   * The whole task, gold answer included: `expected` is the dataset's gold value (fields.expected, e.g. a SQL query),
   * else its yes/no/maybe decision, else null. The agents never see it; only the reward does.
   */
  task: { id: string; goal: string; context: string; expected: unknown; expectedDecision: string | null; meta: Record<string, unknown> };
  outcome: { finalOutput: string | null; decision: string | null; turns: number; failures: Array<{ agent: string; error: string }> };
  /** The rollout's spans (graph steps, model and tool calls), read-only. */
  spans: ReadonlyArray<{ kind: string; name: string; status: string; attributes: Record<string, unknown> }>;
  /** Runs the LLM judge once (later calls get the same result). */
  judge(): Promise<{ scores: Record<string, number>; failed: boolean; reward: number; error?: string }>;
}

export type RewardValue = number | { reward: number; breakdown?: Record<string, number>; info?: string };
