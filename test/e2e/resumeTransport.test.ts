import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { EvaluationReport } from '../../src/core/analysis/evaluationReport';
import type { RunOutcome } from '../../src/core/analysis/runOutcome';
import { decisionLabelsOf } from '../../src/core/data/decisionAlignment';
import { loadConfig } from '../../src/core/config/loader';
import { TraceStore } from '../../src/core/store/traceStore';
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequest } from '../fakes/openaiStub';
import { PUBMEDQA, REPO, cli, cliAsync, json, tempWorkspace, type RunDoc } from './cliHelpers';

/*
 * A model server that is down, then back, as a user meets it: `run` fails
 * every rollout on the connection; once the server answers again,
 * `run --resume` redoes exactly those, says so, and every surface (`run
 * --json`, `report`, `traces`) counts each task once, by its final attempt,
 * with the failed attempts kept and labelled superseded.
 */

/** Writer, Critic and the judge of the custom-graph example, answered by topic. */
function model(req: StubRequest): StubReply {
  const text = (req.body.messages as Array<{ content: string }>).map((m) => m.content).join('\n');
  if (/Return JSON with these keys/.test(text)) return { content: '{"quality": 0.8, "rationale": "grounded"}' };
  if (/verdict/.test(text)) return { content: '{"verdict": "APPROVE", "feedback": ""}' };
  return { content: 'A short answer grounded in the context.' };
}

/** A port nothing listens on (taken, then freed): connections to it are refused until the stub starts there. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

interface RunDocWithOutcome extends RunDoc {
  outcome: RunOutcome;
  metrics: RunDoc['metrics'] & { rollouts: number; failures: Record<string, number> };
}

let ws: string;
let port: number;
let stub: OpenAIStub | null = null;

before(async () => {
  ws = tempWorkspace();
  const init = cli(['init', '--workspace', ws, '--graph', join(REPO, 'examples/custom-graph/graph.ts'), '--dataset', PUBMEDQA]);
  assert.equal(init.code, 0, init.stderr);
  port = await freePort();
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as { models: Record<string, Record<string, unknown>>; graph: Record<string, unknown> };
  // No retries: the first refused connection fails the rollout, so the test needs no server that stays down for long.
  for (const m of Object.values(cfg.models)) Object.assign(m, { baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 0, timeoutMs: 20_000 });
  // The Critic's verdict is the graph's decision: APPROVE stands for the task's "yes", REVISE for "no".
  cfg.graph.decisions = { APPROVE: 'yes', REVISE: 'no' };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
});
after(async () => {
  await stub?.close();
  rmSync(ws, { recursive: true, force: true });
});

test('run --resume redoes the rollouts that failed on the connection once the server is back, and every surface counts each task once', async () => {
  const down = cli(['run', '--workspace', ws, '--limit', '4', '--concurrency', '2', '--json']);
  assert.equal(down.code, 1, 'every rollout failed: a runtime failure');
  const first = json<RunDocWithOutcome>(down);
  assert.deepEqual(first.metrics.failures, { connection: 4 }, down.stderr);
  assert.deepEqual([first.outcome.failed, first.outcome.planned, first.outcome.superseded], [4, 4, 0]);

  stub = await startOpenAIStub({ replies: model, port });
  const back = await cliAsync(['run', '--workspace', ws, '--resume', first.runId, '--json']).done;
  assert.equal(back.code, 0, back.stderr);
  assert.match(back.stderr, /redoing 4 rollouts that failed on transport \(connection failed ×4\); 0 already done/);
  const doc = json<RunDocWithOutcome>(back);
  assert.equal(doc.runId, first.runId);
  assert.deepEqual(
    [doc.rollouts, doc.succeeded, doc.failed, doc.metrics.rollouts, doc.metrics.executionSuccessRate],
    [4, 4, 0, 4, 100],
    'the run counts each task by its final attempt',
  );
  assert.deepEqual(doc.outcome, { runId: first.runId, planned: 4, succeeded: 4, failed: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 4 });

  const report = json<EvaluationReport>(cli(['report', '--workspace', ws, '--run', first.runId, '--format', 'json']));
  assert.deepEqual(report.run.counts, { total: 4, succeeded: 4, failed: 0, noOutput: 0, cancelled: 0, running: 0, notStarted: 0, superseded: 4 });
  assert.equal(report.table.executionSuccess.count, 4);
  assert.equal(report.table.executionSuccess.n, 4);
  assert.ok(report.notes.some((n) => /4 earlier attempts redone by a resume are kept in the store, superseded/.test(n)), report.notes.join('\n'));
  const md = cli(['report', '--workspace', ws, '--run', first.runId]);
  assert.match(md.stdout, /4 \(4 succeeded, 0 failed, 0 cancelled\) of 4 planned; 4 earlier attempts superseded/);

  const listed = json<{ rollouts: Array<{ id: string; taskId: string; status: string; failure: string | null; supersededBy: string | null }> }>(
    cli(['traces', '--workspace', ws, '--run', first.runId, '--json']),
  );
  assert.equal(listed.rollouts.length, 8, 'the failed attempts are kept');
  const current = listed.rollouts.filter((r) => r.supersededBy === null);
  const superseded = listed.rollouts.filter((r) => r.supersededBy !== null);
  assert.deepEqual(current.map((r) => r.status), ['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  assert.equal(superseded.length, 4);
  for (const old of superseded) {
    assert.equal(old.failure, 'connection');
    const by = listed.rollouts.find((r) => r.id === old.supersededBy);
    assert.equal(by?.taskId, old.taskId, 'superseded by the attempt of the same task');
  }
  const text = cli(['traces', '--workspace', ws, '--run', first.runId]);
  assert.equal(text.stdout.match(/failed \(connection failed\), superseded/g)?.length, 4, text.stdout);

  // Decision alignment under the mapping lab.json declares: `run --json`, `report` and the Rollouts Table's filter agree.
  const loaded = await loadConfig(ws);
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    const labels = decisionLabelsOf(loaded.config);
    const matches = store.queryTable({ runIds: [first.runId], decision: 'match' }, null, labels).total;
    const differs = store.queryTable({ runIds: [first.runId], decision: 'mismatch' }, null, labels).total;
    const metrics = doc.metrics as RunDocWithOutcome['metrics'] & { alignedCount: number; alignmentDenominator: number };
    assert.ok(metrics.alignmentDenominator > 0, 'the premise: some of the tasks are labelled yes or no');
    assert.deepEqual([metrics.alignedCount, metrics.alignmentDenominator], [matches, matches + differs]);
    assert.deepEqual([report.table.decisionAlignment?.count, report.table.decisionAlignment?.n], [matches, matches + differs]);
  } finally {
    await store.close();
  }

  const again = await cliAsync(['run', '--workspace', ws, '--resume', first.runId, '--json']).done;
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /nothing to redo; 4 already done/);
  assert.equal(json<RunDocWithOutcome>(again).outcome.superseded, 4, 'a resume with nothing to redo supersedes nothing more');
});
