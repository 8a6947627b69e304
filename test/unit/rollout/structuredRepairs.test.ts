import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runBatch } from '../../../src/core/lab/batch';
import { buildEvaluationReport, reportOptionsFromConfig } from '../../../src/core/analysis/evaluationReport';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { startOpenAIStub, type StubRequest } from '../../fakes/openaiStub';

/*
 * A server whose structured output is broken, seen by the user: the research lab's PeerReviewer is routed to
 * an OpenAI-protocol server (the stub) that answers near-JSON — unquoted values and keys — while the other agents
 * and the judge are simulated. The answer is repaired, and the trace, the report and the server's requests say how.
 */

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');
const BROKEN = '{"decision": APPROVE, critique_severity: "MINOR", feedback: looks fine}';
const GOOD = '{"decision": "APPROVE", "critique_severity": "MINOR", "feedback": "the controls are adequate"}';

const isRepairRequest = (req: StubRequest): boolean => JSON.stringify(req.body.messages.at(-1)).includes('Your previous answer could not be used');

async function runWith(repair: 'local' | 'request') {
  const stub = await startOpenAIStub({ replies: (req) => ({ content: isRepairRequest(req) ? GOOD : BROKEN }) });
  const dir = mkdtempSync(join(tmpdir(), 'rl-repairs-'));
  try {
    await initWorkspace(dir, { dataset: PUBMEDQA });
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
    cfg.models.reviewer = { baseUrl: stub.url, model: 'broken-grammar', maxRetries: 0, repair };
    cfg.agents.PeerReviewer.model = 'reviewer';
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const result = await runBatch(lab, { command: 'run', split: 'train', limit: 2, samples: 1, concurrency: 2 });
      const report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, result.runId));
      const reviews: SpanRecord[] = result.rollouts.flatMap((r) => lab.store.getSpans(r.id)).filter((s) => s.kind === 'node' && s.name === 'PeerReviewer');
      return { result, report, reviews, requests: [...stub.requests] };
    } finally {
      await lab.close();
    }
  } finally {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test('policy "local": a near-JSON answer is repaired here and recorded as such, the original kept, counted in the report', { timeout: 120_000 }, async () => {
  const { result, report, reviews, requests } = await runWith('local');
  assert.ok(reviews.length >= 2, `the premise: the PeerReviewer answered (${reviews.length} visits)`);
  assert.equal(requests.filter(isRepairRequest).length, 0, 'no repair request');
  for (const s of reviews) {
    assert.equal(s.attributes[Attr.outputOk], true);
    assert.equal(s.attributes[Attr.outputRepaired], true, 'never recorded as clean');
    assert.equal(s.attributes[Attr.outputRepair], 'local');
    assert.equal(s.attributes[Attr.outputOriginal], BROKEN);
    assert.match(String(s.attributes[Attr.output]), /"feedback":"looks fine"/);
  }
  assert.ok(result.rollouts.every((r) => r.status === 'succeeded'));
  assert.deepEqual([report.repairs!.local, report.repairs!.request], [reviews.length, 0]);
  assert.ok(report.notes.some((n) => n.startsWith(`${reviews.length} structured answers repaired locally, 0 after a repair request`)), report.notes.join(' | '));
});

test('policy "request": the malformed answer goes back to the server with a repair request, and its correction is used', { timeout: 120_000 }, async () => {
  const { report, reviews, requests } = await runWith('request');
  assert.ok(reviews.length >= 2);
  const repairs = requests.filter(isRepairRequest);
  assert.equal(repairs.length, reviews.length, 'one repair request per malformed answer');
  assert.match(String(repairs[0]!.body.messages.at(-1).content), /the answer is not valid JSON/);
  for (const s of reviews) {
    assert.equal(s.attributes[Attr.outputRepair], 'request');
    assert.equal(s.attributes[Attr.outputOriginal], BROKEN);
    assert.match(String(s.attributes[Attr.output]), /the controls are adequate/);
  }
  assert.deepEqual([report.repairs!.local, report.repairs!.request], [0, reviews.length]);
});

const MODULE_GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { z } from 'zod';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
});

export default function createGraph(ctx) {
  const model = ctx.model('Writer').withStructuredOutput(z.object({ sql: z.string() }), { name: 'query' });
  return new StateGraph(State)
    .addNode('Writer', async (s) => ({ final_output: (await model.invoke([['human', String(s.messages[0]?.content ?? '')]])).sql }))
    .addEdge(START, 'Writer')
    .addEdge('Writer', END)
    .compile();
}
`;

test("your own graph's withStructuredOutput: a repaired answer marks its graph step, with the original text", { timeout: 120_000 }, async () => {
  const broken = "{sql: 'SELECT 1'}";
  const stub = await startOpenAIStub({ replies: () => ({ content: broken }) });
  const dir = mkdtempSync(join(tmpdir(), 'rl-repairs-module-'));
  try {
    const data = join(dir, 'questions.jsonl');
    writeFileSync(data, `${JSON.stringify({ id: 'q1', goal: 'Count.', context: 'CREATE TABLE t(x);' })}\n`);
    await initWorkspace(dir, { dataset: data });
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.models.writer = { baseUrl: stub.url, model: 'tiny-sql', maxRetries: 0 };
    cfg.agents = { ...cfg.agents, Writer: { model: 'writer', promptText: 'Answer {"sql": "..."}.' } };
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    writeFileSync(join(dir, 'graph.ts'), MODULE_GRAPH);
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const result = await runBatch(lab, { command: 'run', split: 'all', samples: 1, concurrency: 1 });
      assert.equal(result.rollouts[0]!.status, 'succeeded', result.rollouts[0]!.error ?? '');
      const step = lab.store.getSpans(result.rollouts[0]!.id).find((s) => s.kind === 'node' && s.name === 'Writer')!;
      assert.equal(step.attributes[Attr.outputRepaired], true);
      assert.equal(step.attributes[Attr.outputRepair], 'local');
      assert.equal(step.attributes[Attr.outputOriginal], broken);
      const report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, result.runId));
      assert.equal(report.repairs!.local, 1);
    } finally {
      await lab.close();
    }
  } finally {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
