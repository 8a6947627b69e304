import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { buildEvaluationReport, reportOptionsFromConfig } from '../../../src/core/analysis/evaluationReport';
import { computeMetrics } from '../../../src/core/analysis/metrics';
import { rewardSetupOf } from '../../../src/core/reward/rewardSetup';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub } from '../../fakes/openaiStub';

/*
 * An answer cut at max_tokens, from the server to the report: a one-agent
 * LangGraph.js module asks a real OpenAI-protocol server (the stub, which cuts
 * at the request's max_tokens with finish_reason "length") for a JSON query.
 * Asked for a long one, the answer is cut, the graph cannot read it and ends
 * without output: the rollout fails as "truncated", still scored.
 */

const GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
  turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
  failures: Annotation({ reducer: (_a, b) => b, default: () => [] }),
});

export default function createGraph(ctx) {
  const model = ctx.model('Writer');
  return new StateGraph(State)
    .addNode('Writer', async (s) => {
      const answer = await model.invoke([['human', String(s.messages[0]?.content ?? '')]]);
      let sql = null;
      // The graph's own words for what went wrong, as a command agent's program reports them.
      let failures = [];
      try {
        sql = JSON.parse(String(answer.content)).sql ?? null;
      } catch (e) {
        failures = [{ agent: 'Writer', error: { parse: e.message, text: String(answer.content) } }];
      }
      return { turns: 1, final_output: sql, failures };
    })
    .addEdge(START, 'Writer')
    .addEdge('Writer', END)
    .compile();
}
`;

const SHORT = '{"sql": "SELECT 1"}';
const LONG = '{"sql": "SELECT title, author, year, genre, price FROM book WHERE genre = \'crime\' ORDER BY year DESC, title ASC"}';

test('an answer cut at max_tokens that leaves the graph without output: failed as "truncated", scored, named in the report', async () => {
  const stub = await startOpenAIStub({ replies: (req) => ({ content: JSON.stringify(req.body.messages).includes('[long]') ? LONG : SHORT }) });
  const dir = mkdtempSync(join(tmpdir(), 'rl-truncated-'));
  try {
    const data = join(dir, 'questions.jsonl');
    writeFileSync(data, ['Count the books.', 'List every crime book with its details [long]'].map((goal, i) => JSON.stringify({ id: `q${i + 1}`, goal, context: 'CREATE TABLE book(title, author, year, genre, price);' })).join('\n') + '\n');
    await initWorkspace(dir, { dataset: data });
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.models = { ...cfg.models, writer: { baseUrl: stub.url, model: 'tiny-sql', maxTokens: 12, maxRetries: 0 } };
    cfg.agents = { ...cfg.agents, Writer: { model: 'writer', promptText: 'Write the SQL query as JSON: {"sql": "..."}.' } };
    cfg.reward = { ...cfg.reward, noOutputReward: 0 };
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    writeFileSync(join(dir, 'graph.ts'), GRAPH);

    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const ds = await lab.loadDataset();
      const run = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'all', seed: 1 }), samples: 1, concurrency: 1, params: { command: 'eval' }, seed: 1 });
      const cut = run.rollouts.find((r) => r.taskId === 'q2')!;
      const whole = run.rollouts.find((r) => r.taskId === 'q1')!;
      assert.deepEqual([whole.status, whole.failure, whole.truncatedAnswers], ['succeeded', null, 0]);

      const call = lab.store.getSpans(cut.id).find((s) => s.kind === 'llm')!;
      assert.equal(call.attributes[Attr.truncated], true, 'the premise: the llm layer marked the cut answer');
      assert.equal(cut.status, 'failed');
      assert.equal(cut.failure, 'truncated');
      assert.equal(cut.finalReward, 0, 'still scored, with reward.noOutputReward');
      assert.equal(cut.truncatedAnswers, 1);
      assert.match(cut.error!, /Writer's answer was truncated at max_tokens — raise models\.writer\.maxTokens in \.rollout-lab\/lab\.json/);
      // The graph's own failure text is quoted after what the lab saw, whole and on one line, never read as the answer.
      assert.match(cut.error!, /, or ask for a shorter answer; Writer reported: “\{"parse":"Unterminated string in JSON at position \d+[^"]*","text":"\{\\"sql\\": \\"SELECT title/);
      assert.doesNotMatch(cut.error!, /\[object Object\]|answer was \{/);

      const m = computeMetrics(run.rollouts, rewardSetupOf(lab.loaded.config));
      assert.deepEqual([m.executionSuccessRate, m.noOutput, m.truncated, m.rewarded], [50, 1, 1, 2]);
      const report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, run.runId));
      const category = report.failures.categories.find((c) => c.kind === 'truncated')!;
      assert.equal(category.label, 'Truncated at max_tokens');
      assert.deepEqual([category.rollouts, category.fatal], [1, 1]);
      assert.equal(category.examples[0]!.rolloutId, cut.id);
      assert.ok(report.notes.some((n) => /because an answer was truncated at max_tokens/.test(n)), report.notes.join(' | '));
    } finally {
      await lab.close();
    }
  } finally {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
