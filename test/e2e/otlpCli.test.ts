import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROLLOUT_RECORD_ATTRS } from '../../src/core/otlp/rolloutRecordAttributes';
import { CRITERIA_ATTR } from '../../src/core/otlp/rolloutToOtlp';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import { cli, cliAsync, json, tempWorkspace, type RunDoc } from './cliHelpers';

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

/** A custom reward with a breakdown and info beside the judge; the first rollout it scores runs past its time limit (a failure category, an error). */
const REWARD = `import { existsSync, writeFileSync } from 'node:fs';
const mark = new URL('./looped', import.meta.url);
export default function reward({ task, outcome }) {
  if (!existsSync(mark)) { writeFileSync(mark, task.id); for (;;) {} }
  const length = Math.min(1, (outcome.finalOutput ?? '').length / 400);
  return { reward: length, breakdown: { length, turns: outcome.turns }, info: 'task ' + task.id + ': ' + outcome.turns + ' turns' };
}
`;

async function storedRun(ws: string, runId: string): Promise<Array<{ rollout: RolloutRecord; spans: SpanRecord[] }>> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({ runId, sort: 'startTime', order: 'asc' }).rollouts.map((rollout) => ({ rollout, spans: store.getSpans(rollout.id) }));
  } finally {
    await store.close();
  }
}

/** What the export adds to a root span: the record's fields, for the receiver to read back. */
const EXPORT_ROOT_KEYS = new Set<string>([...Object.values(ROLLOUT_RECORD_ATTRS), CRITERIA_ATTR, Attr.rewardValue, Attr.failure, Attr.decision, Attr.expectedDecision, Attr.turn, Attr.simulated]);

test('traces export --otlp into another collect loses nothing: every rollout record, every span, every attribute (nulls too)', async () => {
  const a = tempWorkspace();
  const b = tempWorkspace();
  try {
    assert.equal(cli(['init', '--workspace', a]).code, 0);
    writeFileSync(join(a, 'reward.mjs'), REWARD);
    const cfgFile = join(a, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8'));
    cfg.reward = { ...cfg.reward, module: 'reward.mjs', mode: 'combine', customTimeoutMs: 1500 };
    cfg.runner.concurrency = 1;
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    const run = cli(['run', '--limit', '3', '--workspace', a, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const { runId } = json<RunDoc>(run);
    const before = await storedRun(a, runId);
    assert.equal(before.length, 3);
    // What the round trip must carry, present in the source to begin with.
    const ok = before.filter((x) => x.rollout.status === 'succeeded');
    assert.equal(ok.length, 2, 'two scored rollouts');
    assert.ok(ok.every((x) => x.rollout.rewardBreakdown && x.rollout.criteria && x.rollout.decision && x.rollout.expectedDecision));
    assert.ok(ok.every((x) => x.spans.some((s) => typeof s.attributes[Attr.rewardInfo] === 'string')), 'the custom reward info');
    assert.ok(before.some((x) => x.rollout.failure === 'timeout' && x.rollout.error), 'a failed rollout with its category and error');
    assert.ok(before.every((x) => x.rollout.agents.length > 1 && x.rollout.agents.every((ag) => ag.promptVersion && ag.model)), 'every agent with its prompt version and model');
    assert.ok(before.some((x) => x.spans.some((s) => Object.values(s.attributes).includes(null))), 'null-valued attributes');

    const second = await collect(b);
    const exported = cli(['traces', 'export', '--otlp', second.url, '--workspace', a, '--run', runId, '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const stopped = await second.stop();
    assert.equal(stopped.code, 0, stopped.stderr);
    const after = await storedRun(b, runId);

    assert.equal(after.length, before.length);
    for (const [i, src] of before.entries()) {
      const got = after[i]!;
      assert.deepEqual(got.rollout, src.rollout, `rollout ${src.rollout.id}`);
      assert.equal(got.spans.length, src.spans.length);
      const byId = new Map(got.spans.map((s) => [s.spanId, s]));
      for (const s of src.spans) {
        const t = byId.get(s.spanId);
        assert.ok(t, `span ${s.name} ${s.spanId}`);
        const { attributes: want, ...rest } = s;
        const { attributes: have, ...restGot } = t;
        assert.deepEqual(restGot, rest, s.name);
        for (const [k, v] of Object.entries(want)) {
          assert.ok(Object.hasOwn(have, k), `${s.name}: ${k} is kept`);
          if (k === Attr.inputMessages || k === Attr.outputMessages) assert.deepEqual(JSON.parse(String(have[k])), JSON.parse(String(v)), `${s.name} ${k}`);
          else assert.deepEqual(have[k], v, `${s.name} ${k}`);
        }
        const extra = Object.keys(have).filter((k) => !Object.hasOwn(want, k));
        assert.deepEqual(extra.filter((k) => s.parentSpanId !== null || !EXPORT_ROOT_KEYS.has(k)), [], `${s.name}: no attribute the source lacks`);
      }
    }
  } finally {
    rmSync(a, { recursive: true, force: true });
    rmSync(b, { recursive: true, force: true });
  }
});
