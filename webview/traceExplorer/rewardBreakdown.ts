import type { AttributeValue } from '../../src/core/trace/span';
import { parseJsonAttribute } from './chatMessages';

export interface CriterionRow {
  criterion: string;
  score: number;
  /** null when the span records scores only (the judge span). */
  weight: number | null;
  /** score × weight / Σ weights: what the criterion adds to the final reward. */
  contribution: number | null;
}

/**
 * `rollout_lab.reward.breakdown`: criterion → score, or criterion →
 * {score, weight}. null when the value is missing or not such an object.
 */
export function parseRewardBreakdown(value: AttributeValue | undefined): CriterionRow[] | null {
  const data = parseJsonAttribute(value);
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return null;
  const rows: CriterionRow[] = [];
  for (const [criterion, v] of Object.entries(data as Record<string, unknown>)) {
    if (typeof v === 'number') rows.push({ criterion, score: v, weight: null, contribution: null });
    else if (typeof v === 'object' && v !== null && typeof (v as { score?: unknown }).score === 'number') {
      const w = (v as { weight?: unknown }).weight;
      rows.push({ criterion, score: (v as { score: number }).score, weight: typeof w === 'number' ? w : null, contribution: null });
    }
  }
  const total = rows.reduce((s, r) => s + (r.weight ?? 0), 0);
  if (total > 0) for (const r of rows) if (r.weight !== null) r.contribution = (r.score * r.weight) / total;
  return rows;
}
