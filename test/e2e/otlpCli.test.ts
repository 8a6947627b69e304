import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { cli, cliAsync, tempWorkspace } from './cliHelpers';

const TRACE = 'c'.repeat(32);
const REQUEST = JSON.stringify({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'rollout_lab.run.id', value: { stringValue: 'from-cli' } }, { key: 'rollout_lab.task.id', value: { stringValue: 't9' } }] },
      scopeSpans: [{ spans: [{ traceId: TRACE, spanId: 'd'.repeat(16), name: 'invoke_agent A', startTimeUnixNano: '1700000000000000000', endTimeUnixNano: '1700000002000000000', attributes: [{ key: 'gen_ai.operation.name', value: { stringValue: 'invoke_agent' } }] }] }],
    },
  ],
});

/** Starts `collect` on a free port and answers its URL once it listens. */
async function collect(workspace: string): Promise<{ url: string; stop: () => Promise<{ code: number; stdout: string; stderr: string }> }> {
  const { child, done } = cliAsync(['collect', '--port', '0', '--grpc-port', '0', '--workspace', workspace]);
  const url = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      const m = /receiver on (http:\/\/[0-9.:]+)\/v1\/traces[^]*OTLP\/gRPC receiver on http:/.exec(seen);
      if (m) resolve(m[1]!);
    });
    child.once('exit', () => reject(new Error(`collect exited before listening: ${seen}`)));
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGINT');
      return done;
    },
  };
}

test('collect stores what agents send and stops cleanly on SIGINT; traces export sends it on to another collector', async () => {
  const a = tempWorkspace();
  const b = tempWorkspace();
  try {
    const first = await collect(a);
    const res = await fetch(`${first.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: REQUEST });
    assert.equal(res.status, 200);
    const bad = await fetch(`${first.url}/v1/traces`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    assert.equal(bad.status, 400);
    const r1 = await first.stop();
    assert.equal(r1.code, 0, r1.stderr);
    assert.match(r1.stdout, /stored 1 trace, 1 span, 1 finished/);
    assert.match(r1.stderr, /refused \(400\): the body is not JSON/);

    const second = await collect(b);
    const exported = cli(['traces', 'export', '--otlp', second.url, '--workspace', a, '--run', 'from-cli', '--headers', 'x-key=secret-value', '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.deepEqual(JSON.parse(exported.stdout), { endpoint: `${second.url}/v1/traces`, protocol: 'http/protobuf', rollouts: 1, spans: 1, rejectedSpans: 0 });
    assert.ok(!exported.stderr.includes('secret-value') && exported.stderr.includes('x-key'), 'header names, never values');
    const r2 = await second.stop();
    assert.match(r2.stdout, /stored 1 trace, 1 span, 1 finished/);

    const wrong = cli(['traces', '--workspace', a, '--otlp', second.url]);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /traces export/);
  } finally {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  }
});
