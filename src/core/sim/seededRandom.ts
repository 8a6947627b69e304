import { createHash } from 'node:crypto';
import { seededRandom as mulberry32 } from '../data/seededRandom';

/** A reproducible random stream: the same parts always give the same draws. */
export interface SeededRandom {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [0, n). */
  int(n: number): number;
  /** Integer in [lo, hi]. */
  between(lo: number, hi: number): number;
  pick<T>(items: readonly T[]): T;
  chance(p: number): boolean;
  /** A hex digest of the parts, for ids. */
  readonly digest: string;
}

/**
 * Seeds a small PRNG (mulberry32) from a SHA-256 of the parts, so answers
 * depend on the whole input and the server seed but not on call order.
 */
export function seededRandom(...parts: Array<string | number | null | undefined>): SeededRandom {
  const digest = createHash('sha256')
    .update(parts.map((p) => String(p ?? '')).join('\u241e'))
    .digest('hex');
  const next = mulberry32(Number.parseInt(digest.slice(0, 8), 16));
  return {
    next,
    int: (n) => Math.floor(next() * n),
    between: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
    digest,
  };
}
