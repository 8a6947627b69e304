import type { SparseVector } from './features';

/** A pick among candidates: the index, whether it was an ε exploration, and every candidate's score. */
export interface BanditChoice {
  index: number;
  explored: boolean;
  scores: number[];
}

/** What a learner writes into a policy file (plain JSON; large arrays as base64). */
export interface LearnerJSON {
  algorithm: 'linucb' | 'logistic';
  dim: number;
  updates: number;
  [key: string]: unknown;
}

/**
 * A contextual bandit over candidate feature vectors with parameters shared
 * across candidates: any text can be scored, including ones never seen.
 */
export interface BanditLearner {
  readonly algorithm: 'linucb' | 'logistic';
  readonly dim: number;
  /** Rewards learnt from so far. */
  readonly updates: number;
  /** The score `choose` maximises (for LinUCB: estimate plus confidence bonus). */
  scores(xs: readonly SparseVector[]): number[];
  /** The estimated reward of each candidate, without exploration bonus. */
  estimates(xs: readonly SparseVector[]): number[];
  /** ε-greedy: with probability ε a uniform pick, otherwise the best score (first on ties). */
  choose(xs: readonly SparseVector[], rng: () => number, epsilon: number): BanditChoice;
  /** Learns from the reward (0..1) the chosen candidate earned. */
  update(x: SparseVector, reward: number): void;
  /** The linear weights, one per feature slot (for showing the heaviest features). */
  weights(): Float64Array;
  toJSON(): LearnerJSON;
}

export function epsilonGreedy(scores: number[], rng: () => number, epsilon: number): BanditChoice {
  if (scores.length === 0) throw new RangeError('a bandit needs at least one candidate to choose from');
  // Always draw, so the random stream does not depend on ε.
  const u = rng();
  if (u < epsilon) return { index: Math.min(scores.length - 1, Math.floor(rng() * scores.length)), explored: true, scores };
  let best = 0;
  for (let i = 1; i < scores.length; i++) if (scores[i]! > scores[best]!) best = i;
  return { index: best, explored: false, scores };
}

export function checkDim(x: SparseVector, dim: number): void {
  if (x.dim !== dim) throw new RangeError(`feature vector has ${x.dim} slots, the policy expects ${dim}`);
}

export function clampReward(r: number): number {
  if (!Number.isFinite(r)) throw new RangeError(`reward must be a finite number (got ${r})`);
  return Math.min(1, Math.max(0, r));
}

/** Float64Array ⇄ base64 of its little-endian bytes: exact and about a third of the size of JSON numbers. */
export function encodeFloats(a: Float64Array): string {
  const view = new DataView(new ArrayBuffer(a.length * 8));
  for (let i = 0; i < a.length; i++) view.setFloat64(i * 8, a[i]!, true);
  return Buffer.from(view.buffer).toString('base64');
}

export function decodeFloats(text: unknown, length: number, what: string): Float64Array {
  if (typeof text !== 'string') throw new Error(`${what} is missing`);
  const bytes = Buffer.from(text, 'base64');
  if (bytes.length !== length * 8) throw new Error(`${what} has ${bytes.length / 8} numbers, expected ${length}`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float64Array(length);
  for (let i = 0; i < length; i++) {
    const v = view.getFloat64(i * 8, true);
    if (!Number.isFinite(v)) throw new Error(`${what} holds a value that is not a finite number`);
    out[i] = v;
  }
  return out;
}

export function positiveInt(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`${what} must be a non-negative integer`);
  return v;
}

export function finiteNumber(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${what} must be a finite number`);
  return v;
}
