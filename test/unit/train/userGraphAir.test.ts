import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { LabConfigSchema } from '../../../src/core/config/schema';
import type { CustomReward } from '../../../src/core/reward/customReward';
import { runRollouts, type PlannedTask, type RolloutEnvironment } from '../../../src/core/rollout/runner';
import { TraceStore } from '../../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../../src/core/trace/span';
import { exportTrainingData } from '../../../src/core/train/export/exportData';
import { ScriptedChatModel } from '../graph/scriptedChatModel';

/*
 * A user's own three-node text-to-SQL graph, written the way LangGraph.js
 * users write one: SqlWriter asks for a tool call, a separate `execute` node
 * (a ToolNode) runs it, and Checker reports its parsed verdict as
 * `lastOutput` — a key the state does not declare. Only the chat model is a
 * script; LangGraph, the tool, the tracer, the runner and the store are real.
 */

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  final_output: Annotation<string | null>({ reducer: (_a, b) => b, default: () => null }),
});
type S = typeof State.State;

const runSql = tool(
  async ({ sql }: { sql: string }) => {
    if (/drop/i.test(sql)) throw new Error('only SELECT statements may run');
    return JSON.stringify([{ n: 3 }]);
  },
  { name: 'run_sql', description: 'Run a SQL query on the database.', schema: z.object({ sql: z.string() }) },
);

function textToSqlGraph(model: ScriptedChatModel) {
  const writer = async (state: S) => {
    const reply = await model.bindTools([runSql]).invoke([new SystemMessage('[agent: SqlWriter]\nWrite one SQL query with run_sql.'), ...state.messages]);
    return { messages: [reply] };
  };
  const checker = async (state: S) => {
    const result = state.messages[state.messages.length - 1]!;
    const reply = await model.invoke([new SystemMessage('[agent: Checker]\nReply with JSON {"correct": boolean}.'), new HumanMessage(`Result: ${result.text}`)]);
    try {
      const value = JSON.parse(reply.text) as { correct: boolean };
      // The contract: `lastOutput` in the node's update, declared in the state or not.
      return { final_output: reply.text, lastOutput: { ok: true, value } };
    } catch {
      return { final_output: reply.text, lastOutput: { ok: false, error: 'the verdict is not JSON' } };
    }
  };
  return new StateGraph(State)
    .addNode('SqlWriter', writer)
    .addNode('execute', new ToolNode([runSql]))
    .addNode('Checker', checker)
    .addEdge(START, 'SqlWriter')
    .addEdge('SqlWriter', 'execute')
    .addEdge('execute', 'Checker')
    .addEdge('Checker', END)
    .compile();
}

