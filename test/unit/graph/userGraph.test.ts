import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BaseCallbackHandler } from '@langchain/core/callbacks/base';
import type { Serialized } from '@langchain/core/load/serializable';
import type { BaseMessage } from '@langchain/core/messages';
import { ConfigError } from '../../../src/core/errors';
import { describeGraph } from '../../../src/core/graph/introspect';
import { defaultGraphInput, loadUserGraph, type UserGraphContext } from '../../../src/core/graph/userGraph';
import { initWorkspace } from '../../../src/core/lab/init';
import { Lab } from '../../../src/core/lab/lab';
import { RoutedChatModel } from '../../../src/core/llm/routedChatModel';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';
import { ScriptedChatModel } from './scriptedChatModel';

const EXAMPLE = join(__dirname, '..', '..', '..', 'examples', 'custom-graph', 'graph.ts');
const TASK = { id: 'q1', goal: 'Does aspirin lower the risk of colorectal cancer?', context: 'A cohort of 20,000 adults showed fewer cancers with daily aspirin.' };

function ctxWith(model: (name: string) => UserGraphContext['model'] extends (n: string) => infer M ? M : never): UserGraphContext {
  return { model, tools: {}, prompt: () => { throw new ConfigError('no prompt configured'); }, maxTurns: 8 };
}

/** Records the model and tool calls LangChain reports, by graph node. */
function recorder(): { handler: BaseCallbackHandler; llm: string[]; tools: string[] } {
  const llm: string[] = [];
  const tools: string[] = [];
  const handler = BaseCallbackHandler.fromMethods({
    handleChatModelStart(_l: Serialized, _m: BaseMessage[][], _r: string, _p?: string, _e?: Record<string, unknown>, _t?: string[], meta?: Record<string, unknown>) {
      llm.push(String(meta?.langgraph_node));
    },
    handleToolStart(_t: Serialized, _i: string, _r: string, _p?: string, _tags?: string[], meta?: Record<string, unknown>, name?: string) {
      tools.push(`${String(meta?.langgraph_node)}:${name}`);
    },
  });
  return { handler, llm, tools };
}

