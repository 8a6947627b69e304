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

/**
 * LinUCB with one parameter vector shared by all candidates (the "disjoint
 * arms" form cannot score a hypothesis text it has never seen). Ridge
 * regression A = I + Σ xxᵀ, b = Σ r·x, θ = A⁻¹b; score = θᵀx + α·√(xᵀA⁻¹x).
 * A⁻¹ is kept directly and updated by Sherman–Morrison, so an update costs
 * O(d²) and no matrix is ever inverted; θ follows from the same rank-one
 * step: θ' = θ + (r − θᵀx)·A⁻¹x / (1 + xᵀA⁻¹x).
 */
export class LinUcb implements BanditLearner {
  readonly algorithm = 'linucb' as const;
  private readonly ainv: Float64Array;
  private readonly theta: Float64Array;
  private n = 0;

  constructor(
    readonly dim: number,
    readonly alpha: number,
    state?: { ainv: Float64Array; theta: Float64Array; updates: number },
  ) {
    if (!Number.isInteger(dim) || dim < 1) throw new RangeError(`LinUCB dimension must be a positive integer (got ${dim})`);
    if (!(alpha >= 0)) throw new RangeError(`LinUCB alpha must be ≥ 0 (got ${alpha})`);
    if (state) {
      this.ainv = state.ainv;
      this.theta = state.theta;
      this.n = state.updates;
    } else {
      this.ainv = new Float64Array(dim * dim);
      for (let i = 0; i < dim; i++) this.ainv[i * dim + i] = 1;
      this.theta = new Float64Array(dim);
    }
  }

  get updates(): number {
    return this.n;
  }

  /** xᵀA⁻¹x, touching only the non-zero slots of x. */
  private variance(x: SparseVector): number {
    const d = this.dim;
    let s = 0;
    for (let i = 0; i < x.index.length; i++) {
      const row = x.index[i]! * d;
      let r = 0;
      for (let j = 0; j < x.index.length; j++) r += this.ainv[row + x.index[j]!]! * x.value[j]!;
      s += x.value[i]! * r;
    }
    return Math.max(0, s);
  }

  estimates(xs: readonly SparseVector[]): number[] {
    return xs.map((x) => (checkDim(x, this.dim), dot(x, this.theta)));
  }

  scores(xs: readonly SparseVector[]): number[] {
    return xs.map((x) => (checkDim(x, this.dim), dot(x, this.theta) + this.alpha * Math.sqrt(this.variance(x))));
  }

  choose(xs: readonly SparseVector[], rng: () => number, epsilon: number): BanditChoice {
    return epsilonGreedy(this.scores(xs), rng, epsilon);
  }

  update(x: SparseVector, reward: number): void {
    checkDim(x, this.dim);
    const r = clampReward(reward);
    const d = this.dim;
    const ainv = this.ainv;
    // u = A⁻¹x; A⁻¹ is symmetric, so the rows of x's non-zero slots suffice.
    const u = new Float64Array(d);
    for (let k = 0; k < x.index.length; k++) {
      const row = x.index[k]! * d;
      const v = x.value[k]!;
      for (let i = 0; i < d; i++) u[i] += ainv[row + i]! * v;
    }
    const s = dot(x, u);
    const k = 1 / (1 + s);
    const step = k * (r - dot(x, this.theta));
    for (let i = 0; i < d; i++) this.theta[i] += step * u[i]!;
    for (let i = 0; i < d; i++) {
      const ui = k * u[i]!;
      if (ui === 0) continue;
      const row = i * d;
      for (let j = 0; j < d; j++) ainv[row + j] -= ui * u[j]!;
    }
    this.n++;
  }

  weights(): Float64Array {
    return Float64Array.from(this.theta);
  }

  toJSON(): LearnerJSON {
    return { algorithm: 'linucb', dim: this.dim, updates: this.n, alpha: this.alpha, theta: encodeFloats(this.theta), ainv: encodeFloats(this.ainv) };
  }

  static fromJSON(json: LearnerJSON): LinUcb {
    const dim = positiveInt(json.dim, 'learner.dim');
    return new LinUcb(dim, finiteNumber(json.alpha, 'learner.alpha'), {
      theta: decodeFloats(json.theta, dim, 'learner.theta'),
      ainv: decodeFloats(json.ainv, dim * dim, 'learner.ainv'),
      updates: positiveInt(json.updates, 'learner.updates'),
    });
  }
}