test('a tool run in its own graph node: its AIR reward goes to the SqlWriter call that asked for it, and RL rows carry it; a node\'s lastOutput fires output.valid / output.invalid', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-user-air-'));
  const store = await TraceStore.open(dir);
  try {
    const config = LabConfigSchema.parse({
      models: { m: { model: 'scripted' } },
      agents: { SqlWriter: { model: 'm', promptText: 'Write SQL.', tools: ['run_sql'] }, Checker: { model: 'm', promptText: 'Check.' } },
      graph: { kind: 'module', module: 'graph.ts' },
      reward: { judge: { model: 'm' } },
      air: [
        { name: 'sql-ran', when: 'tool.ok', agents: ['SqlWriter'], reward: 0.2 },
        { name: 'sql-failed', when: 'tool.error', agents: ['SqlWriter'], reward: -0.3 },
        { name: 'verdict-parsed', when: 'output.valid', agents: ['Checker'], reward: 0.1 },
        { name: 'verdict-broken', when: 'output.invalid', agents: ['Checker'], reward: -0.1 },
      ],
    });
    // Task "good" runs a SELECT and gets a JSON verdict; task "bad" tries a DROP and gets prose.
    const model = new ScriptedChatModel((call) => {
      const bad = call.messages.some((m: BaseMessage) => m.text.includes('task bad'));
      if (call.agent === 'SqlWriter') return { tool_calls: [{ id: `call_${bad ? 'bad' : 'good'}`, name: 'run_sql', args: { sql: bad ? 'DROP TABLE t' : 'SELECT count(*) FROM t' } }] };
      return call.user.includes('only SELECT') ? 'It failed, sorry.' : '{"correct": true}';
    });
    const graph = textToSqlGraph(model);
    const custom: CustomReward = {
      file: 'reward.ts',
      timeoutMs: 1000,
      evaluate: async ({ outcome }) => ({ ok: true, reward: outcome.finalOutput ? 1 : 0, breakdown: { executed: outcome.finalOutput ? 1 : 0 } }),
    };
    const env: RolloutEnvironment = {
      config,
      store,
      runGraph: async (task, { callbacks, signal }) => {
        const state = (await graph.invoke({ messages: [new HumanMessage(`${task.goal} (task ${task.id})`)] }, { callbacks, signal })) as S;
        return { finalOutput: state.final_output, decision: null, turns: 1, failures: [] };
      },
      judgeModel: model,
      versions: { promptVersion: () => null, model: (agent) => (agent in config.agents ? { logical: 'm', version: null } : null) },
      simulated: false,
      customReward: custom,
    };
    const tasks: PlannedTask[] = ['good', 'bad'].map((id) => ({ id, goal: 'How many rows are in t?', context: '', expectedDecision: null, split: 'train' }));
    const run = await runRollouts(env, { tasks, samples: 1, concurrency: 1, params: {}, seed: 1 });
    assert.deepEqual(run.rollouts.map((r) => r.status), ['succeeded', 'succeeded']);

    const spansOf = (task: string): SpanRecord[] => store.getSpans(run.rollouts.find((r) => r.taskId === task)!.id);
    for (const task of ['good', 'bad']) {
      const spans = spansOf(task);
      const toolSpan = spans.find((s) => s.kind === 'tool')!;
      assert.equal(spans.find((s) => s.spanId === toolSpan.parentSpanId)!.name, 'execute', 'the tool ran in the execute node');
      assert.equal(toolSpan.attributes[Attr.agentName], 'SqlWriter', 'and belongs to the agent whose call asked for it');
      assert.equal(toolSpan.attributes[Attr.toolCallId], `call_${task}`);
      const air = spans.filter((s) => s.kind === 'reward' && s.attributes[Attr.rewardKind] === 'intermediate');
      const onTool = air.find((s) => s.parentSpanId === toolSpan.spanId)!;
      assert.equal(onTool.attributes[Attr.agentName], 'SqlWriter', 'the reward span names the agent that asked for the tool');
      assert.equal(onTool.attributes[Attr.rewardName], task === 'good' ? 'sql-ran' : 'sql-failed');
      const checker = spans.find((s) => s.kind === 'node' && s.name === 'Checker')!;
      assert.equal(checker.attributes['rollout_lab.output.ok'], task === 'good', 'lastOutput reached the node span though the state does not declare it');
      const onChecker = air.find((s) => s.parentSpanId === checker.spanId)!;
      assert.equal(onChecker.attributes[Attr.rewardName], task === 'good' ? 'verdict-parsed' : 'verdict-broken');
    }

    // Default agents of a module graph: those that made model calls. Every row carries its AIR reward.
    const out = join(dir, 'rl.jsonl');
    const manifest = await exportTrainingData(store, config, { format: 'rl' }, out);
    assert.deepEqual(manifest.options.agents, ['SqlWriter', 'Checker']);
    // The execute node is a step of the graph, not an agent: its tool call counts for SqlWriter.
    const agents = run.rollouts[0]!.agents;
    assert.deepEqual(agents.map((a) => a.agent), ['Checker', 'SqlWriter']);
    assert.equal(agents.find((a) => a.agent === 'SqlWriter')!.toolCalls, 1);
    const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { group: string; agent: string; air: number; reward: number; final_reward: number });
    const row = (group: string, agent: string): { air: number; reward: number; final_reward: number } => rows.find((r) => r.group === group && r.agent === agent)!;
    assert.equal(rows.length, 4);
    assert.equal(row('good', 'SqlWriter').air, 0.2);
    assert.equal(row('bad', 'SqlWriter').air, -0.3);
    assert.equal(row('good', 'Checker').air, 0.1);
    assert.equal(row('bad', 'Checker').air, -0.1);
    assert.equal(row('good', 'SqlWriter').reward, 1.2, 'credited final reward plus the tool\'s AIR reward');
    assert.equal(rows.filter((r) => r.air !== 0).length, 4, 'every model call carries an intermediate reward');
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
