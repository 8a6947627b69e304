/**
 * Small, dependency-free statistics for reward numbers: means with Student-t
 * confidence intervals, Welch's two-sample t-test, the paired t-test and the
 * Wilcoxon signed-rank test, and a sparkline.
 *
 * Accuracy: the t and normal distributions are computed from the regularized
 * incomplete beta / gamma functions (Lentz continued fractions, Lanczos
 * log-gamma), which agree with R to about 1e-10 relative in the range used
 * here; t quantiles are found by bisection on the CDF to 1e-12. The tests
 * check them against published values (R's t.test / wilcox.test on the
 * `sleep` data, t tables).
 *
 * Every function answers without NaN: too few values gives null, zero
 * variance gives a degenerate but finite answer (p = 1 when the means are
 * equal, p = 0 when they differ).
 */

/** The finite numbers among values that may be missing. */
export function finiteNumbers(xs: ReadonlyArray<number | null | undefined>): number[] {
  return xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
}

export function mean(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

export function median(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Sample variance (n − 1 denominator); null below two values. */
export function sampleVariance(xs: readonly number[]): number | null {
  if (xs.length < 2) return null;
  // Exactly 0 for a constant sample (rounding in the mean would otherwise leave ~1e-33).
  if (xs.every((x) => x === xs[0])) return 0;
  const m = mean(xs)!;
  let ss = 0;
  for (const x of xs) ss += (x - m) ** 2;
  return ss / (xs.length - 1);
}

/** Sample standard deviation (n − 1 denominator); null below two values. */
export function sampleStd(xs: readonly number[]): number | null {
  const v = sampleVariance(xs);
  return v === null ? null : Math.sqrt(v);
}

// ---- special functions ---------------------------------------------------

const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0 (Lanczos, g = 7; ~1e-15 relative). */
export function logGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const z = x - 1;
  let a = LANCZOS[0]!;
  const t = z + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i]! / (z + i);
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(a);
}

const EPS = 1e-15;
const TINY = 1e-300;

function betaContinuedFraction(a: number, b: number, x: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < TINY) d = TINY;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 500; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < TINY) d = TINY;
    c = 1 + aa / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < EPS) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const lnFront = logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x);
  const front = Math.exp(lnFront);
  return x < (a + 1) / (a + b + 2)
    ? (front * betaContinuedFraction(a, b, x)) / a
    : 1 - (front * betaContinuedFraction(b, a, 1 - x)) / b;
}

/** Regularized incomplete gamma, lower P(a, x) and upper Q(a, x) = 1 − P, each computed where it is precise. */
function incompleteGamma(a: number, x: number): { p: number; q: number } {
  if (x <= 0) return { p: 0, q: 1 };
  const lnFront = -x + a * Math.log(x) - logGamma(a);
  if (x < a + 1) {
    let ap = a;
    let sum = 1 / a;
    let del = sum;
    for (let n = 0; n < 1000; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * EPS) break;
    }
    const p = sum * Math.exp(lnFront);
    return { p, q: 1 - p };
  }
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < TINY) d = TINY;
    c = b + an / c;
    if (Math.abs(c) < TINY) c = TINY;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < EPS) break;
  }
  const q = Math.exp(lnFront) * h;
  return { p: 1 - q, q };
}

/** Standard normal CDF Φ(z). */
export function normalCdf(z: number): number {
  if (!Number.isFinite(z)) return z > 0 ? 1 : 0;
  // Φ(z) = ½(1 + erf(z/√2)) with erf(x) = P(½, x²); the tail uses Q directly so small p-values stay precise.
  const { p, q } = incompleteGamma(0.5, (z * z) / 2);
  return z >= 0 ? 0.5 + 0.5 * p : 0.5 * q;
}

/** Two-sided tail P(|T| > |t|) of Student's t with `df` degrees of freedom. */
export function studentTwoSidedP(t: number, df: number): number {
  if (!Number.isFinite(t)) return 0;
  if (t === 0) return 1;
  return Math.min(1, incompleteBeta(df / (df + t * t), df / 2, 0.5));
}

/** CDF of Student's t with `df` (> 0, may be fractional) degrees of freedom. */
export function studentTCdf(t: number, df: number): number {
  const tail = studentTwoSidedP(t, df) / 2;
  return t >= 0 ? 1 - tail : tail;
}

