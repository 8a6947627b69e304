/*
 * Hashed features of a hypothesis: lower-cased word unigrams and bigrams,
 * signed feature hashing (collisions cancel out on average instead of piling
 * up), L2-normalised so long and short texts weigh the same; then a bias term
 * and a one-hot of the proposing agent. The hash is fixed (FNV-1a with a
 * murmur3 finaliser) so a saved policy scores the same text the same way on
 * every machine and in every later version.
 */

/** A sparse feature vector: sorted, distinct indices into [0, dim). */
export interface SparseVector {
  readonly dim: number;
  readonly index: Int32Array;
  readonly value: Float64Array;
}

/** Index 0 is the bias; text and agent features hash into 1..dim-1. */
export const BIAS_INDEX = 0;

const UTF8 = new TextEncoder();

/** 32-bit FNV-1a of the UTF-8 bytes, mixed by murmur3's finaliser so every bit is usable. */
export function stableHash32(text: string): number {
  let h = 0x811c9dc5;
  // ASCII is its own UTF-8; only other text pays for an encoding.
  const ascii = /^[\x00-\x7f]*$/.test(text);
  const bytes = ascii ? null : UTF8.encode(text);
  const n = bytes ? bytes.length : text.length;
  for (let i = 0; i < n; i++) {
    h ^= bytes ? bytes[i]! : text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Lower-cased words (letters and digits) of a text. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** The hashed tokens of a text: `w:<word>` unigrams and `b:<word> <word>` bigrams. */
export function textTokens(text: string): string[] {
  const ws = words(text);
  const out = ws.map((w) => `w:${w}`);
  for (let i = 1; i < ws.length; i++) out.push(`b:${ws[i - 1]} ${ws[i]}`);
  return out;
}

export function agentToken(agent: string): string {
  return `agent:${agent}`;
}

/** Where a token lands and with which sign. */
export function hashSlot(token: string, dim: number): { index: number; sign: 1 | -1 } {
  const h = stableHash32(token);
  // The top bit gives the sign, the rest the slot: independent enough after the finaliser.
  return { index: 1 + ((h & 0x7fffffff) % (dim - 1)), sign: h & 0x80000000 ? -1 : 1 };
}

/**
 * Records which token a slot stands for (the first one seen), so a policy can
 * show its heaviest features by name; bounded by the number of slots.
 */
export type FeatureNames = Map<number, { token: string; sign: 1 | -1 }>;

export function hypothesisFeatures(text: string, agent: string | null, dim: number, names?: FeatureNames): SparseVector {
  if (!Number.isInteger(dim) || dim < 16) throw new RangeError(`feature dimension must be an integer of at least 16 (got ${dim})`);
  const acc = new Map<number, number>();
  const add = (token: string, weight: number): void => {
    const { index, sign } = hashSlot(token, dim);
    acc.set(index, (acc.get(index) ?? 0) + sign * weight);
    if (names && !names.has(index)) names.set(index, { token, sign });
  };
  for (const t of textTokens(text)) add(t, 1);
  let norm = 0;
  for (const v of acc.values()) norm += v * v;
  norm = Math.sqrt(norm);
  if (norm > 0) for (const [k, v] of acc) acc.set(k, v / norm);
  // The agent's one-hot is added after normalising so it keeps its unit weight.
  if (agent) {
    const { index } = hashSlot(agentToken(agent), dim);
    acc.set(index, (acc.get(index) ?? 0) + 1);
    if (names && !names.has(index)) names.set(index, { token: agentToken(agent), sign: 1 });
  }
  acc.set(BIAS_INDEX, 1);
  const keys = [...acc.keys()].filter((k) => acc.get(k) !== 0).sort((a, b) => a - b);
  return { dim, index: Int32Array.from(keys), value: Float64Array.from(keys.map((k) => acc.get(k)!)) };
}

/** xᵀw for a dense w. */
export function dot(x: SparseVector, w: Float64Array): number {
  let s = 0;
  for (let i = 0; i < x.index.length; i++) s += x.value[i]! * w[x.index[i]!]!;
  return s;
}
