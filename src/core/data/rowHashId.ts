import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so the same row always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * An id for a row that has none: 12 hex digits of the SHA-256 of its content,
 * so it is the same on every load and does not move when other rows are
 * added or reordered. Exact duplicates get a suffix from the loader.
 */
export function rowHashId(row: unknown): string {
  return createHash('sha256').update(canonicalJson(row)).digest('hex').slice(0, 12);
}