/** Quantile of Student's t: the t with P(T ≤ t) = p. Bisection on the CDF to 1e-12. */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1) || !(df > 0)) throw new RangeError(`studentTQuantile needs 0 < p < 1 and df > 0 (got p=${p}, df=${df})`);
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  let lo = 0;
  let hi = 1;
  while (studentTCdf(hi, df) < p) {
    lo = hi;
    hi *= 2;
    if (hi > 1e12) return hi;
  }
  for (let i = 0; i < 200 && hi - lo > 1e-12 * Math.max(1, hi); i++) {
    const mid = (lo + hi) / 2;
    if (studentTCdf(mid, df) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

// ---- intervals and tests -------------------------------------------------

/** Confidence interval for the mean (Student t). Null below two values; [m, m] when all values are equal. */
export function meanConfidenceInterval(xs: readonly number[], level = 0.95): [number, number] | null {
  if (xs.length < 2) return null;
  const s = sampleStd(xs)!;
  if (s === 0) return [xs[0]!, xs[0]!];
  const m = mean(xs)!;
  const half = (studentTQuantile(1 - (1 - level) / 2, xs.length - 1) * s) / Math.sqrt(xs.length);
  return [m - half, m + half];
}

export interface TTestResult {
  /** Mean of b minus mean of a (Welch), or mean of the differences b[i] − a[i] (paired). */
  delta: number;
  t: number;
  df: number;
  /** Two-sided p-value. */
  pValue: number;
  /** Confidence interval of `delta` at `level`. */
  ci: [number, number];
}

function degenerate(delta: number, df: number): TTestResult {
  return delta === 0
    ? { delta, t: 0, df, pValue: 1, ci: [0, 0] }
    : { delta, t: delta > 0 ? Infinity : -Infinity, df, pValue: 0, ci: [delta, delta] };
}

/**
 * Welch's two-sample t-test (unequal variances) for independent samples, two-sided.
 * `delta` is mean(b) − mean(a): positive when b (e.g. the newer prompt version) scores higher.
 * Null when either sample has fewer than two values.
 */
export function welchTTest(a: readonly number[], b: readonly number[], level = 0.95): TTestResult | null {
  if (a.length < 2 || b.length < 2) return null;
  const delta = mean(b)! - mean(a)!;
  const va = sampleVariance(a)! / a.length;
  const vb = sampleVariance(b)! / b.length;
  const se2 = va + vb;
  if (se2 === 0) return degenerate(delta, a.length + b.length - 2);
  const se = Math.sqrt(se2);
  // Welch–Satterthwaite; a zero term (one sample constant) is fine as long as the sum is not.
  const df = (se2 * se2) / ((va * va) / (a.length - 1) + (vb * vb) / (b.length - 1));
  const t = delta / se;
  const q = studentTQuantile(1 - (1 - level) / 2, df);
  return { delta, t, df, pValue: studentTwoSidedP(t, df), ci: [delta - q * se, delta + q * se] };
}

/**
 * Paired t-test on the same tasks, two-sided: `delta` is the mean of b[i] − a[i].
 * Null with fewer than two pairs; throws when the lengths differ.
 */
export function pairedTTest(a: readonly number[], b: readonly number[], level = 0.95): TTestResult | null {
  const d = differences(a, b);
  if (d.length < 2) return null;
  const delta = mean(d)!;
  const s = sampleStd(d)!;
  const df = d.length - 1;
  if (s === 0) return degenerate(delta, df);
  const se = s / Math.sqrt(d.length);
  const t = delta / se;
  const q = studentTQuantile(1 - (1 - level) / 2, df);
  return { delta, t, df, pValue: studentTwoSidedP(t, df), ci: [delta - q * se, delta + q * se] };
}

function differences(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) throw new RangeError(`paired samples must have the same length (${a.length} vs ${b.length})`);
  return a.map((x, i) => b[i]! - x);
}

export interface WilcoxonResult {
  /** Sum of the ranks of the positive differences b[i] − a[i] (R's V). */
  wPlus: number;
  /** Pairs left after dropping zero differences. */
  n: number;
  zeros: number;
  /** True when some |differences| are tied (ranks were averaged). */
  ties: boolean;
  method: 'exact' | 'normal';
  /** Two-sided p-value. */
  pValue: number;
  /** The normal statistic (with continuity correction) when method is 'normal'. */
  z?: number;
}

/** Average ranks (1-based) of values, ties sharing the mean of their positions. */
export function averageRanks(xs: readonly number[]): number[] {
  const idx = xs.map((_, i) => i).sort((i, j) => xs[i]! - xs[j]!);
  const ranks = new Array<number>(xs.length);
  for (let i = 0; i < idx.length; ) {
    let j = i;
    while (j + 1 < idx.length && xs[idx[j + 1]!] === xs[idx[i]!]) j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) ranks[idx[k]!] = r;
    i = j + 1;
  }
  return ranks;
}

