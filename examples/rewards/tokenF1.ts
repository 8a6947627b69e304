/*
 * Word-level F1 reward, as in the multi-hop RAG study:
 *   reward = 0.1 × valid format + 0.9 × F1(final output, reference)
 * The reference is the task's expected answer when the dataset has one
 * (meta.answer, or PubMedQA's meta.longAnswer), else the task context.
 * "Valid format": a non-empty output that, if it looks like JSON, parses.
 * Empty or invalid outputs score 0 (no reward for gaming the format).
 *
 *   "reward": { "module": "examples/rewards/tokenF1.ts" }
 */
import type { RewardInput, RewardValue } from './types';

export function words(text: string): string[] {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim().split(' ').filter(Boolean);
}

export function wordF1(prediction: string, reference: string): number {
  const pred = words(prediction);
  const ref = words(reference);
  if (!pred.length || !ref.length) return 0;
  const counts = new Map<string, number>();
  for (const w of ref) counts.set(w, (counts.get(w) ?? 0) + 1);
  let overlap = 0;
  for (const w of pred) {
    const n = counts.get(w) ?? 0;
    if (n > 0) {
      overlap++;
      counts.set(w, n - 1);
    }
  }
  if (!overlap) return 0;
  const precision = overlap / pred.length;
  const recall = overlap / ref.length;
  return (2 * precision * recall) / (precision + recall);
}

export function validFormat(output: string | null): boolean {
  if (!output || !output.trim()) return false;
  const t = output.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return true;
  try {
    JSON.parse(t);
    return true;
  } catch {
    return false;
  }
}

export default function tokenF1({ task, outcome }: RewardInput): RewardValue {
  const meta = task.meta;
  const reference = typeof meta.answer === 'string' ? meta.answer : typeof meta.longAnswer === 'string' ? meta.longAnswer : task.context;
  const format = validFormat(outcome.finalOutput) ? 1 : 0;
  const f1 = format ? wordF1(outcome.finalOutput!, reference) : 0;
  return { reward: 0.1 * format + 0.9 * f1, breakdown: { format, f1 } };
}
