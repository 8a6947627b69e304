import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stopJobQuestion } from '../../../src/extension/training/jobText';

test('the stop-job question has two buttons that cannot be misread: neither is a bare "Cancel"', () => {
  const q = stopJobQuestion({ id: 'sft-1', targetName: 'gpu-box', kind: 'sft' });
  assert.equal(q.stop, 'Stop Job');
  assert.equal(q.keep, 'Keep Running');
  for (const b of [q.stop, q.keep]) assert.doesNotMatch(b, /cancel/i);
  assert.match(q.message, /^Stop training job sft-1 on gpu-box\?$/);
  assert.match(stopJobQuestion({ id: 's', targetName: 'local', kind: 'serve' }).detail, /stops answering/);
});
