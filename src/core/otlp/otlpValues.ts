import type { AttributeValue } from '../trace/span';
import type { OtlpAttrs, OtlpValue } from './otlpModel';

/** An OTLP value as plain JSON data: key-value lists become objects, bytes base64 text. */
export function toPlain(v: OtlpValue): unknown {
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(toPlain);
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [k, toPlain(x)]));
  return v;
}

/** An OTLP value as a span attribute: primitives and arrays of one primitive type as they are, anything else as JSON text. */
export function toAttributeValue(v: OtlpValue): AttributeValue {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (Array.isArray(v) && v.length > 0) {
    const t = typeof v[0];
    if ((t === 'string' || t === 'number' || t === 'boolean') && v.every((x) => typeof x === t)) return v as string[] | number[] | boolean[];
  }
  if (Array.isArray(v) && v.length === 0) return [] as string[];
  const plain = toPlain(v);
  return typeof plain === 'string' ? plain : JSON.stringify(plain);
}

/** A value that may hold JSON text (GenAI conventions put structured values in string attributes): the parsed data, else the value itself. */
export function parsedJson(v: OtlpValue | undefined): unknown {
  if (v === undefined) return undefined;
  if (typeof v === 'string') {
    const t = v.trimStart();
    if (t.startsWith('[') || t.startsWith('{')) {
      try {
        return JSON.parse(v) as unknown;
      } catch {
        return v;
      }
    }
    return v;
  }
  return toPlain(v);
}

export function str(attrs: OtlpAttrs, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = attrs.get(k);
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

export function num(attrs: OtlpAttrs, ...keys: string[]): number | undefined {
  for (const k of keys) {
    const v = attrs.get(k);
    if (typeof v === 'number' && Number.isFinite(v)) return v;
    if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  }
  return undefined;
}

/** Text of a value that is meant as text (arguments, results): strings as they are, anything else as JSON. */
export function asText(v: unknown): string {
  if (typeof v === 'string') return v;
  return v === undefined || v === null ? '' : JSON.stringify(v);
}
