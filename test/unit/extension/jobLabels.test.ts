import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jobLabels } from '../../../src/extension/training/jobText';

describe('training job labels', () => {
  const t = new Date(2026, 10, 27, 14, 5, 30).getTime();
  const job = (id: string, createdAt: number, phase = 'sft-juniors') => ({ id, phase, createdAt });

  it('name a job by its phase and start time, not by an id whose start all jobs share', () => {
    const labels = jobLabels([job('sft-juniors-20261127-140530-ab12', t), job('sft-juniors-20261127-151000-cd34', t + 3_870_000)], t);
    assert.deepEqual(labels, ['sft-juniors · 14:05', 'sft-juniors · 15:10']);
    assert.deepEqual(jobLabels([job('grpo-x-20261121-140530-ab12', t - 6 * 86_400_000, 'grpo-x')], t), ['grpo-x · Nov 21 14:05']);
  });

  it('add the shortest distinguishing tail of the id when two start in the same minute', () => {
    const labels = jobLabels([job('sft-juniors-20261127-140530-ab12', t), job('sft-juniors-20261127-140559-ab12', t + 20_000), job('other-20261127-140530-ab12', t, 'other')], t);
    assert.deepEqual(labels, ['sft-juniors · 14:05 · 0-ab12', 'sft-juniors · 14:05 · 9-ab12', 'other · 14:05']);
    assert.equal(new Set(labels).size, labels.length);
  });
});
