import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_BINS, MIN_BINS, rewardBins } from '../../../src/extension/rewardWeights/whatIf';

/** Counts written out independently: edges[i] ≤ v < edges[i + 1], the last bin closed. */
function expectedCounts(values: number[], edges: number[]): number[] {
  return edges.slice(0, -1).map((e, i) => values.filter((v) => v >= e && (i === edges.length - 2 ? v <= edges[i + 1]! : v < edges[i + 1]!)).length);
}

/** A deterministic spread of n rewards in [lo, hi]. */
function spread(n: number, lo: number, hi: number, seed = 1): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 48271) % 2147483647;
    return lo + ((x % 10_000) / 10_000) * (hi - lo);
  });
}

describe('reward histogram bins', () => {
  it('choose bins from the data: rewards between 0.6 and 0.75 get narrow bins over their own range', () => {
    const before = spread(200, 0.6, 0.75);
    const after = spread(200, 0.62, 0.78, 7);
    const b = rewardBins(before, after);
    const bins = b.edges.length - 1;
    assert.ok(bins >= MIN_BINS && bins <= MAX_BINS, `${bins} bins`);
    assert.ok(b.edges[1]! - b.edges[0]! < 0.025, `bins of ${b.edges[1]! - b.edges[0]!}, not tenths`);
    assert.ok(b.edges[0]! <= 0.6 && b.edges[0]! >= 0.55, `from ${b.edges[0]}`);
    assert.ok(b.edges.at(-1)! > Math.max(...after) && b.edges.at(-1)! <= 0.85, `to ${b.edges.at(-1)}`);
    assert.deepEqual(b.before, expectedCounts(before, b.edges));
    assert.deepEqual(b.after, expectedCounts(after, b.edges));
    assert.equal(b.before.reduce((x, y) => x + y, 0), 200);
  });

  it('stay between 8 and 40 bins for a handful of rewards, a flood of them, one repeated value or none', () => {
    for (const [before, after] of [
      [[0.1, 0.9], [0.5]],
      [spread(100_000, 0, 1), spread(100_000, 0, 1, 3)],
      [[0.7, 0.7, 0.7], [0.7]],
      [[0, 0, 0, 0, 1], [0, 1, 1, 1]],
    ] as Array<[number[], number[]]>) {
      const b = rewardBins(before, after);
      const bins = b.edges.length - 1;
      assert.ok(bins >= MIN_BINS && bins <= MAX_BINS, `${bins} bins for ${before.length} rewards`);
      assert.deepEqual(b.before, expectedCounts(before, b.edges));
      assert.deepEqual(b.after, expectedCounts(after, b.edges));
    }
    assert.deepEqual(rewardBins([], []), { edges: [0, 1], before: [0], after: [0] });
  });
});
