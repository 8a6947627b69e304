/** Weighted sum of criterion scores, with weights normalised to sum to 1 (criteria without a score count as 0). */
export function weightedReward(scores: Record<string, number>, criteria: Record<string, { weight: number }>): number {
  let total = 0;
  let weights = 0;
  for (const [name, c] of Object.entries(criteria)) {
    weights += c.weight;
    total += c.weight * clamp01(scores[name] ?? 0);
  }
  return weights > 0 ? total / weights : 0;
}

export function clamp01(x: number): number {
  if (!Number.isFinite(x)) return 0;
  return Math.min(1, Math.max(0, x));
}
