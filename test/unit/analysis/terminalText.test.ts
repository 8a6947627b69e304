import assert from 'node:assert/strict';
import { test } from 'node:test';
import { terminalSafe } from '../../../src/core/analysis/terminalText';

const HOSTILE = 'a\u001b]0;title\u0007b\u001b[2J\u001b[31mc\r\nd\te\u0085f\u202eg\u007fh\u0000';

test('control characters become visible escapes; newline and tab only in multiline text', () => {
  assert.equal(terminalSafe(HOSTILE), 'a\\x1b]0;title\\x07b\\x1b[2J\\x1b[31mc\\r\\nd\\te\\u0085f\\u202eg\\u007fh\\x00');
  assert.equal(terminalSafe(HOSTILE, { multiline: true }), 'a\\x1b]0;title\\x07b\\x1b[2J\\x1b[31mc\\r\nd\te\\u0085f\\u202eg\\u007fh\\x00');
  assert.equal(terminalSafe('plain text, ünïcode → ok'), 'plain text, ünïcode → ok');
});

test('JSON output stays the same JSON: what JSON.stringify leaves raw is escaped as a JSON escape', () => {
  const doc = JSON.stringify({ s: HOSTILE }, null, 2);
  const safe = terminalSafe(doc, { multiline: true });
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/.test(safe));
  assert.deepEqual(JSON.parse(safe), { s: HOSTILE });
});
