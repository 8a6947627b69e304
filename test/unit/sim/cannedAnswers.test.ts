import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { initWorkspace } from '../../../src/core/lab/init';
import { ConfigError } from '../../../src/core/errors';
import { AGENT_HEADER } from '../../../src/core/llm/client';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts } from '../../../src/core/rollout/runner';
import { loadCannedAnswers } from '../../../src/core/sim/cannedAnswers';
import { PROMPT_CRITIC_MARKER } from '../../../src/core/train/apo/apoWire';
import { startSimServer, type SimServer } from '../../../src/core/sim/simServer';

type Message = OpenAI.Chat.ChatCompletionMessageParam;

const ANSWERS = [
  { agent: 'SqlWriter', match: 'How many singers', answer: 'SELECT count(*) FROM singer' },
  { agent: 'SqlWriter', match: '/oldest|youngest/i', answer: { content: 'SELECT name FROM singer ORDER BY age DESC' } },
  { agent: 'SqlWriter', match: 'pets', answer: { tool_calls: [{ name: 'run_sql', arguments: { sql: 'SELECT count(*) FROM pets' } }] } },
  { agent: 'SqlWriter', match: 'pets', answer: 'SELECT count(*) FROM pets' },
  { agent: 'Critic', answer: '{"verdict": "APPROVE"}' },
];

const RUN_SQL: OpenAI.Chat.ChatCompletionTool = {
  type: 'function',
  function: { name: 'run_sql', description: 'Run a query.', parameters: { type: 'object', properties: { sql: { type: 'string' } }, required: ['sql'] } },
};

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'rl-canned-'));
}

describe('simulator canned answers (JSONL) over the real OpenAI client', () => {
  let dir: string;
  let sim: SimServer;
  let client: OpenAI;
  const ask = async (agent: string | null, messages: Message[], tools?: OpenAI.Chat.ChatCompletionTool[]) => {
    const headers = agent ? { [AGENT_HEADER]: agent } : undefined;
    return (await client.chat.completions.create({ model: 'sim', messages, ...(tools ? { tools } : {}) }, { headers })).choices[0]!;
  };
  before(async () => {
    dir = tempDir();
    writeFileSync(join(dir, 'answers.jsonl'), ANSWERS.map((r) => JSON.stringify(r)).join('\n') + '\n');
    const answers = await loadCannedAnswers(dir, { answers: 'answers.jsonl' });
    assert.deepEqual([...answers!.agents!].sort(), ['Critic', 'SqlWriter']);
    sim = await startSimServer({ seed: 1, answers });
    client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
  });
  after(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers the agent named in the header with the first row whose substring or /regex/ fits the last user message', async () => {
    const system: Message = { role: 'system', content: 'You write SQLite queries.' };
    const singers = await ask('SqlWriter', [system, { role: 'user', content: 'How many singers do we have?' }]);
    assert.equal(singers.message.content, 'SELECT count(*) FROM singer');
    const oldest = await ask('SqlWriter', [system, { role: 'user', content: 'List the OLDEST singer.' }]);
    assert.equal(oldest.message.content, 'SELECT name FROM singer ORDER BY age DESC');
    assert.equal(sim.requests.at(-1)!.agent, 'SqlWriter');
  });

  it('reads the agent from the [agent: X] role marker when there is no header', async () => {
    const critic = await ask(null, [{ role: 'system', content: '[agent: Critic] Judge the query.' }, { role: 'user', content: 'SELECT 1' }]);
    assert.equal(critic.message.content, '{"verdict": "APPROVE"}');
  });

  it('gives a tool call once per turn, then the next fitting row once the tool result is in', async () => {
    const user: Message = { role: 'user', content: 'How many pets are there?' };
    const first = await ask('SqlWriter', [user], [RUN_SQL]);
    assert.equal(first.finish_reason, 'tool_calls');
    const call = first.message.tool_calls![0]! as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
    assert.equal(call.function.name, 'run_sql');
    assert.deepEqual(JSON.parse(call.function.arguments), { sql: 'SELECT count(*) FROM pets' });
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    const second = await ask('SqlWriter', [user, first.message as Message, { role: 'tool', tool_call_id: call.id, content: '[[3]]' }], [RUN_SQL]);
    assert.equal(second.message.content, 'SELECT count(*) FROM pets');
  });

  it('leaves requests no row fits to the generic answer', async () => {
    const other = await ask('SqlWriter', [{ role: 'user', content: 'Which stadium is the largest?' }]);
    assert.ok(other.message.content && !/SELECT/.test(other.message.content), other.message.content ?? '');
    const stranger = await ask('Planner', [{ role: 'user', content: 'How many singers do we have?' }]);
    assert.notEqual(stranger.message.content, 'SELECT count(*) FROM singer', 'rows are per agent');
  });
});

