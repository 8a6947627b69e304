import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { meanPm } from '../../../webview/comparison/format';

describe('comparison panel number formatting', () => {
  it('shows a centred interval as ± its half-width, and a bounded one by its ends', () => {
    assert.equal(meanPm(0.5, [0.4, 0.6]), '0.500 ± 0.100');
    // All-success binary rewards: a Wilson interval that ends at 1 is not centred on the mean.
    assert.equal(meanPm(1, [0.566, 1]), '1.000 (0.566 to 1.000)');
    assert.equal(meanPm(0.7, null), '0.700');
    assert.equal(meanPm(null, [0, 1]), 'n/a');
  });
});
