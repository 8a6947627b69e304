/*
 * Binary correctness reward, as in the reference case studies: 1 when the
 * rollout's GO / NO-GO decision matches the expert's yes / no, else 0.
 * Tasks labelled "maybe" (or unlabelled) and rollouts with no decision get 0.
 * The judge is never called, so this reward costs no model calls.
 *
 *   "reward": { "module": "examples/rewards/binaryDecision.ts" }
 */
import type { RewardInput, RewardValue } from './types';

export default function binaryDecision({ task, outcome }: RewardInput): RewardValue {
  const expected = task.expectedDecision?.toLowerCase() ?? null;
  const decision = outcome.decision?.toUpperCase().replace(/[\s_]/g, '-') ?? null;
  const said = decision === 'GO' || decision === 'YES' ? 'yes' : decision === 'NO-GO' || decision === 'NOGO' || decision === 'NO' ? 'no' : null;
  const correct = said !== null && (expected === 'yes' || expected === 'no') && said === expected;
  return { reward: correct ? 1 : 0, breakdown: { correct: correct ? 1 : 0 }, info: `decision ${outcome.decision ?? 'none'}, expected ${expected ?? 'none'}` };
}
