import { jsonrepair } from 'jsonrepair';
import type { z } from 'zod';

/** Model text holds no JSON value that can be read. */
export class JsonExtractError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonExtractError';
  }
}

/**
 * How an answer that was not usable as given became one: 'local' when near-JSON was fixed here (jsonrepair), 'request'
 * when the model was asked to correct it; null when it was valid as given.
 */
export type RepairKind = 'local' | 'request';

export type StructuredResult<T> =
  | { ok: true; value: T; repaired: boolean; repair: RepairKind | null; raw: string; original: string }
  | { ok: false; error: string; raw: string; repaired: boolean; repair: RepairKind | null; original: string };

export interface ParseStructuredOptions {
  /**
   * 'local' (default): near-JSON that jsonrepair can read is used as repaired locally. 'request': such an answer
   * goes back to the model with a repair request, and the local reading is used only when the correction is no better.
   */
  policy?: 'local' | 'request';
}

/** The JSON in a model answer, and whether reading it took jsonrepair (and the parse error that made it necessary). */
interface ReadJson {
  value: unknown;
  repairedLocally: boolean;
  parseError: string | null;
}

/**
 * The JSON value in a model answer. Models wrap JSON in ```json fences, put
 * prose before or after it, or write near-JSON (single quotes, trailing
 * commas); all of those are read. Throws JsonExtractError when nothing is.
 */
export function extractJson(text: string): unknown {
  return readJson(text).value;
}

function readJson(text: string): ReadJson {
  const fenced = fencedBlocks(text);
  // Longest first, so a citation like "[1]" in the prose never wins over the answer.
  const spans = balancedSpans(text).sort((a, b) => b.length - a.length);
  const candidates = [...fenced, text.trim(), ...spans];
  for (const c of candidates) {
    const v = tryParse(c);
    if (v !== undefined) return { value: v, repairedLocally: false, parseError: null };
  }
  for (const c of [...fenced, ...spans, text.trim()]) {
    const v = tryRepair(c);
    if (v !== undefined) return { value: v, repairedLocally: true, parseError: parseErrorOf(c) };
  }
  const preview = text.trim().slice(0, 60).replace(/\s+/g, ' ');
  throw new JsonExtractError(
    text.trim()
      ? `no JSON object or array found in the model output (starts "${preview}${text.trim().length > 60 ? '…' : ''}")`
      : 'the model output is empty; expected a JSON object',
  );
}

function parseErrorOf(s: string): string {
  try {
    JSON.parse(s.trim());
    return 'not valid JSON';
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/** Every JSON object written in `text` (e.g. earlier answers quoted in a prompt), in order of appearance. */
export function jsonObjectsIn(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const span of balancedSpans(text)) {
    const v = tryParse(span);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, unknown>);
  }
  return out;
}

/**
 * Reads and validates a structured answer. When it is not valid and `repair`
 * is given, asks for a corrected answer once, with a description of what was
 * wrong, and reads that instead. Near-JSON is fixed locally or sent back for
 * repair as `opts.policy` says; either way the result says how it was
 * repaired and keeps the original text. Never throws on bad model output.
 */
export async function parseStructured<T>(
  schema: z.ZodType<T>,
  text: string,
  repair?: (problem: string) => Promise<string>,
  opts: ParseStructuredOptions = {},
): Promise<StructuredResult<T>> {
  const first = validate(schema, text);
  const local = first.ok && first.repairedLocally;
  const askAnyway = local && opts.policy === 'request' && repair !== undefined;
  if (first.ok && !askAnyway) return { ok: true, value: first.value, repaired: local, repair: local ? 'local' : null, raw: text, original: text };
  if (!first.ok && !repair) return { ok: false, error: first.error, repaired: false, repair: null, raw: text, original: text };
  const problem = first.ok ? `the answer is not valid JSON (${first.parseError ?? 'it needed repair to be read'})` : first.error;
  let fixed: string;
  try {
    fixed = await repair!(problem);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (first.ok) return { ok: true, value: first.value, repaired: true, repair: 'local', raw: text, original: text };
    return { ok: false, error: `${first.error}\nrepair failed: ${msg}`, raw: text, repaired: true, repair: 'request', original: text };
  }
  const second = validate(schema, fixed);
  // The model's correction no better than what was read here: the local reading stands.
  if (!second.ok && first.ok) return { ok: true, value: first.value, repaired: true, repair: 'local', raw: text, original: text };
  return second.ok
    ? { ok: true, value: second.value, repaired: true, repair: 'request', raw: fixed, original: text }
    : { ok: false, error: second.error, repaired: true, repair: 'request', raw: fixed, original: text };
}

/** zod issues as one `path: message` line each. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('\n');
}

function validate<T>(
  schema: z.ZodType<T>,
  text: string,
): { ok: true; value: T; repairedLocally: boolean; parseError: string | null } | { ok: false; error: string } {
  let json: ReadJson;
  try {
    json = readJson(text);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  const r = schema.safeParse(json.value);
  return r.success ? { ok: true, value: r.data, repairedLocally: json.repairedLocally, parseError: json.parseError } : { ok: false, error: formatIssues(r.error) };
}

function tryParse(s: string): unknown {
  if (!/^[[{]/.test(s)) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

function tryRepair(s: string): unknown {
  const t = s.trim();
  if (!/^[[{]/.test(t)) return undefined;
  try {
    return JSON.parse(jsonrepair(t));
  } catch {
    return undefined;
  }
}

function fencedBlocks(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/```[ \t]*([A-Za-z0-9_-]*)[^\n]*\n([\s\S]*?)(?:```|$)/g)) {
    out.push(m[2]!.trim());
  }
  return out;
}

/**
 * Each top-level balanced {...} or [...] span, found by bracket counting that
 * skips brackets inside strings, so prose before and after is ignored.
 */
function balancedSpans(text: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < text.length) {
    const start = findOpen(text, i);
    if (start < 0) break;
    const end = matchClose(text, start);
    if (end < 0) {
      // Unclosed (truncated output): offer the rest for repair.
      out.push(text.slice(start).trim());
      i = start + 1;
      continue;
    }
    out.push(text.slice(start, end + 1));
    i = end + 1;
  }
  return out;
}

function findOpen(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '[') return i;
  }
  return -1;
}

function matchClose(text: string, start: number): number {
  const stack: string[] = [];
  let quote: string | null = null;
  for (let i = start; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"') quote = c;
    else if (c === '{') stack.push('}');
    else if (c === '[') stack.push(']');
    else if (c === '}' || c === ']') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}
