import type { AttributeValue } from '../../src/core/trace/span';

export interface LogprobSummary {
  tokens: number;
  mean: number;
  min: number;
  /** exp(−mean logprob): how many tokens the model was choosing between, on average. */
  perplexity: number;
  /** The least likely tokens, lowest first (when the span records token texts). */
  lowest: Array<{ token: string; logprob: number }>;
}

export function summarizeLogprobs(values: AttributeValue | undefined, tokens?: AttributeValue, lowestN = 5): LogprobSummary | null {
  if (!Array.isArray(values) || !values.length) return null;
  const lps = (values as unknown[]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (!lps.length) return null;
  let sum = 0;
  let min = Infinity;
  for (const v of lps) {
    sum += v;
    if (v < min) min = v;
  }
  const mean = sum / lps.length;
  const texts = Array.isArray(tokens) && tokens.length === values.length ? (tokens as unknown[]) : null;
  const lowest = texts
    ? (values as unknown[])
        .map((lp, i) => ({ token: String(texts[i] ?? ''), logprob: lp as number }))
        .filter((x) => typeof x.logprob === 'number')
        .sort((a, b) => a.logprob - b.logprob)
        .slice(0, lowestN)
    : [];
  return { tokens: lps.length, mean, min, perplexity: Math.exp(-mean), lowest };
}
