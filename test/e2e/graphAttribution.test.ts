import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RlRecord } from '../../src/core/train/export/adapters/rlAdapter';
import { startOpenAIStub, type StubReply, type StubRequest } from '../fakes/openaiStub';
import { REPO, cli, cliAsync, editLab, json, tempWorkspace, type RunDoc, type SpanDoc } from './cliHelpers';

/*
 * Users' graphs run through the CLI against an OpenAI-compatible server
 * (vLLM's token ids), as a new user runs them: a prebuilt agent as one agent's
 * node (each model call, tool call and AIR reward belongs to the agent of
 * lab.json whose node holds it, however deep the framework nests it), and a
 * tool a node runs on a model's text, with no tool-call id (its AIR reward
 * goes to the model call that finished last before it).
 */

const FIXTURES = join(REPO, 'test/fixtures/user-graphs');


const readJsonl = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);

/** The agent whose prompt opens the request's system message. */
function agentOf(req: StubRequest, prompts: Record<string, string>): string {
  const system = String(req.body.messages[0]?.content ?? '');
  const agent = Object.keys(prompts).find((a) => system.startsWith(prompts[a]!.trim()));
  assert.ok(agent, `no agent's prompt opens the request: ${system.slice(0, 80)}`);
  return agent;
}

const PROBLEMS = [
  { id: 'm1', question: 'Ann has 6 boxes of 7 pencils. How many pencils?', answer: '42', expression: '6 * 7' },
  { id: 'm2', question: 'A train covers 120 km in 2 hours. How fast is it in km/h?', answer: '60', expression: '120 / 2' },
  { id: 'm3', question: 'Tom had 15 apples and gave away 8. How many are left?', answer: '7', expression: '15 - 8' },
];

/** A workspace with the user's graph, initialised as a new user would, its models on the stub. */
function mathLab(stubUrl: string, prompts: Record<string, string>): string {
  const ws = tempWorkspace();
  copyFileSync(join(FIXTURES, 'mathReactAgent.ts'), join(ws, 'graph.ts'));
  copyFileSync(join(FIXTURES, 'mathReward.ts'), join(ws, 'reward.ts'));
  writeFileSync(join(ws, 'problems.jsonl'), PROBLEMS.map(({ id, question, answer }) => JSON.stringify({ id, question, answer })).join('\n') + '\n');
  const init = cli(['init', '--workspace', ws, '--graph', 'graph.ts', '--dataset', 'problems.jsonl']);
  assert.equal(init.code, 0, init.stderr);
  assert.match(init.stdout, /^agents \(named by the factory's ctx\.model\(\) \/ ctx\.prompt\(\) calls\): Solver, Planner, Checker$/m, 'the prebuilt agent\'s model is the Solver\'s');
  for (const agent of ['Planner', 'Solver', 'Checker']) prompts[agent] = readFileSync(join(ws, '.rollout-lab/prompts', `${agent}.md`), 'utf8');
  editLab(ws, (cfg) => {
    cfg.models.main = { ...cfg.models.main, baseUrl: stubUrl, tokenIds: true };
    cfg.models.judge = { ...cfg.models.judge, baseUrl: stubUrl };
    cfg.reward.module = 'reward.ts';
    cfg.air = [{ name: 'calculator_ok', when: 'tool.ok', tools: ['calculator'], reward: 0.1 }];
  });
  return ws;
}

/** The agents of the math graph on a small model: the Solver calls the calculator once, then answers. */
function playMath(prompts: Record<string, string>): (req: StubRequest) => StubReply {
  return (req) => {
    const messages = req.body.messages as Array<{ role: string; content: string }>;
    const problem = PROBLEMS.find((p) => messages.some((m) => typeof m.content === 'string' && m.content.includes(p.question)))!;
    switch (agentOf(req, prompts)) {
      case 'Planner':
        return { content: `Compute ${problem.expression}.` };
      case 'Solver':
        if (!messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'calculator', arguments: { expression: problem.expression } }] };
        return { content: problem.answer };
      default:
        return { content: 'CORRECT' };
    }
  };
}

