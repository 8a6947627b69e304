import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runBatch } from '../../../src/core/lab/batch';
import type { RetryNotice } from '../../../src/core/llm/retryNotices';
import { buildEvaluationReport, reportOptionsFromConfig } from '../../../src/core/analysis/evaluationReport';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub, type OpenAIStubOptions } from '../../fakes/openaiStub';

/*
 * 200 answers whose body is cut off mid-JSON (or is not JSON at all), from a real HTTP server to the run's
 * result: a transport fault, retried like a reset. A one-agent LangGraph.js module asks the stub for a JSON
 * answer on each of 30 tasks.
 */

const GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
  turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
});

export default function createGraph(ctx) {
  const model = ctx.model('Drafter').withStructuredOutput(z.object({ sql: z.string() }), { name: 'query' });
  return new StateGraph(State)
    .addNode('Drafter', async (s) => {
      const answer = await model.invoke([['human', String(s.messages[0]?.content ?? '')]]);
      return { turns: 1, final_output: answer.sql };
    })
    .addEdge(START, 'Drafter')
    .addEdge('Drafter', END)
    .compile();
}
`;

async function runAgainst(stubOpts: Omit<OpenAIStubOptions, 'replies'>, tasks: number, maxRetries: number) {
  const stub = await startOpenAIStub({ ...stubOpts, replies: () => ({ json: { sql: 'SELECT count(*) FROM book' } }) });
  const dir = mkdtempSync(join(tmpdir(), 'rl-broken-bodies-'));
  const data = join(dir, 'questions.jsonl');
  writeFileSync(data, Array.from({ length: tasks }, (_, i) => JSON.stringify({ id: `q${i + 1}`, goal: `Count the books (${i + 1}).`, context: 'CREATE TABLE book(title);' })).join('\n') + '\n');
  await initWorkspace(dir, { dataset: data });
  const cfgFile = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
  cfg.graph = { kind: 'module', module: 'graph.ts' };
  cfg.models = { ...cfg.models, writer: { baseUrl: stub.url, model: 'tiny-sql', maxRetries } };
  cfg.agents = { ...cfg.agents, Drafter: { model: 'writer', promptText: 'Write the SQL query as JSON: {"sql": "..."}.' } };
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
  writeFileSync(join(dir, 'graph.ts'), GRAPH);
  const lab = await Lab.open({ workspace: dir, env: {} });
  const retries: RetryNotice[] = [];
  try {
    const result = await runBatch(lab, { command: 'run', split: 'all', concurrency: 4, samples: 1 }, { onRetry: (n) => retries.push(n) });
    const report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, result.runId));
    const spans = result.rollouts.flatMap((r) => lab.store.getSpans(r.id));
    return { result, report, retries, spans, broken: [...stub.broken], requests: stub.requests.length };
  } finally {
    await lab.close();
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('30 rollouts with 5 % of 200 bodies cut mid-JSON or unparsable all succeed: the retries absorb them and show', { timeout: 120_000 }, async () => {
  const { result, retries, spans, broken, requests } = await runAgainst({ faults: { brokenBodies: 0.05, seed: 6 } }, 30, 4);
  assert.deepEqual(new Set(broken.map((b) => b.kind)), new Set(['cut', 'cut-socket', 'unparsable']), `the premise: the stub broke bodies of every kind (${broken.length} of ${requests})`);
  assert.equal(result.rollouts.length, 30);
  assert.deepEqual(
    result.rollouts.filter((r) => r.status !== 'succeeded').map((r) => `${r.taskId}: ${r.failure} ${r.error}`),
    [],
    'every rollout succeeded',
  );
  // Visible: told as they happened, on the llm spans, and in the run's warnings.
  assert.equal(retries.filter((n) => n.kind === 'broken_body').length, broken.length);
  assert.match(retries[0]!.message, /^Drafter: broken response body: the 200 answer was cut off or is not JSON \(.+\) from http:\/\/127\.0\.0\.1:\d+\/v1; retrying 1\/4 in /);
  const retried = spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Drafter' && Number(s.attributes[Attr.retries] ?? 0) > 0);
  assert.equal(retried.reduce((n, s) => n + Number(s.attributes[Attr.retries]), 0), broken.length);
  for (const s of retried) assert.match(String((s.attributes[Attr.retryReasons] as string[])[0]), /^broken response body/);
  const warning = result.warnings.find((w) => w.kind === 'model_calls_retried');
  assert.ok(warning, result.warnings.map((w) => w.kind).join(', '));
  assert.deepEqual(warning.subjects, ['Drafter']);
});

test('when every 200 body is cut, rollouts fail as a connection fault after the retries, never as invalid output', { timeout: 60_000 }, async () => {
  const { result, report, broken } = await runAgainst({ faults: { brokenBodies: 1 } }, 3, 1);
  assert.equal(broken.length, 6, 'each call tried twice (maxRetries 1)');
  assert.deepEqual(
    result.rollouts.map((r) => [r.status, r.failure]),
    [
      ['failed', 'connection'],
      ['failed', 'connection'],
      ['failed', 'connection'],
    ],
  );
  for (const r of result.rollouts) assert.match(r.error!, /broken response body: the 200 answer was cut off or is not JSON \(.+\) after 1 retry — the server or a proxy in between dropped the answer mid-body/);
  const kinds = report.failures.categories.map((c) => c.kind);
  assert.ok(kinds.includes('connection'), kinds.join(', '));
  assert.ok(!kinds.includes('invalid_output'), kinds.join(', '));
});