/**
 * Wilcoxon signed-rank test on pairs, two-sided. Zero differences are dropped
 * (Wilcoxon's convention, as R does). For n ≤ `exactMax` (default 20) the
 * p-value is exact: the null distribution of W+ is enumerated by dynamic
 * programming over the actual (possibly tied, averaged) ranks, so ties are
 * handled exactly too. Above that it uses the normal approximation with tie
 * correction and continuity correction (R's `correct = TRUE`).
 * Null when no non-zero differences remain.
 */
export function wilcoxonSignedRank(
  a: readonly number[],
  b: readonly number[],
  opts: { method?: 'auto' | 'exact' | 'normal'; exactMax?: number } = {},
): WilcoxonResult | null {
  const all = differences(a, b);
  const d = all.filter((x) => x !== 0);
  const zeros = all.length - d.length;
  const n = d.length;
  if (n === 0) return null;
  const ranks = averageRanks(d.map(Math.abs));
  let wPlus = 0;
  for (let i = 0; i < n; i++) if (d[i]! > 0) wPlus += ranks[i]!;
  const tieGroups = new Map<number, number>();
  for (const r of ranks) tieGroups.set(r, (tieGroups.get(r) ?? 0) + 1);
  const ties = tieGroups.size < n;
  const method = opts.method === 'exact' || opts.method === 'normal' ? opts.method : n <= (opts.exactMax ?? 20) ? 'exact' : 'normal';

  if (method === 'exact') {
    // Ranks are multiples of ½; doubling makes them integers for the DP.
    const r2 = ranks.map((r) => Math.round(2 * r));
    const max = r2.reduce((s, r) => s + r, 0);
    let counts = new Float64Array(max + 1);
    counts[0] = 1;
    for (const r of r2) {
      const next = counts.slice();
      for (let s = r; s <= max; s++) next[s]! += counts[s - r]!;
      counts = next;
    }
    const total = 2 ** n;
    const w2 = Math.round(2 * wPlus);
    let lower = 0;
    let upper = 0;
    for (let s = 0; s <= max; s++) {
      if (s <= w2) lower += counts[s]!;
      if (s >= w2) upper += counts[s]!;
    }
    return { wPlus, n, zeros, ties, method, pValue: Math.min(1, (2 * Math.min(lower, upper)) / total) };
  }

  const mu = (n * (n + 1)) / 4;
  let tieTerm = 0;
  for (const t of tieGroups.values()) tieTerm += t * t * t - t;
  const sigma = Math.sqrt((n * (n + 1) * (2 * n + 1)) / 24 - tieTerm / 48);
  const diff = wPlus - mu;
  if (sigma === 0) return { wPlus, n, zeros, ties, method, pValue: 1, z: 0 };
  const z = (diff - Math.sign(diff) * 0.5) / sigma;
  return { wPlus, n, zeros, ties, method, z, pValue: Math.min(1, 2 * normalCdf(-Math.abs(z))) };
}

/** Spearman rank correlation (Pearson on average ranks). Null with fewer than two pairs or when either side is constant. */
export function spearman(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length) throw new RangeError(`spearman needs equal lengths (${a.length} vs ${b.length})`);
  if (a.length < 2) return null;
  return pearson(averageRanks(a), averageRanks(b));
}

export function pearson(a: readonly number[], b: readonly number[]): number | null {
  if (a.length !== b.length || a.length < 2) return null;
  const ma = mean(a)!;
  const mb = mean(b)!;
  let sab = 0;
  let saa = 0;
  let sbb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]! - ma;
    const y = b[i]! - mb;
    sab += x * y;
    saa += x * x;
    sbb += y * y;
  }
  if (saa === 0 || sbb === 0) return null;
  return Math.max(-1, Math.min(1, sab / Math.sqrt(saa * sbb)));
}

