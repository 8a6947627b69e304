/*
 * 1 when the agent named the ticket's queue, else 0 (a random guess among the
 * four queues scores 0.25 on average).
 *
 *   "reward": { "module": "reward.ts" }     with the dataset's "fields": { "expected": "queue" }
 */
interface RewardInput {
  task: { id: string; expected?: unknown };
  outcome: { finalOutput: string | null };
}

export default function routedRight({ task, outcome }: RewardInput) {
  const gold = task.expected;
  if (typeof gold !== 'string' || !gold) {
    throw new Error(`task ${task.id} has no queue: map "expected" to "queue" under the dataset's "fields" in lab.json`);
  }
  const got = outcome.finalOutput;
  const match = got === gold ? 1 : 0;
  return { reward: match, breakdown: { match }, info: got ? `routed to ${got}, gold ${gold}` : 'no queue named' };
}
