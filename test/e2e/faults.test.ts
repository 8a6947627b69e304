import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSimServer } from '../../src/core/sim/simServer';
import type { SimFaultHook } from '../../src/core/sim/simFaults';
import { cli, cliAsync, json, tempWorkspace, PUBMEDQA, type RunDoc, type SpanDoc } from './cliHelpers';

interface TraceList {
  rollouts: Array<{ id: string; runId: string; taskId: string; status: string; finalReward: number | null }>;
}

function workspace(patch?: (cfg: Record<string, any>) => void): string {
  const ws = tempWorkspace();
  assert.equal(cli(['init', '--workspace', ws, '--dataset', PUBMEDQA]).code, 0);
  if (patch) {
    const file = join(ws, '.rollout-lab/lab.json');
    const cfg = JSON.parse(readFileSync(file, 'utf8'));
    patch(cfg);
    writeFileSync(file, JSON.stringify(cfg, null, 2));
  }
  return ws;
}

function spansOf(ws: string, id: string): SpanDoc[] {
  return json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', id, '--json'])).spans;
}

async function withServer<T>(faults: SimFaultHook, fn: (url: string) => Promise<T>): Promise<T> {
  const server = await startSimServer({ faults });
  try {
    return await fn(server.url);
  } finally {
    await server.close();
  }
}

// The CLI must run in its own process while the fault server answers in this one.
async function runCli(args: string[]): Promise<ReturnType<typeof cli>> {
  return cliAsync(args).done;
}