describe('user graph loading', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rl-usergraph-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string): string => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return file;
  };

  it('bundles the example TS graph and traces its model and tool calls with no change to its code', async () => {
    const model = new ScriptedChatModel((c) => {
      if (c.agent === 'Writer' && c.n === 0) return { tool_calls: [{ id: 'wc1', name: 'word_count', args: { text: 'aspirin lowers risk' } }] };
      if (c.agent === 'Writer') return `Draft ${c.n}: daily aspirin was linked to fewer colorectal cancers in a large cohort.`;
      return c.n === 0 ? '{"verdict": "REVISE", "feedback": "cite the cohort size"}' : '{"verdict": "APPROVE", "feedback": "good"}';
    });
    // A copy outside the repository has no node_modules to resolve: it only runs on the instances we provide.
    const copy = join(dir, 'example-graph.ts');
    copyFileSync(EXAMPLE, copy);
    const loaded = await loadUserGraph(copy, 'default', ctxWith(() => model));
    const rec = recorder();
    const state = await loaded.graph.invoke(loaded.input(TASK), { callbacks: [rec.handler] });
    assert.deepEqual(rec.llm, ['Writer', 'Writer', 'Critic', 'Writer', 'Critic']);
    assert.deepEqual(rec.tools, ['Writer_tools:word_count']);
    const outcome = loaded.outcome(state);
    assert.equal(outcome.decision, 'APPROVE');
    assert.match(outcome.finalOutput ?? '', /^Draft 2:/);
    assert.equal(outcome.turns, 5);
    // The default input hands the question and its context to the graph as the first human message.
    assert.match(model.calls[0]!.user, /aspirin[\s\S]*Context:[\s\S]*20,000/);
  });

  it('runs the example against the simulated endpoint over HTTP', async () => {
    let sim: SimServer | undefined;
    try {
      sim = await startSimServer({ seed: 1 });
      const url = sim.url;
      const loaded = await loadUserGraph(EXAMPLE, 'default', {
        ...ctxWith((agent) => new RoutedChatModel({
          agent,
          resolved: { logical: agent, baseUrl: url, model: 'rollout-lab-sim', apiKey: 'not-needed', timeoutMs: 10_000, maxRetries: 0, logprobs: false, tokenIds: false, version: null, simulated: true },
        })),
      });
      const rec = recorder();
      const outcome = loaded.outcome(await loaded.graph.invoke(loaded.input(TASK), { callbacks: [rec.handler] }));
      assert.ok(outcome.finalOutput, 'the writer produced a draft');
      assert.ok(outcome.decision === 'APPROVE' || outcome.decision === 'REVISE');
      assert.ok(rec.llm.includes('Writer') && rec.llm.includes('Critic'), rec.llm.join(','));
      assert.ok(sim.requests.length >= 2);
    } finally {
      await sim?.close();
    }
  });

  it('describes the example graph: agents, tool node and labelled conditional edges', async () => {
    const loaded = await loadUserGraph(EXAMPLE, 'default', ctxWith(() => new ScriptedChatModel(() => '')));
    const d = await describeGraph(loaded.graph);
    assert.deepEqual(
      Object.fromEntries(d.nodes.map((n) => [n.id, n.kind])),
      { __start__: 'start', Writer: 'agent', Writer_tools: 'tools', Critic: 'agent', __end__: 'end' },
    );
    const labels = d.edges.filter((e) => e.conditional).map((e) => `${e.source}-${e.label}->${e.target}`).sort();
    assert.deepEqual(labels, ['Critic-done->__end__', 'Critic-revise->Writer', 'Writer-draft->Critic', 'Writer-tool call->Writer_tools']);
  });

  it('gives a syntax error with file, line and column', async () => {
    const file = write('broken.ts', 'export const x = 1;\nexport default function (ctx) {\n  return {{;\n}\n');
    await assert.rejects(loadUserGraph(file, 'default', ctxWith(() => new ScriptedChatModel(() => ''))), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, /broken\.ts:3:\d+: /);
      assert.equal(e.file, file);
      return true;
    });
  });

  it('names the exports it found when the configured one is missing', async () => {
    const file = write('named.ts', 'export const alpha = 1;\nexport function beta() {}\n');
    await assert.rejects(loadUserGraph(file, 'graph', ctxWith(() => new ScriptedChatModel(() => ''))), (e: unknown) =>
      e instanceof ConfigError && /no export "graph".*alpha, beta/.test(e.message),
    );
  });

  it('rejects an export that is not a graph, and a file that does not exist', async () => {
    const file = write('notgraph.ts', 'export default { hello: "world" };\n');
    await assert.rejects(loadUserGraph(file, 'default', ctxWith(() => new ScriptedChatModel(() => ''))), (e: unknown) =>
      e instanceof ConfigError && /not a LangGraph graph/.test(e.message),
    );
    const factory = write('factory.ts', 'export default () => 42;\n');
    await assert.rejects(loadUserGraph(factory, 'default', ctxWith(() => new ScriptedChatModel(() => ''))), /is a number, not a LangGraph graph/);
    await assert.rejects(loadUserGraph(join(dir, 'nope.ts'), 'default', ctxWith(() => new ScriptedChatModel(() => ''))), (e: unknown) =>
      e instanceof ConfigError && /does not exist/.test(e.message),
    );
  });

  it('compiles an exported StateGraph, accepts module.exports and uses the module\'s input and outcome', async () => {
    const builder = write(
      'builder.js',
      [
        "const { StateGraph, Annotation, START, END } = require('@langchain/langgraph');",
        'const S = Annotation.Root({ question: Annotation(), answer: Annotation() });',
        "const g = new StateGraph(S).addNode('Echo', (s) => ({ answer: 'echo ' + s.question })).addEdge(START, 'Echo').addEdge('Echo', END);",
        'module.exports = g;',
        "module.exports.input = (task) => ({ question: task.goal });",
        "module.exports.outcome = (s) => ({ finalOutput: s.answer, decision: 'DONE', turns: 1, failures: [] });",
      ].join('\n'),
    );
    const loaded = await loadUserGraph(builder, 'default', ctxWith(() => new ScriptedChatModel(() => '')));
    const outcome = loaded.outcome(await loaded.graph.invoke(loaded.input(TASK)));
    assert.deepEqual(outcome, { finalOutput: `echo ${TASK.goal}`, decision: 'DONE', turns: 1, failures: [] });
  });

  it('rejects an outcome() that returns the wrong shape', async () => {
    const file = write(
      'badoutcome.ts',
      [
        "import { StateGraph, MessagesAnnotation, START, END } from '@langchain/langgraph';",
        "export default new StateGraph(MessagesAnnotation).addNode('A', () => ({})).addEdge(START, 'A').addEdge('A', END).compile();",
        'export const outcome = () => ({ finalOutput: 7 });',
      ].join('\n'),
    );
    const loaded = await loadUserGraph(file, 'default', ctxWith(() => new ScriptedChatModel(() => '')));
    const state = await loaded.graph.invoke(loaded.input(TASK));
    assert.throws(() => loaded.outcome(state), (e: unknown) => e instanceof ConfigError && /finalOutput/.test(e.message));
  });

  it('default input: the question, its context and the visible fields as the first message, the visible task as `task`', async () => {
    const input = defaultGraphInput({ id: 'q9', goal: 'How many singers?', context: 'CREATE TABLE singer(name, age);', db_id: 'concert_singer', tables: ['singer'] });
    assert.deepEqual(input.task, { id: 'q9', goal: 'How many singers?', context: 'CREATE TABLE singer(name, age);', db_id: 'concert_singer', tables: ['singer'] });
    const [message] = input.messages as BaseMessage[];
    assert.equal(message!.text, 'How many singers?\n\nContext:\nCREATE TABLE singer(name, age);\n\ndb_id: concert_singer\ntables: ["singer"]');
    assert.equal((defaultGraphInput({ id: 'x', goal: 'Just this?', context: '' }).messages as BaseMessage[])[0]!.text, 'Just this?');
  });

  it('reads the fallback prompts a module exports, and rejects a prompts export of the wrong shape', async () => {
    const good = write('prompts.ts', "import { StateGraph, MessagesAnnotation, START } from '@langchain/langgraph';\nexport const prompts = { Writer: 'Write.' };\nexport default new StateGraph(MessagesAnnotation).addNode('A', () => ({})).addEdge(START, 'A').compile();\n");
    assert.deepEqual((await loadUserGraph(good, 'default', ctxWith(() => new ScriptedChatModel(() => '')))).prompts, { Writer: 'Write.' });
    const bad = write('badprompts.ts', "import { StateGraph, MessagesAnnotation, START } from '@langchain/langgraph';\nexport const prompts = { Writer: 3 };\nexport default new StateGraph(MessagesAnnotation).addNode('A', () => ({})).addEdge(START, 'A').compile();\n");
    await assert.rejects(loadUserGraph(bad, 'default', ctxWith(() => new ScriptedChatModel(() => ''))), /export "prompts" of .* must be an object of prompt texts by agent name/);
  });

  it('a factory asking for a model no agent or model is named after says to add agents.<Name>.model', async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rl-usergraph-lab-'));
    try {
      copyFileSync(EXAMPLE, join(ws, 'graph.ts'));
      await initWorkspace(ws, { graph: 'graph.ts' });
      const cfgFile = join(ws, '.rollout-lab', 'lab.json');
      const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as { agents: Record<string, unknown> };
      delete cfg.agents.Critic;
      writeFileSync(cfgFile, JSON.stringify(cfg));
      const lab = await Lab.open({ workspace: ws, env: {} });
      try {
        await assert.rejects(lab.environment([]), (e: unknown) => {
          assert.ok(e instanceof ConfigError);
          assert.match(e.message, /model "Critic" is not defined under "models"; define it or use one of: main, judge — if "Critic" is an agent \(ctx\.model\("Critic"\) in a graph module\), add it under "agents" with its model: agents\.Critic\.model/);
          return true;
        });
      } finally {
        await lab.close();
      }
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });

  it('reports a module that throws while loading', async () => {
    const file = write('throws.ts', "throw new Error('boom at import');\nexport default 1;\n");
    await assert.rejects(loadUserGraph(file, 'default', ctxWith(() => new ScriptedChatModel(() => ''))), (e: unknown) =>
      e instanceof ConfigError && /failed while loading: boom at import/.test(e.message),
    );
  });
});
