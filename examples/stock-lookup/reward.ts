/*
 * Rewarded by execution: 1 when what the Clerk's call returned is what the
 * right call returns (the task's answer), else 0. A wrong tool or a wrong item
 * returns another answer (every price and count in the catalogue differs); no
 * call, or a call for an item the shop does not have, returns none.
 *
 *   "reward": { "module": "reward.ts" }     with the dataset's "fields": { "expected": "answer" }
 */
interface RewardInput {
  task: { id: string; expected?: unknown };
  outcome: { finalOutput: string | null };
}

export default function lookedUpRight({ task, outcome }: RewardInput) {
  const gold = task.expected;
  if (typeof gold !== 'string' || !gold) {
    throw new Error(`task ${task.id} has no answer: map "expected" to "answer" under the dataset's "fields" in lab.json`);
  }
  const got = outcome.finalOutput;
  const match = got === gold ? 1 : 0;
  return { reward: match, breakdown: { looked_up: got === null ? 0 : 1, match }, info: got === null ? 'no lookup returned a result' : `the lookup returned ${got}, the right call ${gold}` };
}
