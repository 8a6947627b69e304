import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  averageRanks,
  boundedMeanInterval,
  clipInterval,
  mean,
  meanConfidenceInterval,
  median,
  normalCdf,
  pairedTTest,
  sampleStd,
  sparkline,
  spearman,
  studentTCdf,
  studentTQuantile,
  welchTTest,
  wilsonInterval,
  wilcoxonSignedRank,
} from '../../../src/core/analysis/statistics';

// Student's sleep data (R `datasets::sleep`): extra hours of sleep under two drugs, same ten patients.
const DRUG1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
const DRUG2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];
// Hollander & Wolfe (1973) p. 29, the example of R's ?wilcox.test: depression scale before (y) and after (x).
const HW_X = [1.83, 0.5, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.3];
const HW_Y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];

function near(actual: number | null | undefined, expected: number, tol: number, what = ''): void {
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tol, `${what} expected ${expected} ± ${tol}, got ${actual}`);
}

test('mean, median and sample standard deviation', () => {
  assert.equal(mean([]), null);
  near(mean([1, 2, 3, 4]), 2.5, 1e-15);
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(sampleStd([5]), null);
  near(sampleStd([2, 4, 4, 4, 5, 5, 7, 9]), 2.138089935299395, 1e-12); // population sd 2, sample sd √(32/7)
  assert.equal(sampleStd([3, 3, 3]), 0);
});

test('Student t quantiles and CDF match t tables', () => {
  near(studentTQuantile(0.975, 4), 2.776445, 1e-6);
  near(studentTQuantile(0.975, 29), 2.045230, 1e-6);
  near(studentTQuantile(0.975, 1), 12.706205, 1e-6);
  near(studentTQuantile(0.995, 10), 3.169273, 1e-6);
  near(studentTQuantile(0.025, 9), -2.262157, 1e-6);
  near(studentTQuantile(0.975, 1e6), 1.959966, 1e-5);
  near(studentTCdf(2.228139, 10), 0.975, 1e-7);
  near(studentTCdf(0, 3), 0.5, 1e-15);
  assert.throws(() => studentTQuantile(1, 3), RangeError);
});

test('normal CDF, including a far tail', () => {
  near(normalCdf(1.959963984540054), 0.975, 1e-12);
  near(normalCdf(0), 0.5, 1e-15);
  near(normalCdf(-1), 0.15865525393145707, 1e-13);
  near(normalCdf(-6) / 9.865876450376946e-10, 1, 1e-9);
});

test('95% confidence interval of a mean (R: t.test(sleep drug 1) → -0.5297804 2.0297804)', () => {
  const ci = meanConfidenceInterval(DRUG1)!;
  near(ci[0], -0.5297804, 1e-7);
  near(ci[1], 2.0297804, 1e-7);
  assert.equal(meanConfidenceInterval([0.7]), null);
  assert.equal(meanConfidenceInterval([]), null);
  assert.deepEqual(meanConfidenceInterval([0.4, 0.4, 0.4]), [0.4, 0.4]);
});

test("Welch's t-test (R: t.test(extra ~ group, sleep) → t = -1.8608, df = 17.776, p = 0.07939)", () => {
  const r = welchTTest(DRUG2, DRUG1)!;
  near(r.delta, -1.58, 1e-12);
  near(r.t, -1.860813, 1e-6);
  near(r.df, 17.77647, 1e-5);
  near(r.pValue, 0.07939414, 1e-8);
  near(r.ci[0], -3.3654832, 1e-7);
  near(r.ci[1], 0.2054832, 1e-7);
  assert.equal(welchTTest([1], [1, 2]), null);
  assert.deepEqual(welchTTest([0.5, 0.5], [0.5, 0.5, 0.5])!.pValue, 1);
  const apart = welchTTest([0.2, 0.2], [0.8, 0.8])!;
  assert.equal(apart.pValue, 0);
  near(apart.delta, 0.6, 1e-12);
  const oneConstant = welchTTest([0.5, 0.5, 0.5], [0.6, 0.7, 0.8])!;
  assert.ok(Number.isFinite(oneConstant.pValue) && oneConstant.pValue > 0 && oneConstant.pValue < 0.1);
});

test('paired t-test (R: t.test(drug2, drug1, paired = TRUE) → t = 4.0621, df = 9, p = 0.002833)', () => {
  const r = pairedTTest(DRUG1, DRUG2)!;
  near(r.delta, 1.58, 1e-12);
  near(r.t, 4.062128, 1e-6);
  assert.equal(r.df, 9);
  near(r.pValue, 0.002832890, 1e-9);
  near(r.ci[0], 0.7001142, 1e-7);
  near(r.ci[1], 2.4598858, 1e-7);
  assert.equal(pairedTTest([1], [2]), null);
  assert.equal(pairedTTest([1, 2, 3], [1, 2, 3])!.pValue, 1);
  assert.equal(pairedTTest([1, 2, 3], [2, 3, 4])!.pValue, 0);
  assert.throws(() => pairedTTest([1, 2], [1]), RangeError);
});

test('Wilcoxon signed-rank, exact (R ?wilcox.test example: V = 40, two-sided p = 0.03906)', () => {
  const r = wilcoxonSignedRank(HW_Y, HW_X)!;
  assert.equal(r.method, 'exact');
  assert.equal(r.wPlus, 40);
  assert.equal(r.n, 9);
  // By hand: W− = 5; subsets of {1..9} summing to ≤ 5 are 10 of 512, so p = 2 · 10/512.
  assert.equal(r.pValue, 20 / 512);
  // Reversed pairs: same p-value, W+ mirrored.
  const back = wilcoxonSignedRank(HW_X, HW_Y)!;
  assert.equal(back.wPlus, 5);
  assert.equal(back.pValue, 20 / 512);
});