test('429 with Retry-After and intermittent 500s are retried: every rollout succeeds and retries are on the spans', async () => {
  const ws = workspace((c) => {
    for (const m of Object.values(c.models) as Array<Record<string, unknown>>) m.maxRetries = 4;
  });
  try {
    await withServer(
      ({ index }) => (index % 9 === 4 ? { kind: 'rate-limit', retryAfterMs: 30 } : index % 13 === 7 ? { kind: 'server-error', status: 503 } : null),
      async (url) => {
        const r = await runCli(['run', '--workspace', ws, '--base-url', url, '--limit', '3', '--concurrency', '2', '--json']);
        assert.equal(r.code, 0, r.stderr);
        const doc = json<RunDoc>(r);
        assert.equal(doc.simulated, false, 'a configured endpoint is never reported as simulated');
        assert.equal(doc.succeeded, 3);
        const retried = json<TraceList>(cli(['traces', '--workspace', ws, '--json']))
          .rollouts.flatMap((x) => spansOf(ws, x.id))
          .filter((s) => s.kind === 'llm' && Number(s.attributes['rollout_lab.retries'] ?? 0) > 0);
        assert.ok(retried.length > 0, 'some model calls record their retries');
        // Told once per kind as it first happens (the totals are the run's warning), not once per retry.
        assert.equal(r.stderr.match(/: HTTP 429 from http:\S+; retrying 1\/4 in /g)?.length, 1, r.stderr);
      },
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('a timed-out call is retried; a persistently failing endpoint fails the rollout with a clear error and exit 1', async () => {
  const ws = workspace((c) => {
    for (const m of Object.values(c.models) as Array<Record<string, unknown>>) {
      m.timeoutMs = 400;
      m.maxRetries = 1;
    }
  });
  try {
    await withServer(({ index }) => (index === 2 ? { kind: 'hang' } : null), async (url) => {
      const r = await runCli(['run', '--workspace', ws, '--base-url', url, '--limit', '1', '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(json<RunDoc>(r).succeeded, 1);
      // The stall is said as it happens, naming the agent, the server and the setting.
      assert.match(r.stderr, /\n\w+: no answer from http:\/\/127\.0\.0\.1:\d+\/v1 within 0\.4 s \(models\.\w+\.timeoutMs\); retrying 1\/1\n/);
      const { warnings } = json<RunDoc & { warnings: Array<{ kind: string; occurrences: number }> }>(r);
      assert.equal(warnings.find((w) => w.kind === 'model_calls_retried')?.occurrences, 1);
    });
    await withServer(() => ({ kind: 'server-error', status: 500 }), async (url) => {
      const r = await runCli(['run', '--workspace', ws, '--base-url', url, '--limit', '2', '--json']);
      assert.equal(r.code, 1);
      const doc = json<RunDoc>(r);
      assert.equal(doc.failed, 2);
      assert.match(r.stderr, /every rollout failed.*500/);
    });
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('model output that is not the JSON asked for is repaired or recorded as a failed step, never a crash', async () => {
  const ws = workspace();
  try {
    await withServer(
      ({ agent, request }) => {
        const repairing = request.messages.some((m) => typeof m.content === 'string' && m.content.includes('could not be used'));
        if (agent === 'Supervisor' && !repairing) return { kind: 'malformed-json' };
        if (agent === 'PeerReviewer') return { kind: 'not-json' };
        return null;
      },
      async (url) => {
        const r = await runCli(['run', '--workspace', ws, '--base-url', url, '--limit', '2', '--json']);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(json<RunDoc>(r).succeeded, 2);
        for (const ro of json<TraceList>(cli(['traces', '--workspace', ws, '--json'])).rollouts) {
          const spans = spansOf(ws, ro.id);
          const sup = spans.find((s) => s.kind === 'node' && s.name === 'Supervisor')!;
          assert.equal(sup.attributes['rollout_lab.output.repaired'], true, 'the supervisor answer was repaired');
          assert.equal(sup.attributes['rollout_lab.output.ok'], true);
          const rev = spans.find((s) => s.kind === 'node' && s.name === 'PeerReviewer')!;
          assert.equal(rev.attributes['rollout_lab.output.ok'], false, 'the review failure is recorded');
          assert.equal(rev.status, 'error');
          assert.ok(spans.some((s) => s.name === 'PrincipalInvestigator'), 'the graph went on to the PI');
        }
      },
    );
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('SIGKILL mid-run loses only the rollouts in flight, and --resume finishes the run without redoing any', async () => {
  const ws = workspace();
  try {
    const { child, done } = cliAsync(['run', '--workspace', ws, '--limit', '10', '--concurrency', '2', '--json']);
    let stderr = '';
    await new Promise<void>((resolve) => {
      child.stderr!.on('data', (d) => {
        stderr += d;
        if (/\[\s*4\/10\]/.test(stderr)) resolve();
      });
    });
    child.kill('SIGKILL');
    await done;
    const runId = /run (run-[\w-]+)/.exec(stderr)![1]!;
    const before = json<TraceList>(cli(['traces', '--workspace', ws, '--json'])).rollouts;
    const finished = before.filter((r) => r.status === 'succeeded');
    assert.ok(finished.length >= 4, `${finished.length} finished before the kill`);
    assert.ok(before.every((r) => r.status !== 'running'), 'in-flight rollouts of a dead process are not shown as running');
    for (const r of finished) assert.ok(spansOf(ws, r.id).some((s) => s.name === 'final'), 'finished rollouts are intact');

    const resumed = cli(['run', '--workspace', ws, '--resume', runId, '--json']);
    assert.equal(resumed.code, 0, resumed.stderr);
    const doc = json<RunDoc>(resumed);
    assert.equal(doc.runId, runId);
    assert.equal(doc.succeeded, 10);
    // Counted by each task's final attempt: the killed ones are superseded, in no rate and not "of 10 planned" twice.
    const interrupted = before.filter((r) => r.status === 'failed').length;
    assert.match(resumed.stderr, new RegExp(`redoing \\d+ rollouts .*${interrupted ? `${interrupted} interrupted or cancelled` : ''}`));
    assert.deepEqual([doc.rollouts, doc.failed, doc.metrics.executionSuccessRate], [10, 0, 100]);
    const outcome = (doc as RunDoc & { outcome: { planned: number; succeeded: number; superseded: number } }).outcome;
    assert.deepEqual([outcome.planned, outcome.succeeded, outcome.superseded], [10, 10, interrupted]);
    const report = json<{ run: { counts: { total: number; failed: number; superseded: number } } }>(cli(['report', '--workspace', ws, '--run', runId, '--format', 'json']));
    assert.deepEqual(report.run.counts.total, 10);
    assert.deepEqual([report.run.counts.failed, report.run.counts.superseded], [0, interrupted]);
    const after = json<TraceList>(cli(['traces', '--workspace', ws, '--json'])).rollouts.filter((r) => r.runId === runId && r.status === 'succeeded');
    assert.equal(after.length, 10);
    assert.equal(new Set(after.map((r) => r.taskId)).size, 10, 'no task finished twice');
    for (const r of finished) assert.ok(after.some((a) => a.id === r.id), 'rollouts finished before the kill were kept, not redone');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('Ctrl+C: the cancel line and --json count what the store holds — succeeded, failed, cancelled, not started, of planned', async () => {
  const ws = workspace();
  try {
    const { child, done } = cliAsync(['run', '--workspace', ws, '--limit', '12', '--concurrency', '2', '--json']);
    let stderr = '';
    await new Promise<void>((resolve) => {
      child.stderr!.on('data', (d) => {
        stderr += d;
        if (/\[\s*3\/12\]/.test(stderr)) resolve();
      });
    });
    child.kill('SIGINT');
    const r = await done;
    assert.equal(r.code, 1, r.stderr);
    const doc = json<RunDoc & { cancelled: boolean; outcome: { planned: number; succeeded: number; failed: number; cancelled: number; running: number; notStarted: number } }>(r);
    assert.equal(doc.cancelled, true);
    const stored = json<TraceList>(cli(['traces', '--workspace', ws, '--run', doc.runId, '--json'])).rollouts;
    const by = (status: string): number => stored.filter((x) => x.status === status).length;
    const o = doc.outcome;
    assert.deepEqual(
      [o.planned, o.succeeded, o.failed, o.cancelled, o.running, o.notStarted],
      [12, by('succeeded'), by('failed'), by('cancelled'), 0, 12 - stored.length],
      'what the tree and the table list',
    );
    assert.ok(o.notStarted > 0, `the premise: cancelled before every rollout started (${JSON.stringify(o)})`);
    assert.equal(doc.rollouts, o.succeeded + o.failed, 'run --json counts the finished rollouts of the store');
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

test('two runs writing to one store at the same time lose nothing, and compaction keeps every trace', async () => {
  const ws = workspace();
  try {
    const a = cliAsync(['run', '--workspace', ws, '--limit', '6', '--seed', '1', '--json']);
    const b = cliAsync(['run', '--workspace', ws, '--limit', '6', '--seed', '2', '--json']);
    const [ra, rb] = await Promise.all([a.done, b.done]);
    assert.equal(ra.code, 0, ra.stderr);
    assert.equal(rb.code, 0, rb.stderr);
    const ids = [json<RunDoc>(ra).runId, json<RunDoc>(rb).runId];
    const all = json<TraceList>(cli(['traces', '--workspace', ws, '--json'])).rollouts;
    for (const id of ids) assert.equal(all.filter((r) => r.runId === id && r.status === 'succeeded').length, 6);
    const spanCounts = new Map(all.map((r) => [r.id, spansOf(ws, r.id).length]));
    for (const n of spanCounts.values()) assert.ok(n > 10);

    // Both writers have exited: compaction moves their journals into segments and every trace reads the same.
    const c = cli(['compact', '--workspace', ws, '--json']);
    assert.equal(c.code, 0, c.stderr);
    const compacted = json<{ traces: number; journalsRetired: number; bytesAfter: number; bytesBefore: number }>(c);
    assert.equal(compacted.traces, 12);
    assert.ok(compacted.journalsRetired >= 2);
    assert.ok(compacted.bytesAfter < compacted.bytesBefore, 'segments are compressed');
    const after = json<TraceList>(cli(['traces', '--workspace', ws, '--json'])).rollouts;
    assert.equal(after.length, all.length);
    for (const r of after) assert.equal(spansOf(ws, r.id).length, spanCounts.get(r.id));
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
