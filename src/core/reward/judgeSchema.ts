import { z } from 'zod';

/**
 * The judge's system prompt starts with this line, in the same "[agent: …]" form
 * every agent's prompt starts with, so logs, the simulated endpoint and the trace
 * explorer tell a judge call from an agent's.
 */
export const JUDGE_MARKER = '[agent: Judge]';

/**
 * The judge's answer format: one flat JSON object with a number in [0, 1] for
 * each criterion key and a "rationale" string, e.g.
 * `{"novelty": 0.7, "feasibility": 0.8, ..., "rationale": "..."}`.
 * The judge prompt asks for it with `judgeKeysLine(keys)`, and the simulated
 * endpoint reads the keys back with `parseJudgeKeys`.
 */
export function judgeKeysLine(keys: string[]): string {
  return `Return JSON with these keys: ${keys.join(', ')} (each a number from 0 to 1), and "rationale".`;
}

const JUDGE_KEYS_RE = /Return JSON with these keys: ([^\n(]+?) \(each a number from 0 to 1\)/;

/** The criterion keys of a `judgeKeysLine` found anywhere in `text`; null when there is none. */
export function parseJudgeKeys(text: string): string[] | null {
  const m = JUDGE_KEYS_RE.exec(text);
  if (!m) return null;
  const keys = m[1]!
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k.length > 0);
  return keys.length ? keys : null;
}

/** Validates a judge answer for these criterion keys; numbers given as strings are accepted. */
export function judgeOutputSchema(keys: string[]): z.ZodType<JudgeOutput> {
  const shape: Record<string, z.ZodType> = {};
  for (const k of keys) shape[k] = z.coerce.number().min(0).max(1);
  shape.rationale = z.string().default('');
  return z.object(shape) as unknown as z.ZodType<JudgeOutput>;
}

export type JudgeOutput = { rationale: string } & Record<string, number | string>;
