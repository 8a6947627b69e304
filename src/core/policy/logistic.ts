import { dot, type SparseVector } from './features';
import {
  checkDim,
  clampReward,
  decodeFloats,
  encodeFloats,
  epsilonGreedy,
  finiteNumber,
  positiveInt,
  type BanditChoice,
  type BanditLearner,
  type LearnerJSON,
} from './learner';

const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/**
 * Logistic regression trained by SGD, each sample weighted by its reward:
 * the chosen candidate counts as a positive example with weight r and as a
 * negative one with weight 1 − r. Summed, that is cross-entropy against the
 * soft label r, whose gradient is (σ(wᵀx) − r)·x — so a reward of 1 pulls the
 * candidate's features up, 0 pushes them down, and 0.5 leaves a 50 % guess
 * where it is. Candidates that were not chosen carry no label: their reward
 * was never observed. No confidence bonus: exploration comes from ε alone.
 */
export class LogisticBandit implements BanditLearner {
  readonly algorithm = 'logistic' as const;
  private readonly w: Float64Array;
  private n = 0;

  constructor(
    readonly dim: number,
    readonly learningRate: number,
    state?: { w: Float64Array; updates: number },
  ) {
    if (!Number.isInteger(dim) || dim < 1) throw new RangeError(`logistic dimension must be a positive integer (got ${dim})`);
    if (!(learningRate > 0)) throw new RangeError(`learning rate must be > 0 (got ${learningRate})`);
    this.w = state?.w ?? new Float64Array(dim);
    this.n = state?.updates ?? 0;
  }

  get updates(): number {
    return this.n;
  }

  estimates(xs: readonly SparseVector[]): number[] {
    return xs.map((x) => (checkDim(x, this.dim), sigmoid(dot(x, this.w))));
  }

  scores(xs: readonly SparseVector[]): number[] {
    return this.estimates(xs);
  }

  choose(xs: readonly SparseVector[], rng: () => number, epsilon: number): BanditChoice {
    return epsilonGreedy(this.scores(xs), rng, epsilon);
  }

  update(x: SparseVector, reward: number): void {
    checkDim(x, this.dim);
    const g = sigmoid(dot(x, this.w)) - clampReward(reward);
    for (let i = 0; i < x.index.length; i++) this.w[x.index[i]!] -= this.learningRate * g * x.value[i]!;
    this.n++;
  }

  weights(): Float64Array {
    return Float64Array.from(this.w);
  }

  toJSON(): LearnerJSON {
    return { algorithm: 'logistic', dim: this.dim, updates: this.n, learningRate: this.learningRate, w: encodeFloats(this.w) };
  }

  static fromJSON(json: LearnerJSON): LogisticBandit {
    const dim = positiveInt(json.dim, 'learner.dim');
    return new LogisticBandit(dim, finiteNumber(json.learningRate, 'learner.learningRate'), {
      w: decodeFloats(json.w, dim, 'learner.w'),
      updates: positiveInt(json.updates, 'learner.updates'),
    });
  }
}
