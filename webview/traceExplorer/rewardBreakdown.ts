import { Attr, type AttributeValue, type SpanRecord } from '../../src/core/trace/span';
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

export interface RewardLook {
  /** Codicon name. */
  icon: string;
  /** Class for the icon's colour. */
  cls: string;
  /** What the reward is, in words, for screen readers and the row. */
  label: string;
}

/**
 * How a reward span looks: a negative value (an AIR rule's penalty, a failed
 * reward's fallback) is a penalty, with its own icon and colour; a positive
 * intermediate reward is a bonus; others are plain rewards.
 */
export function rewardLook(s: Pick<SpanRecord, 'kind' | 'attributes'>): RewardLook | null {
  if (s.kind !== 'reward') return null;
  const v = s.attributes[Attr.rewardValue];
  if (typeof v === 'number' && v < 0) return { icon: 'thumbsdown', cls: 'te-penalty', label: 'penalty' };
  if (s.attributes[Attr.rewardKind] === 'intermediate' && typeof v === 'number' && v > 0) return { icon: 'star-full', cls: 'te-bonus', label: 'bonus' };
  return { icon: 'star-full', cls: 'te-kind-reward', label: 'reward' };
}