describe('a canned row for every agent', () => {
  it("answers the graph's agents but not the lab's judge or prompt optimiser, unless a row names the judge", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'answers.jsonl'), `${JSON.stringify({ answer: 'SELECT 1' })}\n`);
    const sim = await startSimServer({ answers: await loadCannedAnswers(dir, { answers: 'answers.jsonl' }) });
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
      const ask = async (agent: string, messages: Message[]): Promise<string> =>
        (await client.chat.completions.create({ model: 'sim', messages }, { headers: { 'x-rollout-lab-agent': agent } })).choices[0]!.message.content ?? '';
      assert.equal(await ask('SqlWriter', [{ role: 'user', content: 'How many rows?' }]), 'SELECT 1');
      const judge = await ask('Judge', [{ role: 'system', content: 'Score it.' }, { role: 'user', content: 'Criteria: quality. Reply with JSON keys "quality", "rationale".' }]);
      assert.notEqual(judge, 'SELECT 1');
      const critic = await ask('PromptCritic', [{ role: 'system', content: `${PROMPT_CRITIC_MARKER} Critique.` }, { role: 'user', content: 'Prompt:\n```\nBe brief.\n```' }]);
      assert.notEqual(critic, 'SELECT 1');
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('simulator canned answers (module)', () => {
  let dir: string;
  before(() => {
    dir = tempDir();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('asks the module first (async, with the agent, plain-text messages and tools), then the file, then the generic answer', async () => {
    writeFileSync(
      join(dir, 'sim.ts'),
      [
        "type Request = { agent: string | null; messages: Array<{ role: string; content: string }>; tools: Array<{ name: string }> };",
        'export default async function answer({ agent, messages, tools }: Request) {',
        "  if (agent !== 'SqlWriter') return undefined;",
        "  const last = messages[messages.length - 1]!;",
        "  if (last.role === 'tool') return `SELECT ${last.content}`;",
        "  if (tools.some((t) => t.name === 'run_sql')) return { tool_calls: [{ name: 'run_sql', arguments: '{\"sql\":\"SELECT 1\"}' }] };",
        "  return last.content.includes('skip') ? undefined : 'SELECT 42';",
        '}',
      ].join('\n'),
    );
    writeFileSync(join(dir, 'answers.jsonl'), JSON.stringify({ agent: 'SqlWriter', answer: 'from the file' }) + '\n');
    const answers = await loadCannedAnswers(dir, { module: 'sim.ts', answers: 'answers.jsonl' });
    assert.equal(answers!.agents, null, 'a module may answer any agent');
    const sim = await startSimServer({ answers });
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0, defaultHeaders: { [AGENT_HEADER]: 'SqlWriter' } });
      const text = async (messages: Message[], tools?: OpenAI.Chat.ChatCompletionTool[]) =>
        (await client.chat.completions.create({ model: 'sim', messages, ...(tools ? { tools } : {}) })).choices[0]!.message;
      assert.equal((await text([{ role: 'user', content: 'q' }])).content, 'SELECT 42');
      assert.equal((await text([{ role: 'user', content: 'skip this one' }])).content, 'from the file');
      const call = (await text([{ role: 'user', content: 'q' }], [RUN_SQL])).tool_calls![0] as OpenAI.Chat.ChatCompletionMessageFunctionToolCall;
      assert.equal(call.function.arguments, '{"sql":"SELECT 1"}');
      const after = await text([{ role: 'user', content: 'q' }, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '7' }], [RUN_SQL]);
      assert.equal(after.content, 'SELECT 7');
      // Streaming goes through the same answer.
      const stream = await client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'q' }], stream: true });
      let streamed = '';
      for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
      assert.equal(streamed, 'SELECT 42');
    } finally {
      await sim.close();
    }
  });

  it('a module answer of the wrong shape fails the request at once (HTTP 400, not retried) with a message naming the module', async () => {
    writeFileSync(join(dir, 'bad.js'), 'module.exports = { answer: () => ({ text: "hi" }) };\n');
    const sim = await startSimServer({ answers: await loadCannedAnswers(dir, { module: 'bad.js' }) });
    try {
      const client = new OpenAI({ baseURL: sim.url, apiKey: 'not-needed', maxRetries: 0 });
      await assert.rejects(client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'q' }] }), (e: unknown) => {
        assert.ok(e instanceof OpenAI.APIError && e.status === 400);
        assert.match(e.message, /simulator answers module .*bad\.js returned an answer of the wrong shape .*return a string, \{ content\?, tool_calls\? \} or undefined/);
        return true;
      });
    } finally {
      await sim.close();
    }
  });

  it('bad answer files and modules are config errors that say what to fix', async () => {
    const configError = async (p: Promise<unknown>, re: RegExp) =>
      assert.rejects(p, (e: unknown) => e instanceof ConfigError && !e.message.includes('\n') && re.test(e.message));
    writeFileSync(join(dir, 'noanswer.jsonl'), '{"agent":"A","answer":"x"}\n{"agent":"A","reply":"x"}\n');
    await configError(loadCannedAnswers(dir, { answers: 'noanswer.jsonl' }), /noanswer\.jsonl line 2: .*— each line is \{"agent": "Name", "match"/);
    writeFileSync(join(dir, 'regex.jsonl'), '{"agent":"A","match":"/([a-z/","answer":"x"}\n');
    await configError(loadCannedAnswers(dir, { answers: 'regex.jsonl' }), /regex\.jsonl line 1: "match" \/\(\[a-z\/ is not a valid regular expression/);
    writeFileSync(join(dir, 'empty-answer.jsonl'), '{"agent":"A","answer":{}}\n');
    await configError(loadCannedAnswers(dir, { answers: 'empty-answer.jsonl' }), /give "content" \(text\) or "tool_calls"/);
    await configError(loadCannedAnswers(dir, { answers: 'nope.jsonl' }), /nope\.jsonl does not exist — create it .*"simulator\.answers"/);
    writeFileSync(join(dir, 'nofn.ts'), 'export const x = 1;\n');
    await configError(loadCannedAnswers(dir, { module: 'nofn.ts' }), /must export a function, as default or "answer".*\(it exports: x\)/);
    await configError(loadCannedAnswers(dir, { module: 'nope.ts' }), /nope\.ts does not exist — create it or fix "simulator\.module"/);
  });
});

describe('a module graph on the simulator', () => {
  const GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { SystemMessage } from '@langchain/core/messages';

const State = Annotation.Root({ ...MessagesAnnotation.spec, final_output: Annotation({ reducer: (_a, b) => b, default: () => null }) });

export default function createGraph(ctx) {
  const writer = ctx.model('SqlWriter');
  return new StateGraph(State)
    .addNode('SqlWriter', async (s) => {
      // No role marker: the simulator learns the agent from the lab's header alone.
      const reply = await writer.invoke([new SystemMessage(ctx.prompt('SqlWriter')), ...s.messages]);
      return { messages: [reply], final_output: reply.text };
    })
    .addEdge(START, 'SqlWriter')
    .addEdge('SqlWriter', END)
    .compile();
}
`;
  const REWARD = `export default ({ task, outcome }) => (outcome.finalOutput === task.expected ? 1 : 0);\n`;

  async function workspace(simulator?: Record<string, string>): Promise<string> {
    const dir = tempDir();
    const rows = [
      { n: 0, question: 'How many singers do we have?', gold: 'SELECT count(*) FROM singer' },
      { n: 1, question: 'List the oldest singer.', gold: 'SELECT name FROM singer ORDER BY age DESC' },
    ];
    writeFileSync(join(dir, 'questions.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n'));
    await initWorkspace(dir);
    const cfgFile = join(dir, '.rollout-lab', 'lab.json');
    const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
    cfg.graph = { kind: 'module', module: 'graph.ts' };
    cfg.agents = { SqlWriter: { model: 'junior', promptText: 'Write one SQLite query.' }, Critic: { model: 'strong', promptText: 'Check it.' } };
    cfg.datasets = { q: { path: 'questions.jsonl', fields: { id: 'n', goal: 'question', expected: 'gold' } } };
    cfg.reward = { ...cfg.reward, module: 'reward.js' };
    if (simulator) cfg.simulator = simulator;
    writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
    writeFileSync(join(dir, 'graph.ts'), GRAPH);
    writeFileSync(join(dir, 'reward.js'), REWARD);
    return dir;
  }

  it('says once that the agents get generic answers, and how to give canned ones', async () => {
    const dir = await workspace();
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      const notice = lab.simulationNotice()!;
      assert.ok(!notice.includes('\n'), 'one line');
      assert.match(notice, /^SIMULATED: .* The graph module's agents SqlWriter, Critic get generic simulated answers that know nothing of their roles, so expect low rewards; give canned answers per agent with "simulator": \{"answers": "sim\/answers\.jsonl"\}/);
    } finally {
      await lab.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with canned answers for its agents, the graph runs offline and scores', async () => {
    const dir = await workspace({ answers: 'sim/answers.jsonl' });
    mkdirSync(join(dir, 'sim'));
    writeFileSync(join(dir, 'sim', 'answers.jsonl'), ANSWERS.map((r) => JSON.stringify(r)).join('\n'));
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      assert.doesNotMatch(lab.simulationNotice()!, /generic simulated answers/);
      const ds = await lab.loadDataset();
      const r = await runRollouts(await lab.environment(ds.tasks), { tasks: lab.selectTasks(ds, { split: 'all' }), samples: 1, concurrency: 1, params: {} });
      assert.deepEqual(r.rollouts.map((x) => [x.taskId, x.status, x.finalReward]).sort(), [['0', 'succeeded', 1], ['1', 'succeeded', 1]]);
    } finally {
      await lab.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names only the agents the answers file leaves out', async () => {
    const dir = await workspace({ answers: 'answers.jsonl' });
    writeFileSync(join(dir, 'answers.jsonl'), JSON.stringify(ANSWERS[0]) + '\n');
    const lab = await Lab.open({ workspace: dir, env: {} });
    try {
      assert.match(lab.simulationNotice()!, /The graph module's agent Critic gets generic simulated answers that know nothing of its role/);
    } finally {
      await lab.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
