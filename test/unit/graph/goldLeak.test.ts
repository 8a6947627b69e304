import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import type { SpanRecord } from '../../../src/core/trace/span';

/*
 * Gold answers must reach the reward and nothing else: not a model message,
 * not the graph's state. Every gold value here carries CANARY, so a leak
 * anywhere in the agents' spans (node inputs and outputs, model messages,
 * tool calls) shows up as that word.
 */

const GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { SystemMessage } from '@langchain/core/messages';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  task: Annotation({ reducer: (_a, b) => b, default: () => null }),
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
});

export default function createGraph(ctx) {
  const writer = ctx.model('SqlWriter');
  return new StateGraph(State)
    .addNode('SqlWriter', async (s) => {
      const reply = await writer.invoke([new SystemMessage('[agent: SqlWriter] ' + ctx.prompt('SqlWriter')), ...s.messages]);
      // The whole state the graph was given, so the test can look for gold in it.
      return { messages: [reply], final_output: JSON.stringify({ task: s.task, messages: s.messages.map((m) => m.text) }) };
    })
    .addEdge(START, 'SqlWriter')
    .addEdge('SqlWriter', END)
    .compile();
}
`;

const REWARD = `export default function reward({ task }) {
  return { reward: 1, info: JSON.stringify({ expected: task.expected, meta: task.meta }) };
}
`;

function agentSpans(spans: readonly SpanRecord[]): SpanRecord[] {
  // The rollout root records the expected decision for the views, and reward spans are the reward's own: neither is seen by an agent.
  return spans.filter((s) => s.kind !== 'rollout' && s.kind !== 'reward');
}

test('a module graph gets only the visible task; the custom reward gets the gold answer', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-gold-module-'));
  try {
    const rows = [
      { question: 'How many singers do we have?', db_id: 'concert_singer', query: 'SELECT count(*) FROM singer -- CANARY-GOLD', note: 'CANARY-META' },
      { question: 'How many pets are there?', db_id: 'pets_1', query: 'SELECT count(*) FROM pets -- CANARY-GOLD', note: 'CANARY-META' },
    ];
    writeFileSync(join(dir, 'train_spider.json'), JSON.stringify(rows));
    await initWorkspace(dir);
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.agents = { SqlWriter: { model: 'junior', promptText: 'Write one SQLite query that answers the question.' } };
    cfg.datasets = { spider: { path: 'train_spider.json', fields: { goal: 'question', expected: 'query', visible: ['db_id'] } } };
    cfg.reward = { ...cfg.reward, module: 'reward.ts' };
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    writeFileSync(join(dir, 'graph.ts'), GRAPH);
    writeFileSync(join(dir, 'reward.ts'), REWARD);

    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const ds = await lab.loadDataset();
      // Named by its file (--dataset FILE), a configured dataset keeps its field mapping.
      assert.deepEqual((await lab.loadDataset('train_spider.json')).tasks, ds.tasks);
      const r = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {} });
      assert.equal(r.rollouts.length, 2);
      for (const rollout of r.rollouts) {
        assert.equal(rollout.status, 'succeeded', rollout.error ?? '');
        const spans = lab.store.getSpans(rollout.id);
        const task = ds.tasks.find((t) => t.id === rollout.taskId)!;
        const state = JSON.parse(String(spans.find((s) => s.kind === 'rollout')!.attributes['rollout_lab.output.final']));
        assert.deepEqual(state.task, { id: task.id, goal: task.goal, context: '', db_id: task.visible!.db_id });
        assert.match(state.messages[0], /^How many .*\?\n\ndb_id: (concert_singer|pets_1)$/);
        assert.ok(spans.some((s) => s.kind === 'llm'), 'the agent made a model call');
        for (const s of agentSpans(spans)) assert.ok(!JSON.stringify(s.attributes).includes('CANARY'), `gold in the ${s.kind} span ${s.name}`);
        const custom = spans.find((s) => s.kind === 'reward' && s.name === 'custom')!;
        assert.deepEqual(JSON.parse(String(custom.attributes['rollout_lab.reward.info'])), { expected: task.expected, meta: { db_id: task.visible!.db_id, note: 'CANARY-META' } });
      }
    } finally {
      await lab.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the research-lab graph gets id, goal and context only: no gold value in any model message or node state', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rl-gold-research-'));
  try {
    const data = join(dir, 'tasks.jsonl');
    const row = {
      id: 'r1',
      goal: 'Does daily aspirin lower the risk of colorectal cancer in adults?',
      context: 'BACKGROUND: Aspirin inhibits COX-2. RESULTS: In a cohort of 20,000 adults, daily aspirin users had fewer colorectal cancers.',
      expected_decision: 'yes',
      expected: 'CANARY-GOLD long answer',
      long_answer: 'CANARY-META long answer',
    };
    writeFileSync(data, `${JSON.stringify(row)}\n`);
    await initWorkspace(dir, { dataset: data });
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const ds = await lab.loadDataset();
      const r = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {}, seed: 3 });
      const [rollout] = r.rollouts;
      assert.equal(rollout!.status, 'succeeded', rollout!.error ?? '');
      const spans = lab.store.getSpans(rollout!.id);
      assert.ok(spans.filter((s) => s.kind === 'llm').length >= 9, 'every agent ran');
      for (const s of agentSpans(spans)) assert.ok(!JSON.stringify(s.attributes).includes('CANARY'), `gold in the ${s.kind} span ${s.name}`);
    } finally {
      await lab.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
