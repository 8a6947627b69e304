import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exportNotice } from '../../../src/extension/evalReport/exportNotice';

test('an export says what it saved where, with Open and Reveal in Explorer', () => {
  const n = exportNotice('run-1', '/w/evaluation-run-1.html');
  assert.equal(n.message, 'Rollout Lab: saved the evaluation report of run-1 as HTML: evaluation-run-1.html');
  assert.deepEqual([n.open, n.reveal], ['Open', 'Reveal in Explorer']);
  assert.match(exportNotice('run-1', '/w/r.md').message, /as Markdown: r\.md$/);
});
