import type { Task } from './tasks';

/**
 * What of a task the agents may see: its id, goal and context, plus the
 * fields the dataset declares visible. Never the gold answer (expected,
 * expectedDecision) nor the rest of the row (meta): those reach only the reward.
 */
export type VisibleTask = { id: string; goal: string; context: string } & Record<string, unknown>;

export function visibleTask(task: Task): VisibleTask {
  return { ...structuredClone(task.visible ?? {}), id: task.id, goal: task.goal, context: task.context };
}
