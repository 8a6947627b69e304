import type OpenAI from 'openai';
import { z } from 'zod';
import type { StructuredOutputMode } from '../config/schema';

/** The JSON Schema an answer must follow, as sent in `response_format.json_schema`. */
export interface OutputSchema {
  /** `json_schema.name`: OpenAI allows letters, digits, "_" and "-", 64 at most. */
  name: string;
  schema: Record<string, unknown>;
  /** Whether the schema meets OpenAI's strict mode (every key required, no free-form objects). */
  strict: boolean;
}

/** Call option of RoutedChatModel: the answer should follow this schema. */
export interface OutputSchemaCallOption {
  outputSchema?: OutputSchema;
}

export type ResponseFormat = OpenAI.ResponseFormatJSONSchema | OpenAI.ResponseFormatJSONObject;

// Keywords OpenAI's strict mode rejects; the grammar-based servers do not need them either,
// because every answer is validated with its zod schema after it arrives.
const DROPPED_KEYWORDS = new Set(['$schema', 'default', 'minLength', 'maxLength']);

/**
 * The JSON Schema of a zod answer schema, for `response_format`. The output
 * side is used: keys with a default are required, so every server that
 * enforces it by grammar makes the model write them.
 */
export function outputSchemaFor(schema: z.ZodType, name: string): OutputSchema {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return outputSchemaOf(json, name);
}

/** A JSON Schema given as a plain object (a user graph's own), cleaned the same way. */
export function outputSchemaOf(json: Record<string, unknown>, name: string): OutputSchema {
  const schema = clean(json) as Record<string, unknown>;
  return { name: schemaName(name), schema, strict: isStrictCompatible(schema) };
}

/** What to send for a mode; undefined for "off". */
export function responseFormatFor(mode: StructuredOutputMode, out: OutputSchema): ResponseFormat | undefined {
  if (mode === 'json_schema') return { type: 'json_schema', json_schema: { name: out.name, schema: out.schema, strict: out.strict } };
  if (mode === 'json_object') return { type: 'json_object' };
  return undefined;
}

/** The mode to try when a server rejects `mode`: any JSON object, then none. */
export function weakerMode(mode: StructuredOutputMode): StructuredOutputMode {
  return mode === 'json_schema' ? 'json_object' : 'off';
}

/** The mode a request asks for, from its response_format. */
export function modeOf(format: { type?: string } | null | undefined): StructuredOutputMode {
  return format?.type === 'json_schema' ? 'json_schema' : format?.type === 'json_object' ? 'json_object' : 'off';
}

function schemaName(name: string): string {
  const s = name.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 64);
  return s || 'answer';
}

// Keywords whose value maps names to schemas: the names are data, not keywords.
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'patternProperties']);

function clean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(clean);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (DROPPED_KEYWORDS.has(k)) continue;
    // zod's .int() bounds: no limit at all, but a huge digit-range rule for grammar-based servers.
    if ((k === 'maximum' && v === Number.MAX_SAFE_INTEGER) || (k === 'minimum' && v === Number.MIN_SAFE_INTEGER)) continue;
    out[k] = SCHEMA_MAPS.has(k) && v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, clean(s)])) : clean(v);
  }
  return out;
}

/** Every object closed and fully required, as OpenAI's strict mode demands; anything else is sent with strict false. */
function isStrictCompatible(node: unknown): boolean {
  if (Array.isArray(node)) return node.every(isStrictCompatible);
  if (node === null || typeof node !== 'object') return true;
  const n = node as Record<string, unknown>;
  const properties = (n.properties as Record<string, unknown> | undefined) ?? {};
  if (n.type === 'object' || n.properties !== undefined) {
    if (n.additionalProperties !== false || n.propertyNames !== undefined) return false;
    const required = new Set(Array.isArray(n.required) ? (n.required as string[]) : []);
    if (!Object.keys(properties).every((k) => required.has(k))) return false;
  }
  const children = Object.entries(n).flatMap(([k, v]) => (SCHEMA_MAPS.has(k) && v && typeof v === 'object' ? Object.values(v) : [v]));
  return children.every(isStrictCompatible);
}
