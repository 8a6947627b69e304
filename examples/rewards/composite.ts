/*
 * Composite reward: the LLM judge's weighted score, plus a format term and an
 * efficiency term (fewer turns and fewer generated tokens score higher):
 *   reward = 0.7 × judge + 0.1 × format + 0.2 × efficiency
 *   efficiency = 0.5 × (1 − turns / 15) + 0.5 × (1 − output tokens / 20000), each clipped to 0..1
 * A rollout with no final output gets 0 without asking the judge.
 *
 *   "reward": { "module": "examples/rewards/composite.ts" }
 */
import type { RewardInput, RewardValue } from './types';

const MAX_TURNS = 15;
const TOKEN_BUDGET = 20_000;

const clip = (x: number): number => Math.min(1, Math.max(0, x));

export default async function composite({ outcome, spans, judge }: RewardInput): Promise<RewardValue> {
  if (!outcome.finalOutput?.trim()) return { reward: 0, breakdown: { judge: 0, format: 0, efficiency: 0 }, info: 'no final output' };
  const verdict = await judge();
  let format = 1;
  if (/^\s*[{[]/.test(outcome.finalOutput)) {
    try {
      JSON.parse(outcome.finalOutput);
    } catch {
      format = 0;
    }
  }
  const tokens = spans
    .filter((s) => s.kind === 'llm')
    .reduce((sum, s) => sum + (typeof s.attributes['gen_ai.usage.output_tokens'] === 'number' ? (s.attributes['gen_ai.usage.output_tokens'] as number) : 0), 0);
  const efficiency = 0.5 * clip(1 - outcome.turns / MAX_TURNS) + 0.5 * clip(1 - tokens / TOKEN_BUDGET);
  const reward = 0.7 * verdict.reward + 0.1 * format + 0.2 * efficiency;
  return { reward, breakdown: { judge: verdict.reward, format, efficiency, outputTokens: tokens }, info: verdict.failed ? 'judge failed: penalty scores' : undefined };
}
