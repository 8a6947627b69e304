import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalCdf, normalQuantile, wilsonInterval } from '../../../src/core/analysis/statistics';
import { meanStat, rateStat } from '../../../src/core/analysis/reportStats';

function near(actual: number, expected: number, tol: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: ${actual} vs ${expected}`);
}

test('normalQuantile inverts Φ and gives the textbook critical values', () => {
  near(normalQuantile(0.975), 1.959963984540054, 1e-10, 'z 0.975');
  near(normalQuantile(0.95), 1.6448536269514722, 1e-10, 'z 0.95');
  near(normalQuantile(0.005), -2.5758293035489004, 1e-10, 'z 0.005');
  assert.equal(normalQuantile(0.5), 0);
  for (const p of [0.001, 0.2, 0.7, 0.999]) near(normalCdf(normalQuantile(p)), p, 1e-12, `Φ(Φ⁻¹(${p}))`);
  assert.throws(() => normalQuantile(1), RangeError);
});

test('Wilson score interval: the worked examples of Newcombe (1998), Table I', () => {
  // Newcombe, "Two-sided confidence intervals for the single proportion", Stat Med 17:857–872, method 3.
  const cases: Array<[number, number, number, number]> = [
    [81, 263, 0.2553, 0.3662],
    [15, 148, 0.0624, 0.1605],
    [0, 20, 0, 0.1611],
    [1, 29, 0.0061, 0.1718],
  ];
  for (const [k, n, lo, hi] of cases) {
    const ci = wilsonInterval(k, n)!;
    near(ci[0], lo, 5e-5, `${k}/${n} low`);
    near(ci[1], hi, 5e-5, `${k}/${n} high`);
  }
  assert.deepEqual(wilsonInterval(20, 20)!.map((x) => Number(x.toFixed(4))), [0.8389, 1]);
  assert.equal(wilsonInterval(0, 0), null);
  assert.throws(() => wilsonInterval(3, 2), RangeError);
  // A wider level gives a wider interval around the same proportion.
  const a = wilsonInterval(5, 10, 0.9)!;
  const b = wilsonInterval(5, 10, 0.99)!;
  assert.ok(b[0] < a[0] && b[1] > a[1]);
});

test('report statistics: rates in percent with Wilson, means with Student t (null below two values)', () => {
  const r = rateStat(81, 263);
  near(r.rate!, (100 * 81) / 263, 1e-12, 'rate');
  near(r.ci![0], 25.53, 5e-3, 'rate low');
  near(r.ci![1], 36.62, 5e-3, 'rate high');
  assert.deepEqual(rateStat(0, 0), { count: 0, n: 0, rate: null, ci: null });
  // R: t.test(c(1, 2, 3, 4))$conf.int = 0.4457397 4.5542603
  const m = meanStat([1, 2, 3, 4]);
  near(m.mean!, 2.5, 1e-12, 'mean');
  near(m.ci![0], 0.4457397, 1e-6, 't low');
  near(m.ci![1], 4.5542603, 1e-6, 't high');
  assert.deepEqual(meanStat([0.5]).ci, null);
  assert.deepEqual(meanStat([0.5, 0.5]).ci, [0.5, 0.5]);
  assert.deepEqual(meanStat([]), { n: 0, mean: null, ci: null, std: null, min: null, max: null });
});

test('meanStat clips the interval of a bounded score to its range, and leaves an unbounded one alone', () => {
  const scores = [1, 1, 0.9];
  const open = meanStat(scores);
  assert.ok(open.ci && open.ci[1] > 1, `the plain t interval of ${scores.join(', ')} reaches past 1: ${open.ci}`);
  const clipped = meanStat(scores, [0, 1]);
  assert.equal(clipped.ci![1], 1);
  assert.equal(clipped.ci![0], open.ci![0]);
  assert.equal(clipped.mean, open.mean);
});
