import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeFilter, filterToQuery, formatRewardRange, isEmptyFilter, parseRewardRange } from '../../../src/extension/view/rolloutFilter';

describe('rollout filter', () => {
  it('parses the reward ranges a user types', () => {
    assert.deepEqual(parseRewardRange(''), {});
    assert.deepEqual(parseRewardRange('  '), {});
    assert.deepEqual(parseRewardRange('0.5-1'), { minReward: 0.5, maxReward: 1 });
    assert.deepEqual(parseRewardRange('0.2 .. 0.8'), { minReward: 0.2, maxReward: 0.8 });
    assert.deepEqual(parseRewardRange('.2 to .4'), { minReward: 0.2, maxReward: 0.4 });
    assert.deepEqual(parseRewardRange('-1 - 0'), { minReward: -1, maxReward: 0 });
    assert.deepEqual(parseRewardRange('>= 0.7'), { minReward: 0.7 });
    assert.deepEqual(parseRewardRange('≥0.7'), { minReward: 0.7 });
    assert.deepEqual(parseRewardRange('<0.3'), { maxReward: 0.3 });
    assert.deepEqual(parseRewardRange('0.71'), { minReward: 0.71, maxReward: 0.71 });
    assert.match(parseRewardRange('0.9-0.1') as string, /above the upper bound/);
    assert.match(parseRewardRange('high') as string, /range such as/);
    assert.match(parseRewardRange('1-2-3') as string, /range such as/);
  });

  it('writes a range back as it would be typed', () => {
    for (const text of ['0.5-1', '>= 0.5', '<= 0.3', '']) assert.equal(formatRewardRange(parseRewardRange(text) as object), text);
  });

  it('turns a filter into a paged store query, newest first', () => {
    assert.deepEqual(filterToQuery({}, { runId: 'r1', limit: 50 }), { runId: 'r1', limit: 50, offset: 0, sort: 'startTime', order: 'desc' });
    const q = filterToQuery({ status: ['failed'], minReward: 0.2, maxReward: 0.9, split: 'val' }, { runId: 'r1', limit: 10, offset: 20 });
    assert.deepEqual(q, { runId: 'r1', limit: 10, offset: 20, sort: 'startTime', order: 'desc', status: ['failed'], minReward: 0.2, maxReward: 0.9, split: 'val' });
    // Every status, or none, filters nothing (and an empty IN () would be invalid SQL).
    assert.equal(filterToQuery({ status: [] }, { runId: 'r', limit: 1 }).status, undefined);
    assert.equal(filterToQuery({ status: ['succeeded', 'failed', 'running', 'cancelled'] }, { runId: 'r', limit: 1 }).status, undefined);
  });

  it('describes the filter for the view in one line', () => {
    assert.equal(describeFilter({}), undefined);
    assert.equal(isEmptyFilter({ status: [] }), true);
    assert.equal(describeFilter({ status: ['failed', 'cancelled'], minReward: 0.2, maxReward: 0.8, split: 'val' }), 'failed, cancelled · reward 0.2–0.8 · val split');
    assert.equal(describeFilter({ minReward: 0.5 }), 'reward ≥ 0.5');
    assert.equal(describeFilter({ maxReward: 0.5 }), 'reward ≤ 0.5');
  });
});
