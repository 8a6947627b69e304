import type { SeededRandom } from './seededRandom';

type JsonSchema = Record<string, unknown>;

/**
 * A value that a JSON Schema accepts, filled with the simulator's answer text:
 * what a server that enforces `response_format: json_schema` by grammar would
 * let a model say. Covers what zod's JSON Schemas use (objects, arrays,
 * strings, numbers with bounds, booleans, enums, consts, anyOf/oneOf, nullable,
 * local $refs); anything else gets the answer text.
 */
export function schemaInstance(schema: unknown, text: string, rng: SeededRandom): unknown {
  const root = isObject(schema) ? schema : {};
  return instance(root, root, text, rng, 0);
}

function instance(s: JsonSchema, root: JsonSchema, text: string, rng: SeededRandom, depth: number): unknown {
  if (depth > 8) return null;
  if (typeof s.$ref === 'string') return instance(resolveRef(s.$ref, root), root, text, rng, depth + 1);
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return rng.pick(s.enum);
  const alternatives = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : []).filter(isObject);
  if (alternatives.length) {
    // A real answer, not the null of a nullable field.
    const some = alternatives.find((a) => a.type !== 'null') ?? alternatives[0]!;
    return instance(some, root, text, rng, depth + 1);
  }
  const type = Array.isArray(s.type) ? (s.type.find((t) => t !== 'null') ?? s.type[0]) : s.type;
  switch (type) {
    case 'object': {
      const props = isObject(s.properties) ? s.properties : {};
      return Object.fromEntries(Object.entries(props).map(([k, p]) => [k, instance(isObject(p) ? p : {}, root, text, rng, depth + 1)]));
    }
    case 'array': {
      const n = Math.max(typeof s.minItems === 'number' ? s.minItems : 1, 1);
      const items = isObject(s.items) ? s.items : {};
      return Array.from({ length: Math.min(n, typeof s.maxItems === 'number' ? s.maxItems : n) }, () => instance(items, root, text, rng, depth + 1));
    }
    case 'integer':
    case 'number': {
      const lo = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : 0;
      const hi = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum - 1 : Math.max(lo, 1);
      const x = lo + rng.next() * Math.max(0, hi - lo);
      return type === 'integer' ? Math.round(x) : Math.round(x * 100) / 100;
    }
    case 'boolean':
      return rng.chance(0.5);
    case 'null':
      return null;
    default: {
      const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
      const min = typeof s.minLength === 'number' ? s.minLength : 0;
      return text.padEnd(min, '.').slice(0, max);
    }
  }
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema {
  if (!ref.startsWith('#')) return {};
  let node: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) node = isObject(node) ? node[part.replace(/~1/g, '/').replace(/~0/g, '~')] : undefined;
  return isObject(node) ? node : {};
}

function isObject(x: unknown): x is JsonSchema {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}
