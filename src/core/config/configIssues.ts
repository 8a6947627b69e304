import type { z } from 'zod';
import { ConfigError } from '../errors';

/** One problem found in a config file, with where it is when that is known. */
export interface ConfigIssue {
  /** Dotted path of the offending value, e.g. agents.Geneticist.model ("" for the whole file). */
  path: string;
  /** What is wrong and how to fix it, without the file name. */
  message: string;
  line?: number;
  column?: number;
}

/** How many issues the one-line message shows; the rest are on `issues`. */
const SHOWN_ISSUES = 3;

/** A config file that parsed but does not match the schema; every problem is on `issues`. */
export class ConfigValidationError extends ConfigError {
  constructor(
    readonly label: string,
    file: string,
    readonly issues: ConfigIssue[],
  ) {
    const shown = issues.slice(0, SHOWN_ISSUES).map((i) => formatConfigIssue(label, i));
    const more = issues.length > SHOWN_ISSUES ? `; and ${issues.length - SHOWN_ISSUES} more problem(s)` : '';
    super(shown.join('; ') + more, file);
  }
}

export function formatConfigIssue(label: string, issue: ConfigIssue): string {
  return issue.path ? `\`${label}\`: ${issue.path}: ${issue.message}` : `\`${label}\`: ${issue.message}`;
}

export function formatConfigPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (typeof seg === 'string' && /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(seg)) out += out ? `.${seg}` : seg;
    else out += `[${JSON.stringify(String(seg))}]`;
  }
  return out;
}

type JsonSchemaNode = {
  description?: string;
  properties?: Record<string, JsonSchemaNode>;
  additionalProperties?: boolean | JsonSchemaNode;
  items?: JsonSchemaNode;
};

/** Follows a value path through a JSON Schema, to name allowed keys and describe fields in messages. */
function schemaAt(schema: JsonSchemaNode, path: ReadonlyArray<PropertyKey>): JsonSchemaNode | undefined {
  let node: JsonSchemaNode | undefined = schema;
  for (const seg of path) {
    if (!node) return undefined;
    if (typeof seg === 'string' && node.properties?.[seg]) node = node.properties[seg];
    else if (typeof node.additionalProperties === 'object') node = node.additionalProperties;
    else if (node.items) node = node.items;
    else return undefined;
  }
  return node;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function show(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) return String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

const EXPECTED_WORDS: Record<string, string> = { int: 'an integer', url: 'a URL' };

/**
 * Turns a zod issue into "what is wrong — how to fix it". The JSON Schema of
 * the same zod schema supplies allowed keys and field descriptions, so the
 * messages stay right when the schema changes.
 */
export function describeZodIssue(issue: z.core.$ZodIssue, jsonSchema: object): { path: PropertyKey[]; message: string } {
  const path = issue.path as PropertyKey[];
  const here = schemaAt(jsonSchema as JsonSchemaNode, path);
  const hint = here?.description ? ` (${here.description.replace(/\.$/, '')})` : '';
  switch (issue.code) {
    case 'invalid_type': {
      const expected = EXPECTED_WORDS[issue.expected] ?? issue.expected;
      if (issue.input === undefined) {
        const key = path[path.length - 1];
        return { path: path.slice(0, -1), message: `missing "${String(key)}" (expected ${expected}) — add it${hint}` };
      }
      return { path, message: `expected ${expected}, got ${kindOf(issue.input)}${hint}` };
    }
    case 'unrecognized_keys': {
      const allowed = Object.keys(schemaAt(jsonSchema as JsonSchemaNode, path)?.properties ?? {});
      const keys = issue.keys.map((k) => `"${k}"`).join(', ');
      const allowedText = allowed.length ? `; allowed keys: ${allowed.join(', ')}` : '';
      return {
        path,
        message: `unknown key${issue.keys.length > 1 ? 's' : ''} ${keys} — remove ${keys} or check the spelling${allowedText}`,
      };
    }
    case 'invalid_value':
      // A message written in the schema (a removed value, say) says more than the generic one.
      if (!issue.message.startsWith('Invalid')) return { path, message: issue.message };
      return { path, message: `expected one of ${issue.values.map(show).join(', ')}, got ${show(issue.input)}` };
    case 'too_small':
    case 'too_big': {
      const small = issue.code === 'too_small';
      const bound = small ? issue.minimum : issue.maximum;
      if (issue.origin === 'string' && small && Number(bound) <= 1) return { path, message: `must not be empty${hint}` };
      if (issue.origin === 'array' || issue.origin === 'string') {
        const unit = issue.origin === 'array' ? 'item(s)' : 'character(s)';
        return { path, message: `needs ${small ? 'at least' : 'at most'} ${String(bound)} ${unit}` };
      }
      const relation = small ? (issue.inclusive ? 'at least' : 'greater than') : issue.inclusive ? 'at most' : 'less than';
      return { path, message: `must be ${relation} ${String(bound)}, got ${show(issue.input)}` };
    }
    case 'invalid_format': {
      // A message written in the schema says more than the generic one.
      if (!issue.message.startsWith('Invalid')) return { path, message: `${issue.message}, got ${show(issue.input)}` };
      const expected = EXPECTED_WORDS[issue.format] ?? `a ${issue.format}`;
      return { path, message: `expected ${expected}, got ${show(issue.input)}${hint}` };
    }
    case 'invalid_key': {
      const inner = issue.issues[0]?.message ?? 'invalid name';
      return { path, message: `invalid name — ${inner}` };
    }
    default:
      return { path, message: issue.message };
  }
}
