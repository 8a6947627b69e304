import { createHash } from 'node:crypto';

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
  let state = Number.parseInt(digest.slice(0, 8), 16) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    between: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (items) => items[Math.floor(next() * items.length)]!,
    chance: (p) => next() < p,
    digest,
  };
}
