import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { examplesDir } from '../../../src/core/lab/exampleLabs';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { TraceStore } from '../../../src/core/store/traceStore';
import { CATALOGUE, callOf, generateQuestions, ITEMS, lookup, questionsJsonl, TOOLS } from '../../../examples/stock-lookup/catalogue';
import answer from '../../../examples/stock-lookup/sim/teacher';
import lookedUpRight from '../../../examples/stock-lookup/reward';

const DIR = join(examplesDir(), 'stock-lookup');

test('the question file is what the seeded generator writes; each question says which call answers it, and the answer is what that call returns', () => {
  assert.equal(readFileSync(join(DIR, 'data/questions.jsonl'), 'utf8'), questionsJsonl());
  const rows = generateQuestions();
  assert.equal(rows.length, 320);
  for (const r of rows) {
    assert.deepEqual(callOf(r.question), { tool: r.tool, item: r.item }, r.question);
    assert.equal(r.answer, lookup(r.tool, r.item));
  }
  assert.deepEqual(new Set(rows.map((r) => r.item)), new Set(ITEMS));
  assert.deepEqual(new Set(rows.map((r) => r.tool)), new Set(TOOLS));
  // Every answer of the catalogue is distinct, so only the right call returns the right answer.
  const answers = ITEMS.flatMap((i) => TOOLS.map((t) => lookup(t, i)));
  assert.equal(new Set(answers).size, answers.length);
  assert.throws(() => lookup('get_price', 'sofa'), /no item "sofa" in the catalogue; items: mug, lamp/);
  assert.equal(lookup('get_stock', ' Lamp '), `${CATALOGUE.lamp!.stock} in stock`);
  assert.equal(callOf('Can I return a sofa?'), null);
});

test('the reward is what the lookup returned against what the right call returns; no lookup scores 0', () => {
  const r = generateQuestions()[0]!;
  assert.deepEqual(lookedUpRight({ task: { id: r.id, expected: r.answer }, outcome: { finalOutput: r.answer } }).breakdown, { looked_up: 1, match: 1 });
  const other = TOOLS.find((t) => t !== r.tool)!;
  assert.equal(lookedUpRight({ task: { id: r.id, expected: r.answer }, outcome: { finalOutput: lookup(other, r.item) } }).reward, 0);
  assert.deepEqual(lookedUpRight({ task: { id: r.id, expected: r.answer }, outcome: { finalOutput: null } }).breakdown, { looked_up: 0, match: 0 });
  assert.throws(() => lookedUpRight({ task: { id: 'q9' }, outcome: { finalOutput: 'x' } }), /map "expected" to "answer"/);
});

test('the simulated teacher makes the right call for most questions and a wrong one (item or tool) for some, the same way every time', () => {
  const rows = generateQuestions();
  const ask = (q: string) => answer({ agent: 'Clerk', messages: [{ role: 'system', content: 'x' }, { role: 'user', content: q }] });
  const calls = rows.map((r) => ask(r.question) as { tool_calls: Array<{ name: string; arguments: { item: string } }> });
  const right = calls.filter((c, i) => c.tool_calls[0]!.name === rows[i]!.tool && c.tool_calls[0]!.arguments.item === rows[i]!.item).length / rows.length;
  assert.ok(right > 0.75 && right < 0.95, `teacher accuracy ${right}`);
  assert.ok(calls.some((c, i) => c.tool_calls[0]!.name !== rows[i]!.tool), 'some wrong tools');
  assert.ok(calls.some((c, i) => c.tool_calls[0]!.arguments.item !== rows[i]!.item), 'some wrong items');
  assert.deepEqual(ask(rows[0]!.question), calls[0]);
  assert.equal(answer({ agent: 'Responder', messages: [{ role: 'user', content: 'Is the lamp in stock?\nLookup: 3 in stock' }] }), 'Thanks for asking: 3 in stock.');
});

test('init --example stock-lookup writes a lab whose rollouts call the tools in the lookup node and are rewarded by what they return', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rl-stock-'));
  try {
    const r = await initWorkspace(ws, { example: 'stock-lookup' });
    for (const f of ['graph.ts', 'catalogue.ts', 'reward.ts', 'sim/teacher.ts', 'data/questions.jsonl', '.rollout-lab/prompts/Clerk.md']) assert.ok(r.created.includes(f), f);
    const lab = await Lab.open({ workspace: ws, env: {} });
    let runId: string;
    try {
      const { config } = lab.loaded;
      assert.equal(config.agents.Clerk?.model, 'student');
      assert.deepEqual(config.training.phases.map((p) => `${p.name}:${p.kind}`), ['gather:gather', 'sft:sft', 'grpo:grpo']);
      const ds = await lab.loadDataset();
      const tasks = lab.selectTasks(ds, { split: 'train', limit: 12, seed: config.runner.seed });
      const run = await runRollouts(await lab.environment(ds.tasks), { tasks, samples: 1, concurrency: 1, params: { command: 'run' }, seed: 1 });
      runId = run.runId;
      assert.equal(run.rollouts.length, 12);
      assert.ok(run.rollouts.every((x) => x.status === 'succeeded'));
      const rewards = run.rollouts.map((x) => x.finalReward);
      assert.ok(rewards.includes(1), 'the teacher calls right mostly');
    } finally {
      await lab.close();
    }
    const answers = new Map(generateQuestions().map((q) => [q.id, q.answer]));
    const store = await TraceStore.open(ws, { readOnly: true });
    try {
      for (const x of store.listRollouts({ runId, limit: 100 }).rollouts) {
        const spans = store.getSpans(x.id);
        const tool = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
        assert.ok(tool, 'the Clerk\'s call ran as a tool');
        const args = JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments'])) as { item: string };
        const returned = lookup(tool.attributes['gen_ai.tool.name'] as 'get_price', args.item);
        assert.equal(tool.attributes['gen_ai.tool.call.result'], returned);
        assert.equal(x.finalReward, returned === answers.get(x.taskId) ? 1 : 0, `task ${x.taskId}: the lookup returned ${returned}`);
      }
    } finally {
      await store.close();
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});
