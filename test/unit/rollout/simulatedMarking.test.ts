import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { Attr } from '../../../src/core/trace/span';
import { startOpenAIStub } from '../../fakes/openaiStub';

/*
 * A rollout is simulated when the simulated endpoint answered one of its
 * calls — not because the simulator was started for some model of lab.json
 * (here the judge, which has no endpoint) that the rollout never called.
 */

const GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
const State = Annotation.Root({ ...MessagesAnnotation.spec, final_output: Annotation({ reducer: (_a, b) => b, default: () => null }) });
export default function createGraph(ctx) {
  const writer = ctx.model('Writer');
  return new StateGraph(State)
    .addNode('Writer', async (s) => { const reply = await writer.invoke(s.messages); return { messages: [reply], final_output: reply.text }; })
    .addEdge(START, 'Writer').addEdge('Writer', END).compile();
}
`;

async function lab(dir: string, mode: 'replace' | 'combine', baseUrl: string): Promise<Lab> {
  writeFileSync(join(dir, 'tasks.jsonl'), ['a', 'b'].map((id) => JSON.stringify({ id, goal: `Question ${id}?`, context: '' })).join('\n'));
  await initWorkspace(dir, { dataset: 'tasks.jsonl' });
  const file = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>;
  cfg.graph = { kind: 'module', module: 'graph.ts' };
  cfg.models = { main: { model: 'small', baseUrl }, judge: { model: 'judge' } };
  cfg.agents = { Writer: { model: 'main', promptText: 'Answer.' } };
  cfg.reward = { judge: { model: 'judge' }, criteria: { quality: { weight: 1, description: 'Good answer.' } }, module: 'reward.ts', mode };
  writeFileSync(file, JSON.stringify(cfg, null, 2));
  writeFileSync(join(dir, 'graph.ts'), GRAPH);
  writeFileSync(join(dir, 'reward.ts'), 'export default () => 1;\n');
  return Lab.open({ workspace: dir, env: {} });
}

for (const mode of ['replace', 'combine'] as const) {
  const judged = mode === 'combine';
  test(`a real model's rollouts ${judged ? 'that the simulated judge scores are' : 'whose simulated judge never runs are not'} simulated (reward mode ${mode})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rl-sim-marking-'));
    const stub = await startOpenAIStub({ replies: () => ({ content: 'An answer.' }) });
    try {
      const l = await lab(dir, mode, stub.url);
      try {
        assert.equal(l.simulated, true, 'the simulator is up for the judge');
        const ds = await l.loadDataset();
        const r = await runRollouts(await l.environment(ds.tasks), { tasks: l.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {} });
        assert.equal(r.rollouts.length, 2);
        assert.equal(stub.requests.length, 2, 'the writer went to the real server');
        for (const rollout of r.rollouts) {
          assert.equal(rollout.status, 'succeeded', rollout.error ?? '');
          assert.equal(rollout.simulated, judged);
          const spans = l.store.getSpans(rollout.id);
          assert.equal(spans.find((s) => s.kind === 'rollout')!.attributes[Attr.simulated], judged);
          const writer = spans.find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Writer')!;
          assert.notEqual(writer.attributes[Attr.simulated], true, 'a call to a real server is never marked simulated');
        }
        assert.equal(l.store.getRun(r.runId)!.simulated, judged);
      } finally {
        await l.close();
      }
    } finally {
      await stub.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
