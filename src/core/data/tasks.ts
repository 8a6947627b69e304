/** Expert answer to a task's question, when the dataset has one (PubMedQA does). */
export type Decision = 'yes' | 'no' | 'maybe';

export const DECISIONS: readonly Decision[] = ['yes', 'no', 'maybe'];

/** One dataset item: what a rollout is asked to work on. */
export interface Task {
  id: string;
  /** The research question or goal given to the agents. */
  goal: string;
  /** Background the agents and the judge see (for PubMedQA: the abstract). */
  context: string;
  expectedDecision: Decision | null;
  /**
   * The gold answer when the dataset has one besides a decision: any JSON
   * value (a SQL query, a label, a list). Only the reward sees it.
   */
  expected?: unknown;
  /** Fields the dataset declares visible to the agents (datasets.<name>.fields.visible), by the name given there. */
  visible?: Record<string, unknown>;
  /** Everything else the file had for the item (MeSH terms, year, long answer...). The agents never see it. */
  meta?: Record<string, unknown>;
}

export type Split = 'train' | 'val';

export type SplitTask = Task & { split: Split };