test('Wilcoxon signed-rank, exact with ties and zeros (sleep: one zero dropped, all 9 ranks negative → p = 2/512)', () => {
  const r = wilcoxonSignedRank(DRUG2, DRUG1)!;
  assert.equal(r.zeros, 1);
  assert.equal(r.n, 9);
  assert.equal(r.ties, true);
  assert.equal(r.wPlus, 0);
  assert.equal(r.pValue, 2 / 512);
});

test('Wilcoxon signed-rank, normal approximation with tie and continuity correction (R: V = 0, p = 0.009091)', () => {
  const r = wilcoxonSignedRank(DRUG2, DRUG1, { method: 'normal' })!;
  assert.equal(r.method, 'normal');
  near(r.pValue, 0.009090698, 1e-8);
  // R: wilcox.test(x, y, paired = TRUE, exact = FALSE) → p = 0.04401.
  near(wilcoxonSignedRank(HW_Y, HW_X, { method: 'normal' })!.pValue, 0.04401098, 1e-7);
});

test('Wilcoxon signed-rank switches to the normal approximation above 20 pairs', () => {
  const a = Array.from({ length: 25 }, () => 0);
  const b = Array.from({ length: 25 }, (_, i) => i + 1);
  const r = wilcoxonSignedRank(a, b)!;
  assert.equal(r.method, 'normal');
  assert.equal(r.wPlus, 325);
  // z = (325 − 162.5 − 0.5) / √1381.25 = 4.3589197; 2·(1 − Φ(z)) = erfc(z/√2) = 1.3070605e-5.
  near(r.z, 4.3589197, 1e-7);
  near(r.pValue / 1.3070605e-5, 1, 1e-7);
  // Exact on the same data: only the all-positive sign pattern reaches 325.
  assert.equal(wilcoxonSignedRank(a, b, { method: 'exact' })!.pValue, 2 / 2 ** 25);
  assert.equal(wilcoxonSignedRank([1, 2], [1, 2]), null);
});

test('average ranks and Spearman correlation', () => {
  assert.deepEqual(averageRanks([10, 20, 20, 5]), [2, 3.5, 3.5, 1]);
  near(spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]), 0.8207827, 1e-7);
  assert.equal(spearman([1, 2, 3], [3, 2, 1]), -1);
  assert.equal(spearman([1, 1, 1], [1, 2, 3]), null);
});

test('sparkline: last N values as block characters', () => {
  assert.equal(sparkline([0, 1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 6 / 7, 1], { min: 0, max: 1 }), '▁▂▃▄▅▆▇█');
  assert.equal(sparkline([1, 2, 3, 4, 5], { width: 3 }), '▁▅█');
  assert.equal(sparkline([0.5, 0.5]), '▄▄');
  assert.equal(sparkline([]), '');
  assert.equal(sparkline([0.2, Number.NaN, 0.8], { min: 0, max: 1 }), '▂▇');
  assert.equal(sparkline([-1, 2], { min: 0, max: 1 }), '▁█');
});

test('a 0..1 reward gets an interval inside 0..1: Wilson when every value is 0 or 1, clipped Student t otherwise', () => {
  // The case: a pass/fail reward of a few rollouts, whose t interval reaches [-0.08, 1.28].
  const passFail = [1, 0, 1, 0, 1];
  assert.deepEqual(meanConfidenceInterval(passFail)!.map((x) => Number(x.toFixed(2))), [-0.08, 1.28]);
  assert.deepEqual(boundedMeanInterval(passFail), wilsonInterval(3, 5), 'a mean of 0/1 values is a proportion');
  // Wilson says something at 0 % and 100 %, where t collapses to a point.
  assert.deepEqual(meanConfidenceInterval([0, 0, 0]), [0, 0]);
  const zeros = boundedMeanInterval([0, 0, 0])!;
  assert.ok(zeros[0] === 0 && zeros[1] > 0.4 && zeros[1] < 0.6, `${zeros}`);
  // Other rewards: Student t, cut at the bounds and unchanged inside them.
  const near1 = [1, 1, 0.9];
  assert.deepEqual(boundedMeanInterval(near1), [meanConfidenceInterval(near1)![0], 1]);
  const mid = [0.4, 0.5, 0.6, 0.55];
  assert.deepEqual(boundedMeanInterval(mid), meanConfidenceInterval(mid));
  // Other bounds map the proportion onto them.
  assert.deepEqual(boundedMeanInterval([-1, 1, 1], 0.95, [-1, 1]), wilsonInterval(2, 3)!.map((x) => -1 + 2 * x));
  // Values outside the bounds say the bounds are wrong for them: the plain t interval.
  assert.deepEqual(boundedMeanInterval([0.5, 1.5, 2]), meanConfidenceInterval([0.5, 1.5, 2]));
  assert.equal(boundedMeanInterval([]), null);
  assert.equal(boundedMeanInterval([0.5]), null, 'one value that is not 0 or 1 has no interval');
  assert.deepEqual(boundedMeanInterval([1]), wilsonInterval(1, 1));
  assert.deepEqual(clipInterval([-1.4, 0.3], [-1, 1]), [-1, 0.3]);
  assert.equal(clipInterval(null, [0, 1]), null);
});
