import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { cli, cliAsync, json, PUBMEDQA, tempWorkspace } from './cliHelpers';

// ESC]0;…BEL retitles the terminal, ESC[2J clears it, ESC[31m turns it red.
const EVIL = 'evil\u001b]0;pwned\u0007\u001b[2J\u001b[31m';
const ESC = '\u001b';
const A = 'aaaa' + '1'.repeat(28);
const B = 'aaaa' + '2'.repeat(28);
const C = 'cccc' + '3'.repeat(28);
const T0 = '1700000000000000000';
const T1 = '1700000001000000000';

const span = (traceId: string, spanId: string, name: string, over: Record<string, unknown> = {}): Record<string, unknown> => ({ traceId, spanId, name, startTimeUnixNano: T0, endTimeUnixNano: T1, ...over });
const str = (key: string, value: string): Record<string, unknown> => ({ key, value: { stringValue: value } });

const REQUEST = JSON.stringify({
  resourceSpans: [
    {
      resource: { attributes: [str('rollout_lab.run.id', `run-${EVIL}`), str('rollout_lab.task.id', `task-${EVIL}\nsecond line`)] },
      scopeSpans: [
        {
          spans: [
            // A: names and messages holding terminal escapes.
            span(A, '1'.repeat(16), `root-${EVIL}`, { status: { code: 2, message: `failed ${EVIL}\r\nover two lines` } }),
            // B: a root, a span its own parent, and two spans each other's parent.
            span(B, '2'.repeat(16), 'root'),
            span(B, '3'.repeat(16), 'self-parented', { parentSpanId: '3'.repeat(16), startTimeUnixNano: '1700000000500000000' }),
            span(B, '4'.repeat(16), 'cycle-c', { parentSpanId: '5'.repeat(16) }),
            span(B, '5'.repeat(16), 'cycle-d', { parentSpanId: '4'.repeat(16) }),
            // C: one huge attribute.
            span(C, '6'.repeat(16), 'root', { attributes: [str('big', 'x'.repeat(200_000))] }),
          ],
        },
      ],
    },
  ],
});

let ws: string;
before(async () => {
  ws = tempWorkspace();
  assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
  const { child, done } = cliAsync(['collect', '--port', '0', '--grpc-port', 'off', '--workspace', ws]);
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      const m = /receiver on (http:\/\/[0-9.:]+)\/v1\/traces/.exec(seen);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`collect exited before listening: ${seen}`)));
  });
  const res = await fetch(`${url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: REQUEST });
  assert.equal(res.status, 200);
  child.kill('SIGINT');
  const r = await done;
  assert.equal(r.code, 0, r.stderr);
});
after(() => rmSync(ws, { recursive: true, force: true }));

test('traces (table and tree) shows terminal escapes from traces as visible text, never raw', () => {
  const table = cli(['traces', '--workspace', ws]);
  assert.equal(table.code, 0, table.stderr);
  assert.ok(!table.stdout.includes(ESC) && !table.stdout.includes('\u0007'), 'no raw ESC or BEL in the table');
  assert.ok(table.stdout.includes('task-evil\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m\\nsecond line'), table.stdout);
  assert.equal(table.stdout.split('\n').filter((l) => l.includes('second line')).length, 3, 'one line per rollout: the newline in the task id is escaped');

  const tree = cli(['traces', '--workspace', ws, '--rollout', A]);
  assert.equal(tree.code, 0, tree.stderr);
  assert.ok(!tree.stdout.includes(ESC) && !tree.stdout.includes('\u0007') && !tree.stdout.includes('\r'), JSON.stringify(tree.stdout));
  assert.match(tree.stdout, /^rollout root-evil\\x1b\]0;pwned\\x07\\x1b\[2J\\x1b\[31m {2}1000 ms {2}ERROR failed evil\\x1b.*\\r\\nover two lines$/m);
});

test('traces --rollout shows spans in a parent cycle under the rollout, marked, with a warning; a unique id prefix is enough', () => {
  const tree = cli(['traces', '--workspace', ws, '--rollout', 'aaaa2']);
  assert.equal(tree.code, 0, tree.stderr);
  const lines = tree.stdout.trim().split('\n');
  assert.match(lines[0]!, new RegExp(`^rollout ${B} .* 4 spans$`));
  assert.deepEqual(
    lines.slice(1).map((l) => l.replace(/ {2}\d+ ms.*$/, '')),
    ['rollout root', '  node cycle-c', '    node cycle-d', '  node self-parented'],
  );
  assert.ok(lines.filter((l) => l.includes('(parent cycle)')).length === 2, tree.stdout);
  assert.match(tree.stderr, /warning: 3 spans are in a parent cycle/);

  const ambiguous = cli(['traces', '--workspace', ws, '--rollout', 'aaaa']);
  assert.equal(ambiguous.code, 2);
  assert.match(ambiguous.stderr, /"aaaa" is the start of more than one rollout .*give more of the id/);
});

test('traces --rollout --json cuts a huge attribute value unless --full', () => {
  const cut = cli(['traces', '--workspace', ws, '--rollout', C, '--json']);
  assert.equal(cut.code, 0, cut.stderr);
  assert.ok(cut.stdout.length < 100_000, `${cut.stdout.length} characters printed`);
  const doc = json<{ spans: Array<{ attributes: Record<string, string> }>; truncatedValues: number }>(cut);
  assert.equal(doc.truncatedValues, 1);
  assert.match(doc.spans[0]!.attributes.big!, /^x{65536}… \(134464 more bytes; --full to print all\)$/);
  assert.match(cut.stderr, /1 attribute value was over 65536 characters and cut/);
  const full = json<{ spans: Array<{ attributes: Record<string, string> }> }>(cli(['traces', '--workspace', ws, '--rollout', C, '--json', '--full']));
  assert.equal(full.spans[0]!.attributes.big!.length, 200_000);
});

test("progress lines show the start of each rollout's id, which traces --rollout takes", () => {
  const lab = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', lab, '--dataset', PUBMEDQA]).code, 0);
    const run = cli(['run', '--workspace', lab, '--limit', '1']);
    assert.equal(run.code, 0, run.stderr);
    const m = /^\[1\/1\] ([0-9a-f]{8}) /m.exec(run.stderr);
    assert.ok(m, run.stderr);
    const tree = cli(['traces', '--workspace', lab, '--rollout', m[1]!]);
    assert.equal(tree.code, 0, tree.stderr);
    assert.match(tree.stdout, new RegExp(`^rollout ${m[1]}[0-9a-f]{24} `, 'm'));
  } finally {
    rmSync(lab, { recursive: true, force: true });
  }
});
