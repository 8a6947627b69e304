import { jsonrepair } from 'jsonrepair';
import type { z } from 'zod';

/** Model text holds no JSON value that can be read. */
export class JsonExtractError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonExtractError';
  }
}

export type StructuredResult<T> =
  | { ok: true; value: T; repaired: boolean; raw: string }
  | { ok: false; error: string; raw: string; repaired: boolean };

/**
 * The JSON value in a model answer. Models wrap JSON in ```json fences, put
 * prose before or after it, or write near-JSON (single quotes, trailing
 * commas); all of those are read. Throws JsonExtractError when nothing is.
 */
export function extractJson(text: string): unknown {
  const fenced = fencedBlocks(text);
  // Longest first, so a citation like "[1]" in the prose never wins over the answer.
  const spans = balancedSpans(text).sort((a, b) => b.length - a.length);
  const candidates = [...fenced, text.trim(), ...spans];
  for (const c of candidates) {
    const v = tryParse(c);
    if (v !== undefined) return v;
  }
  for (const c of [...fenced, ...spans, text.trim()]) {
    const v = tryRepair(c);
    if (v !== undefined) return v;
  }
  const preview = text.trim().slice(0, 60).replace(/\s+/g, ' ');
  throw new JsonExtractError(
    text.trim()
      ? `no JSON object or array found in the model output (starts "${preview}${text.trim().length > 60 ? '…' : ''}")`
      : 'the model output is empty; expected a JSON object',
  );
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
 * wrong, and reads that instead. Never throws on bad model output.
 */
export async function parseStructured<T>(
  schema: z.ZodType<T>,
  text: string,
  repair?: (problem: string) => Promise<string>,
): Promise<StructuredResult<T>> {
  const first = validate(schema, text);
  if (first.ok || !repair) return { ...first, repaired: false, raw: text };
  let fixed: string;
  try {
    fixed = await repair(first.error);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    return { ok: false, error: `${first.error}\nrepair failed: ${msg}`, raw: text, repaired: true };
  }
  const second = validate(schema, fixed);
  return { ...second, repaired: true, raw: fixed };
}

/** zod issues as one `path: message` line each. */
export function formatIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('\n');
}

function validate<T>(schema: z.ZodType<T>, text: string): { ok: true; value: T } | { ok: false; error: string } {
  let json: unknown;
  try {
    json = extractJson(text);
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err.message : String(err) };
  }
  const r = schema.safeParse(json);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: formatIssues(r.error) };
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
