import { z } from 'zod';

/**
 * The judge's system prompt starts with this line, in the same "[agent: …]" form
 * every agent's prompt starts with, so logs, the simulated endpoint and the trace
 * explorer tell a judge call from an agent's.
 */
export const JUDGE_MARKER = '[agent: Judge]';

/**
 * The judge scores each criterion as an integer from 0 to JUDGE_SCALE, mapped to 0..1 (score / JUDGE_SCALE).
 * Integers in an `enum`, because the grammar-based servers (llama.cpp) ignore a schema's numeric minimum and
 * maximum but do enforce an enum: asked for a number in [0, 1] they let a model write -5634162669002972.
 */
export const JUDGE_SCALE = 10;

const SCORE_VALUES = Array.from({ length: JUDGE_SCALE + 1 }, (_, i) => i);

/**
 * The judge's answer format: one flat JSON object with an integer from 0 to 10
 * for each criterion key and a "rationale" string, e.g.
 * `{"novelty": 7, "feasibility": 8, ..., "rationale": "..."}`.
 * The judge prompt asks for it with `judgeKeysLine(keys)`, and the simulated
 * endpoint reads the keys back with `parseJudgeKeys`.
 */
export function judgeKeysLine(keys: string[]): string {
  return `Return JSON with these keys: ${keys.join(', ')} (each an integer from 0 to ${JUDGE_SCALE}), and "rationale".`;
}

// The line before scores were integers (each a number from 0 to 1) still reads, so stored judge prompts replay.
const JUDGE_KEYS_RE = /Return JSON with these keys: ([^\n(]+?) \(each (?:an integer from 0 to \d+|a number from 0 to 1)\)/;

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

/** One criterion's score: an integer 0..10 (a numeric string is read as its number), as 0..1. */
function scoreOf(key: string): z.ZodType<number> {
  return z.unknown().transform((v, ctx) => {
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) {
      ctx.addIssue({ code: 'custom', message: `missing score for criterion ${key}` });
      return z.NEVER;
    }
    const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v.trim()) : Number.NaN;
    if (!Number.isInteger(n) || n < 0 || n > JUDGE_SCALE) {
      ctx.addIssue({ code: 'custom', message: `score ${JSON.stringify(v)} for criterion ${key} is not an integer from 0 to ${JUDGE_SCALE}` });
      return z.NEVER;
    }
    return n / JUDGE_SCALE;
  }) as unknown as z.ZodType<number>;
}

/** Validates a judge answer for these criterion keys; each score comes out on 0..1. */
export function judgeOutputSchema(keys: string[]): z.ZodType<JudgeOutput> {
  const shape: Record<string, z.ZodType> = {};
  for (const k of keys) shape[k] = scoreOf(k);
  shape.rationale = z.string().default('');
  return z.object(shape) as unknown as z.ZodType<JudgeOutput>;
}

/** The JSON Schema sent as response_format: each score an integer enum, every key required, nothing else. */
export function judgeJsonSchema(keys: string[]): Record<string, unknown> {
  const properties: Record<string, unknown> = {};
  for (const k of keys) properties[k] = { type: 'integer', enum: SCORE_VALUES };
  properties.rationale = { type: 'string' };
  return { type: 'object', properties, required: [...keys, 'rationale'], additionalProperties: false };
}

/** A judge answer as validated: each criterion's score on 0..1, and the rationale. */
export type JudgeOutput = { rationale: string } & Record<string, number | string>;
