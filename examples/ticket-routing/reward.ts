/*
 * 1 when the Router named the ticket's queue, else 0. A policy that guesses
 * one of the four queues at random scores 0.25; one that writes anything else
 * scores 0.
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