const BLOCKS = '▁▂▃▄▅▆▇█';

/**
 * The last `width` values as Unicode block characters ▁…█. The scale is
 * [min, max] when given (e.g. 0..1 for rewards), else the range of the values
 * shown; a flat series draws mid-height blocks. Non-finite values are skipped.
 */
export function sparkline(values: readonly number[], opts: { width?: number; min?: number; max?: number } = {}): string {
  const width = opts.width ?? 20;
  const shown = values.filter((v) => Number.isFinite(v)).slice(-Math.max(0, width));
  if (width <= 0 || shown.length === 0) return '';
  const lo = opts.min ?? Math.min(...shown);
  const hi = opts.max ?? Math.max(...shown);
  if (!(hi > lo)) return BLOCKS[3]!.repeat(shown.length);
  return shown
    .map((v) => {
      const f = (Math.min(hi, Math.max(lo, v)) - lo) / (hi - lo);
      return BLOCKS[Math.min(BLOCKS.length - 1, Math.floor(f * BLOCKS.length))]!;
    })
    .join('');
}

/** Quantile of the standard normal: the z with Φ(z) = p. Bisection on the CDF to 1e-12. */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile needs 0 < p < 1 (got p=${p})`);
  if (p === 0.5) return 0;
  if (p < 0.5) return -normalQuantile(1 - p);
  let lo = 0;
  let hi = 1;
  while (normalCdf(hi) < p) {
    lo = hi;
    hi *= 2;
  }
  for (let i = 0; i < 200 && hi - lo > 1e-12; i++) {
    const mid = (lo + hi) / 2;
    if (normalCdf(mid) < p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

/**
 * Wilson score interval for a proportion `successes` / `n`, as fractions
 * (0..1). Unlike the normal (Wald) interval it stays inside [0, 1] and is not
 * degenerate at 0 or n successes, which is what small evaluation runs give.
 * Null when n is 0.
 */
export function wilsonInterval(successes: number, n: number, level = 0.95): [number, number] | null {
  if (!(n > 0)) return null;
  if (successes < 0 || successes > n) throw new RangeError(`wilsonInterval needs 0 ≤ successes ≤ n (got ${successes} of ${n})`);
  const z = normalQuantile(1 - (1 - level) / 2);
  const p = successes / n;
  const z2n = (z * z) / n;
  const centre = (p + z2n / 2) / (1 + z2n);
  const half = (z / (1 + z2n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
  // Exact ends where the data sit at a bound (rounding would otherwise leave 0.9999999999999999).
  return [successes === 0 ? 0 : Math.max(0, centre - half), successes === n ? 1 : Math.min(1, centre + half)];
}

/** The range rewards and judge scores lie in. */
export const UNIT_RANGE: readonly [number, number] = [0, 1];

/**
 * Confidence interval for the mean of values that lie in `bounds` (rewards
 * and judge scores: 0..1), never reaching outside them. When every value sits
 * on a bound (a pass/fail reward) the mean is a proportion and gets the Wilson
 * score interval, which stays informative at 0 % and 100 %; otherwise the
 * Student-t interval, clipped to the bounds. Values outside the bounds say the
 * bounds do not apply (a reward on its own scale): they get the plain t
 * interval. Null without values, and for one value not on a bound.
 */
export function boundedMeanInterval(xs: readonly number[], level = 0.95, bounds: readonly [number, number] = UNIT_RANGE): [number, number] | null {
  const [lo, hi] = bounds;
  if (xs.length === 0) return null;
  if (!xs.every((x) => x >= lo && x <= hi)) return meanConfidenceInterval(xs, level);
  if (Number.isFinite(lo) && Number.isFinite(hi) && hi > lo && xs.every((x) => x === lo || x === hi)) {
    const w = wilsonInterval(xs.filter((x) => x === hi).length, xs.length, level)!;
    return [lo + w[0] * (hi - lo), lo + w[1] * (hi - lo)];
  }
  return clipInterval(meanConfidenceInterval(xs, level), bounds);
}

/** An interval cut to the range its quantity can take (a difference of two 0..1 means lies in −1..1). */
export function clipInterval(ci: [number, number] | null, bounds: readonly [number, number]): [number, number] | null {
  return ci ? [Math.max(bounds[0], ci[0]), Math.min(bounds[1], ci[1])] : null;
}
