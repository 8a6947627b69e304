import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_BACKOFF, isRetryableStatus, retryAfterMs, retryDelayMs } from '../../../src/core/llm/retryPolicy';

describe('retry policy', () => {
  it('reads retry-after-ms, Retry-After seconds and Retry-After HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs(new Headers({ 'retry-after-ms': '250', 'retry-after': '9' }), now), 250);
    assert.equal(retryAfterMs(new Headers({ 'retry-after': '2' }), now), 2000);
    assert.equal(retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), now), 5000);
    assert.equal(retryAfterMs(new Headers({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }), now), 0);
    assert.equal(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now), null);
    assert.equal(retryAfterMs(new Headers(), now), null);
    assert.equal(retryAfterMs(undefined, now), null);
  });

  it('prefers the server wait, capped, over exponential backoff with jitter', () => {
    assert.equal(retryDelayMs(0, 1500, DEFAULT_BACKOFF), 1500);
    assert.equal(retryDelayMs(0, 10 * 60_000, DEFAULT_BACKOFF), DEFAULT_BACKOFF.maxRetryAfterMs);
    assert.equal(retryDelayMs(0, null, DEFAULT_BACKOFF, () => 1), 500);
    assert.equal(retryDelayMs(2, null, DEFAULT_BACKOFF, () => 1), 2000);
    assert.equal(retryDelayMs(2, null, DEFAULT_BACKOFF, () => 0), 1500);
    assert.equal(retryDelayMs(10, null, DEFAULT_BACKOFF, () => 1), DEFAULT_BACKOFF.maxDelayMs);
  });

  it('retries rate limits, timeouts and server errors only', () => {
    for (const s of [408, 409, 429, 500, 502, 503]) assert.equal(isRetryableStatus(s), true, String(s));
    for (const s of [400, 401, 403, 404, 422]) assert.equal(isRetryableStatus(s), false, String(s));
  });
});