test('a prebuilt ReAct agent (createReactAgent) as the Solver node: its calls, tools and AIR rewards are the Solver\'s, and export writes its rows', async () => {
  const prompts: Record<string, string> = {};
  const stub = await startOpenAIStub({ server: 'vllm', replies: (req) => playMath(prompts)(req) });
  const ws = mathLab(stub.url, prompts);
  try {
    const run = await cliAsync(['run', '--workspace', ws, '--split', 'all', '--json']).done;
    assert.equal(run.code, 0, run.stderr);
    const doc = json<RunDoc>(run);
    assert.deepEqual([doc.simulated, doc.rollouts, doc.succeeded, doc.metrics.averageFinalReward], [false, 3, 3, 1]);

    const report = json<{ agents: Array<{ agent: string; visits: number; llmCalls: number; toolCalls: number }> }>(cli(['report', '--workspace', ws, '--format', 'json']));
    assert.deepEqual(
      report.agents.map((a) => [a.agent, a.visits, a.llmCalls, a.toolCalls]),
      [
        ['Checker', 3, 3, 0],
        ['Planner', 3, 3, 0],
        ['Solver', 3, 6, 3],
      ],
      'the prebuilt agent\'s inner nodes ("agent", "tools") are no agents of their own',
    );

    const traces = json<{ rollouts: Array<{ id: string }> }>(cli(['traces', '--workspace', ws, '--json']));
    const spans = json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', traces.rollouts[0]!.id, '--json'])).spans;
    const solverCalls = spans.filter((s) => s.kind === 'llm' && s.attributes['gen_ai.agent.name'] === 'Solver');
    assert.deepEqual(solverCalls.map((s) => s.attributes['rollout_lab.node.inner']), ['agent', 'agent'], 'the inner node is kept on the call');
    const calc = spans.find((s) => s.kind === 'tool')!;
    assert.deepEqual([calc.attributes['gen_ai.agent.name'], calc.attributes['rollout_lab.node.inner']], ['Solver', 'tools']);
    const air = spans.find((s) => s.kind === 'reward' && s.name === 'calculator_ok')!;
    assert.deepEqual([air.attributes['gen_ai.agent.name'], air.attributes['rollout_lab.air.credit']], ['Solver', 'tool_call_id']);

    const rl = join(ws, 'rl.jsonl');
    const exported = cli(['export', '--workspace', ws, '--format', 'rl', '--out', rl, '--agents', 'Solver', '--split', 'all', '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const rows = readJsonl<RlRecord>(rl);
    assert.equal(rows.length, 6, 'two Solver calls per rollout');
    for (const group of new Set(rows.map((r) => r.group))) {
      const calls = rows.filter((r) => r.group === group);
      assert.deepEqual(calls.map((r) => [r.agent, r.completion.tool_calls.map((c) => c.function.name), r.air]), [
        ['Solver', ['calculator'], 0.1],
        ['Solver', [], 0],
      ]);
      assert.ok(calls.every((r) => Array.isArray(r.token_ids) && r.token_ids.length > 0));
      assert.ok(calls[1]!.messages.some((m) => m.role === 'tool'), 'the second call sees the calculator\'s result');
    }
    const sft = join(ws, 'sft.jsonl');
    const sftRun = cli(['export', '--workspace', ws, '--format', 'sft', '--out', sft, '--agents', 'Solver', '--split', 'all']);
    assert.equal(sftRun.code, 0, sftRun.stderr);
    assert.equal(readJsonl(sft).length, 6);
  } finally {
    await stub.close();
    rmSync(ws, { recursive: true, force: true });
  }
});

const SQL_EXAMPLE = join(REPO, 'examples/text-to-sql');
const QUESTIONS = (JSON.parse(readFileSync(join(SQL_EXAMPLE, 'data/questions.json'), 'utf8')) as Array<{ db_id: string; question: string; query: string }>).slice(0, 3);

/** The user's text-to-SQL graph beside the example's database helpers and reward, with its own sql.js (as `npm install` there gives it). */
function sqlLab(stubUrl: string, prompts: Record<string, string>): string {
  const ws = tempWorkspace();
  cpSync(SQL_EXAMPLE, ws, { recursive: true, filter: (src) => !/[\\/](node_modules|\.rollout-lab)$/.test(src) });
  cpSync(join(REPO, 'node_modules/sql.js'), join(ws, 'node_modules/sql.js'), { recursive: true, filter: (src) => !src.endsWith('.zip') });
  const graph = readFileSync(join(FIXTURES, 'textToSqlExecute.ts'), 'utf8').replace("'../../../examples/text-to-sql/taskDatabase'", "'./taskDatabase'");
  writeFileSync(join(ws, 'graph.ts'), graph);
  writeFileSync(join(ws, 'three.jsonl'), QUESTIONS.map((q, i) => JSON.stringify({ id: `q${i}`, ...q })).join('\n') + '\n');
  const init = cli(['init', '--workspace', ws, '--graph', 'graph.ts', '--dataset', 'three.jsonl']);
  assert.equal(init.code, 0, init.stderr);
  for (const agent of ['SqlWriter', 'Checker']) prompts[agent] = readFileSync(join(ws, '.rollout-lab/prompts', `${agent}.md`), 'utf8');
  editLab(ws, (cfg) => {
    cfg.models.main = { ...cfg.models.main, baseUrl: stubUrl, tokenIds: true };
    cfg.models.judge = { ...cfg.models.judge, baseUrl: stubUrl };
    cfg.datasets.three.fields = { goal: 'question', expected: 'query', visible: ['db_id'] };
    cfg.reward.module = 'reward.ts';
    cfg.air = [
      { name: 'sql_executes', when: 'tool.ok', tools: ['execute_sql'], reward: 0.1 },
      { name: 'sql_fails', when: 'tool.error', tools: ['execute_sql'], reward: -0.1 },
    ];
  });
  return ws;
}

/** The SqlWriter gets the first question wrong (a table that does not exist), the Checker sends it back, and it fixes it. */
function playSql(prompts: Record<string, string>): (req: StubRequest) => StubReply {
  return (req) => {
    const text = (req.body.messages as Array<{ content: string }>).map((m) => m.content).join('\n');
    const q = QUESTIONS.find((x) => text.includes(x.question))!;
    if (agentOf(req, prompts) === 'Checker') return { content: /error:/.test(text) ? 'INCORRECT: the query reads a table that does not exist' : 'CORRECT' };
    const wrong = q === QUESTIONS[0] && !text.includes('The checker said');
    return { content: '```sql\n' + (wrong ? 'SELECT count(*) FROM books' : q.query) + '\n```' };
  };
}

test('a text-to-SQL graph whose execute node runs the SQL the SqlWriter wrote as text: the execute_sql AIR rewards reach the SqlWriter\'s rows', async () => {
  const prompts: Record<string, string> = {};
  const stub = await startOpenAIStub({ server: 'vllm', replies: (req) => playSql(prompts)(req) });
  const ws = sqlLab(stub.url, prompts);
  try {
    const run = await cliAsync(['run', '--workspace', ws, '--split', 'all', '--json']).done;
    assert.equal(run.code, 0, run.stderr);
    const doc = json<RunDoc>(run);
    assert.deepEqual([doc.simulated, doc.rollouts, doc.succeeded, doc.metrics.averageFinalReward], [false, 3, 3, 1]);

    const rl = join(ws, 'rl.jsonl');
    const exported = cli(['export', '--workspace', ws, '--format', 'rl', '--out', rl, '--agents', 'SqlWriter', '--split', 'all']);
    assert.equal(exported.code, 0, exported.stderr);
    const rows = readJsonl<RlRecord>(rl);
    const byTask = (id: string): number[] => rows.filter((r) => r.group === id).map((r) => Math.round(r.air * 100) / 100);
    assert.deepEqual([byTask('q0'), byTask('q1'), byTask('q2')], [[-0.1, 0.1], [0.1], [0.1]]);
    assert.ok(rows.every((r) => r.agent === 'SqlWriter' && Array.isArray(r.token_ids) && r.token_ids.length > 0));

    const traces = json<{ rollouts: Array<{ id: string; taskId: string }> }>(cli(['traces', '--workspace', ws, '--json']));
    const first = traces.rollouts.find((r) => r.taskId === 'q0')!;
    const spans = json<{ spans: SpanDoc[] }>(cli(['traces', '--workspace', ws, '--rollout', first.id, '--json'])).spans;
    const writerCalls = spans.filter((s) => s.kind === 'llm' && s.attributes['gen_ai.agent.name'] === 'SqlWriter').sort((a, b) => a.startTime - b.startTime);
    const rewards = spans.filter((s) => s.kind === 'reward' && s.attributes['rollout_lab.reward.kind'] === 'intermediate').sort((a, b) => a.startTime - b.startTime);
    assert.deepEqual(
      rewards.map((r) => [r.name, r.attributes['gen_ai.agent.name'], r.attributes['rollout_lab.air.credit'], r.attributes['rollout_lab.air.call']]),
      [
        ['sql_fails', 'SqlWriter', 'preceding_call', writerCalls[0]!.spanId],
        ['sql_executes', 'SqlWriter', 'preceding_call', writerCalls[1]!.spanId],
      ],
      'each reward names the model call that wrote the query the tool ran',
    );
  } finally {
    await stub.close();
    rmSync(ws, { recursive: true, force: true });
  }
});
