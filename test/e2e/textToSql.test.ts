import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadCustomReward, type CustomReward, type CustomRewardResult } from '../../src/core/reward/customReward';
import { TraceStore } from '../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import type { RolloutRecord } from '../../src/core/store/types';
import { startOpenAIStub, tokenId, type StubReply, type StubRequest } from '../fakes/openaiStub';
import { REPO, cli, cliAsync, editLab, json, tempWorkspace, type RunDoc } from './cliHelpers';

/*
 * The text-to-SQL example run as a user would: copied out of the repository
 * (so Node cannot find the lab's own sql.js by walking up), with its own
 * node_modules/sql.js, through init → run → eval → report → export →
 * preflight → pipeline on the simulated endpoint with its canned answers;
 * then against an OpenAI-compatible stub with llama.cpp's quirks.
 */

const EXAMPLE = join(REPO, 'examples/text-to-sql');

interface Question {
  db_id: string;
  question: string;
  query: string;
}
const QUESTIONS = JSON.parse(readFileSync(join(EXAMPLE, 'data/questions.json'), 'utf8')) as Question[];
const byQuestion = new Map(QUESTIONS.map((q) => [q.question, q]));

/** The example in a temp folder, as it is in the repository. */
function exampleWorkspace(): string {
  const ws = tempWorkspace();
  cpSync(EXAMPLE, ws, { recursive: true, filter: (src) => !/[\\/](node_modules|\.rollout-lab)$/.test(src) });
  return ws;
}

/** Its own sql.js, copied from the lab's: stands in for `npm install` in the folder, offline. The zips are release archives nothing loads. */
function installSqlJs(ws: string): void {
  cpSync(join(REPO, 'node_modules/sql.js'), join(ws, 'node_modules/sql.js'), { recursive: true, filter: (src) => !src.endsWith('.zip') });
}


/** The lab.json edits the example's README gives. */
function configureExample(cfg: Record<string, any>): void {
  cfg.datasets.questions.fields = { goal: 'question', expected: 'query', visible: ['db_id'] };
  cfg.agents.SqlWriter.trainable = true;
  cfg.agents.Rewriter.trainable = true;
  cfg.reward.module = 'reward.ts';
  cfg.simulator = { answers: 'sim/answers.jsonl' };
  cfg.air = [
    { name: 'sql_runs', when: 'tool.ok', tools: ['run_sql'], reward: 0.05 },
    { name: 'sql_fails', when: 'tool.error', tools: ['run_sql'], reward: -0.1 },
    { name: 'no_query', when: 'output.invalid', agents: ['SqlWriter', 'Rewriter'], reward: -0.1 },
    { name: 'verdict_parsed', when: 'output.valid', agents: ['Checker'], reward: 0.02 },
  ];
}

/** Initialises the example's lab for its graph and applies the README's edits. */
function initExample(ws: string): void {
  const init = cli(['init', '--workspace', ws, '--graph', 'graph.ts', '--dataset', 'data/questions.json']);
  assert.equal(init.code, 0, init.stderr);
  editLab(ws, configureExample);
}

interface StoredRollout {
  record: RolloutRecord;
  spans: SpanRecord[];
  question: Question;
}

async function storedRollouts(ws: string, runId: string): Promise<StoredRollout[]> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({ runId }).rollouts.map((record) => {
      const spans = store.getSpans(record.id).sort((a, b) => a.startTime - b.startTime);
      const goal = spans.find((s) => s.kind === 'rollout')!.attributes['rollout_lab.task.goal'] as string;
      const question = byQuestion.get(goal);
      assert.ok(question, `rollout ${record.id} ran a task that is not in the dataset: ${goal}`);
      return { record, spans, question };
    });
  } finally {
    await store.close();
  }
}

const llmSpans = (r: StoredRollout, agent?: string): SpanRecord[] =>
  r.spans.filter((s) => s.kind === 'llm' && (agent === undefined || s.attributes[Attr.agentName] === agent));

/** The run_sql calls the model answers of a rollout asked for, with their ids. */
function requestedToolCalls(r: StoredRollout): Array<{ id: string; agent: string }> {
  return llmSpans(r).flatMap((s) =>
    (JSON.parse(String(s.attributes[Attr.outputMessages])) as Array<{ tool_calls?: Array<{ id: string; name: string }> }>).flatMap((m) =>
      (m.tool_calls ?? []).map((c) => {
        assert.equal(c.name, 'run_sql');
        return { id: c.id, agent: String(s.attributes[Attr.agentName]) };
      }),
    ),
  );
}

async function scoreWith(reward: CustomReward, q: Question, finalOutput: string | null): Promise<CustomRewardResult> {
  return reward.evaluate({
    task: { id: 'check', goal: q.question, context: '', expected: q.query, expectedDecision: null, meta: { db_id: q.db_id, question: q.question } },
    outcome: { finalOutput, decision: null, turns: 1, failures: [] },
    spans: [],
    judge: async () => assert.fail('the execution reward never calls the judge'),
  });
}

interface RlRecord {
  group: string;
  agent: string;
  call: number;
  completion: { text: string; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> };
  air: number;
}

const readJsonl = <T>(file: string): T[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);

test('the execution reward: every gold query runs on sql.js and matches itself; rows compare as a multiset unless the gold query orders them', async () => {
  const reward = await loadCustomReward(join(EXAMPLE, 'reward.ts'));
  assert.equal(QUESTIONS.length, 36);
  for (const q of QUESTIONS) {
    // The leak check below looks for gold queries verbatim inside JSON text.
    assert.doesNotMatch(q.query, /["\\]/);
    const r = await scoreWith(reward, q, q.query);
    assert.ok(r.ok, `${q.question}: ${r.ok ? '' : r.error}`);
    assert.deepEqual([r.reward, r.breakdown], [1, { executes: 1, match: 1 }], q.question);
    const [, rows] = /^(\d+) rows/.exec(r.info ?? '') ?? [];
    assert.ok(Number(rows) > 0, `the gold query of "${q.question}" returns no rows`);
  }
  const crime = byQuestion.get('List the titles of all crime books.')!;
  const score = async (q: Question, sql: string | null): Promise<[number, Record<string, number>]> => {
    const r = await scoreWith(reward, q, sql);
    assert.ok(r.ok);
    return [r.reward, r.breakdown];
  };
  assert.deepEqual(await score(crime, "SELECT title FROM book WHERE genre = 'crime' ORDER BY title DESC"), [1, { executes: 1, match: 1 }]);
  assert.deepEqual(await score(crime, "SELECT title, year FROM book WHERE genre = 'crime'"), [0, { executes: 1, match: 0 }], 'an extra column');
  assert.deepEqual(await score(crime, "SELECT title FROM book WHERE genre = 'crime' UNION ALL SELECT 'Cold Ledger'"), [0, { executes: 1, match: 0 }], 'a duplicate row');
  assert.deepEqual(await score(crime, 'SELECT title FROM books'), [0, { executes: 0, match: 0 }]);
  assert.deepEqual(await score(crime, null), [0, { executes: 0, match: 0 }]);
  const ordered: Question = { db_id: 'library', question: 'Authors from the oldest', query: 'SELECT name FROM author ORDER BY born' };
  assert.deepEqual(await score(ordered, 'SELECT name FROM author ORDER BY born DESC'), [0, { executes: 1, match: 0 }]);
  assert.deepEqual(await score({ ...ordered, query: 'SELECT name FROM author' }, 'SELECT name FROM author ORDER BY born DESC'), [1, { executes: 1, match: 1 }]);
  const science = byQuestion.get('What is the average number of pages of science books?')!;
  assert.deepEqual(await score(science, "SELECT sum(pages) * 1.0 / count(*) FROM book WHERE genre = 'science'"), [1, { executes: 1, match: 1 }]);
  // Every query gets a fresh copy of the database: what a model drops is back for the next one.
  assert.deepEqual(await score(crime, 'DROP TABLE book'), [0, { executes: 1, match: 0 }]);
  assert.deepEqual(await score(crime, crime.query), [1, { executes: 1, match: 1 }]);
  const bad = await scoreWith(reward, { ...crime, db_id: '../library' }, crime.query);
  assert.ok(!bad.ok && /db_id "\.\.\/library" is not a database name/.test(bad.error));
});

test('text-to-SQL on the simulated endpoint: init → run → eval → report → export → preflight → pipeline, with its own sql.js', async () => {
  const ws = exampleWorkspace();
  try {
    // Before `npm install` the graph cannot load, and init says how to fix it.
    const missing = cli(['init', '--workspace', ws, '--graph', 'graph.ts']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /taskDatabase\.ts:\d+:\d+: package "sql\.js" \(imported by taskDatabase\.ts\) is not installed where the module can find it; run `npm install sql\.js` in /);
    assert.ok(!existsSync(join(ws, '.rollout-lab', 'lab.json')));
    installSqlJs(ws);

    const init = cli(['init', '--workspace', ws, '--graph', 'graph.ts', '--dataset', 'data/questions.json']);
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.stdout, /agents \(named by the factory's ctx\.model\(\) \/ ctx\.prompt\(\) calls\): SqlWriter, Rewriter, Checker/);
    assert.match(readFileSync(join(ws, '.rollout-lab/prompts/SqlWriter.md'), 'utf8'), /^You write one SQLite query that answers a question/);
    assert.match(readFileSync(join(ws, '.rollout-lab/prompts/Checker.md'), 'utf8'), /"verdict": "CORRECT" or "INCORRECT"/);
    editLab(ws, configureExample);

    const run = cli(['run', '--workspace', ws, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const doc = json<RunDoc & { metrics: { shape: Record<string, boolean>; decisions: Array<{ decision: string | null; count: number }> } }>(run);
    assert.deepEqual([doc.simulated, doc.rollouts, doc.succeeded], [true, 29, 29]);
    assert.deepEqual(doc.metrics.shape, { judge: false, alignment: false, customReward: true });
    assert.equal(doc.metrics.decisionAlignment, null);
    assert.deepEqual(doc.metrics.judge, {});
    assert.doesNotMatch(run.stderr, /generic simulated answers/, 'the canned answers cover every agent');

    const rollouts = await storedRollouts(ws, doc.runId);
    assert.equal(rollouts.length, 29);
    // The rewards are what the execution reward gives the canned answers' final queries.
    const reward = await loadCustomReward(join(ws, 'reward.ts'));
    for (const r of rollouts) {
      const final = r.spans.find((s) => s.kind === 'rollout')!.attributes[Attr.finalOutput] as string | null;
      const expected = await scoreWith(reward, r.question, final);
      assert.ok(expected.ok);
      assert.deepEqual([r.record.finalReward, r.record.rewardBreakdown], [expected.reward, expected.breakdown], r.question.question);
      assert.ok(!r.spans.some((s) => s.attributes[Attr.agentName] === 'Judge' || s.name === 'judge'), 'the judge never runs');
    }
    const find = (question: string): StoredRollout => rollouts.find((r) => r.question.question === question)!;
    const cancelled = find('How many orders were cancelled?');
    assert.deepEqual([cancelled.record.decision, cancelled.record.finalReward, cancelled.record.turns], ['CORRECT', 1, 5], 'caught by the Checker, fixed by the Rewriter');
    assert.equal(cancelled.spans.find((s) => s.kind === 'rollout')!.attributes[Attr.finalOutput], "SELECT count(*) FROM orders WHERE status = 'cancelled'");
    const missed = find('What is the average number of pages of science books?');
    assert.deepEqual([missed.record.decision, missed.record.finalReward, missed.record.rewardBreakdown], ['CORRECT', 0, { executes: 1, match: 0 }], 'missed by the Checker');
    assert.equal(rollouts.filter((r) => r.record.finalReward === 1).length, 26);

    // No gold query reaches a model unless a model wrote that query first (the Checker sees the writer's query).
    let echoed = 0;
    for (const r of rollouts) {
      const gold = r.question.query;
      let written = '';
      for (const s of llmSpans(r)) {
        const input = String(s.attributes[Attr.inputMessages]);
        if (input.includes(gold)) {
          assert.ok(written.includes(gold), `the gold query of "${gold}" reached ${String(s.attributes[Attr.agentName])} before any model wrote it`);
          echoed++;
        }
        written += String(s.attributes[Attr.outputMessages]);
      }
    }
    assert.ok(echoed > 0, 'some canned answers are the gold query itself, so the check above has seen it');

    // Ids generated for Spider's id-less rows are the same on every load (this run, the eval and the gather below load the file apart).
    const ids = new Map(rollouts.map((r) => [r.question.question, r.record.taskId]));
    for (const id of ids.values()) assert.match(id, /^[0-9a-f]{12}$/);
    assert.equal(new Set(ids.values()).size, 29);

    const evaluation = cli(['eval', '--workspace', ws, '--json']);
    assert.equal(evaluation.code, 0, evaluation.stderr);
    const evalDoc = json<typeof doc>(evaluation);
    assert.deepEqual([evalDoc.rollouts, evalDoc.succeeded, evalDoc.failed], [7, 6, 1], 'one answer is prose, not a query: no final output');
    assert.deepEqual(
      evalDoc.metrics.decisions.map((d) => [d.decision, d.count]).sort(),
      [['CORRECT', 5], ['INCORRECT', 1], [null, 1]].sort(),
    );
    const stuck = (await storedRollouts(ws, evalDoc.runId)).find((r) => r.question.question.startsWith('Which courses have the most credits?'))!;
    assert.deepEqual([stuck.record.decision, stuck.record.turns, stuck.record.finalReward], ['INCORRECT', 15, 0], 'the Rewriter never fixes it: the loop stops at runner.maxTurns');

    const report = cli(['report', '--workspace', ws]);
    assert.equal(report.code, 0, report.stderr);
    assert.doesNotMatch(report.stdout, /Judge|Decision alignment/i);
    assert.match(report.stdout, /## Decisions\n[\s\S]*\| CORRECT \| 5 \|[\s\S]*\| INCORRECT \| 1 \|/);
    assert.match(report.stdout, /\| Reward: executes \| 0\.857 \|/);
    assert.match(report.stdout, /\| Reward: match \| 0\.714 \|/);
    // The execute node runs tools but is no agent: its tool calls count for the writers that asked for them.
    const agentsTable = report.stdout.split('## Agents')[1]!.split('\n## ')[0]!;
    assert.deepEqual([...agentsTable.matchAll(/^\| (\w+) \| \d/gm)].map((m) => m[1]), ['Checker', 'Rewriter', 'SqlWriter']);

    const rl = join(ws, 'rl.jsonl');
    const realOnly = cli(['export', '--workspace', ws, '--format', 'rl', '--out', rl]);
    assert.equal(realOnly.code, 1, 'every rollout is simulated: no rows, an error');
    assert.match(realOnly.stderr, /has 0 rows to train on; dropped: simulated: 29 rollouts answered by the simulated endpoint/);
    assert.equal(existsSync(rl), false);
    const rlDoc = json<{ options: { agents: string[] }; counts: { rollouts: number; records: number } }>(
      cli(['export', '--workspace', ws, '--format', 'rl', '--out', rl, '--include-simulated', '--json']),
    );
    assert.deepEqual(rlDoc.options.agents, ['SqlWriter', 'Rewriter'], 'the agents marked trainable');
    const records = readJsonl<RlRecord>(rl);
    assert.equal(records.length, rlDoc.counts.records);
    assert.equal(
      records.length,
      rollouts.reduce((n, r) => n + llmSpans(r, 'SqlWriter').length + llmSpans(r, 'Rewriter').length, 0),
    );
    // run_sql's AIR rewards go to the writer calls that asked for it, though the `execute` node ran the tool.
    const questionOf = new Map(rollouts.map((r) => [r.record.taskId, r.question.question]));
    const airOf = (question: string, agent: string): number[] =>
      records.filter((x) => questionOf.get(x.group) === question && x.agent === agent).map((x) => x.air);
    assert.deepEqual(airOf('How many books are in the library?', 'SqlWriter'), [0.05, 0]);
    assert.deepEqual(airOf('List the titles of books that have never been borrowed.', 'SqlWriter'), [-0.1, 0], 'no such table: books');
    assert.deepEqual(airOf('How many orders were cancelled?', 'Rewriter'), [0.05, 0]);
    for (const x of records) {
      const asked = x.completion.tool_calls?.length ?? 0;
      assert.equal(x.air !== 0, asked > 0, `${x.agent} call ${x.call}: AIR rewards exactly on the calls that asked for run_sql`);
    }

    const sft = join(ws, 'sft.jsonl');
    const sftReal = cli(['export', '--workspace', ws, '--format', 'sft', '--out', sft]);
    assert.equal(sftReal.code, 1);
    assert.match(sftReal.stderr, /dropped: simulated: 29 rollouts/);
    const sftDoc = json<{ counts: { rollouts: number; records: number } }>(cli(['export', '--workspace', ws, '--format', 'sft', '--out', sft, '--include-simulated', '--json']));
    const good = rollouts.filter((r) => (r.record.finalReward ?? 0) >= 0.7);
    assert.deepEqual(
      [sftDoc.counts.rollouts, sftDoc.counts.records],
      [good.length, good.reduce((n, r) => n + llmSpans(r, 'SqlWriter').length + llmSpans(r, 'Rewriter').length, 0)],
    );
    const conversations = readJsonl<{ messages: Array<{ role: string }> }>(sft);
    assert.ok(conversations.some((c) => c.messages.some((m) => m.role === 'tool')), 'tool results are kept');

    const preflight = cli(['preflight', '--workspace', ws, '--phase', 'sft']);
    assert.equal(preflight.code, 1, 'every rollout is simulated: nothing to train on');
    assert.match(preflight.stdout, /all 29 rollouts \(train split\) are simulated/);
    const withSim = cli(['preflight', '--workspace', ws, '--phase', 'sft', '--include-simulated']);
    assert.equal(withSim.code, 0, withSim.stdout);
    assert.match(withSim.stdout, /ready to run/);
    assert.match(withSim.stdout, /the custom reward reward\.ts scored the 29 rollouts \(mode "replace"\); the judge never ran/);

    const status = cli(['pipeline', 'status', '--workspace', ws]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /No training pipeline is declared/);
    assert.match(status.stdout, /\{ "name": "sft", "kind": "sft", "agents": \["SqlWriter", "Rewriter"\], "model": "main", "minReward": 0\.7 \}/);
    editLab(ws, (cfg) => {
      cfg.training = {
        phases: [
          { name: 'gather', kind: 'gather', limit: 4, samples: 2 },
          { name: 'sft', kind: 'sft', agents: ['SqlWriter', 'Rewriter'], model: 'main', minReward: 0.7, includeSimulated: true },
        ],
      };
    });
    const gather = cli(['pipeline', 'run', 'gather', '--workspace', ws, '--json']);
    assert.equal(gather.code, 0, gather.stderr);
    const phase = json<{ state: string; runId: string; counts: Record<string, number>; note: string }>(gather);
    assert.equal(phase.state, 'done');
    assert.deepEqual([phase.counts.rollouts, phase.counts.tasks, phase.counts.samples], [8, 4, 2]);
    assert.match(phase.note, /SIMULATED endpoint: these rollouts are a demo of the pipeline/);
    for (const r of await storedRollouts(ws, phase.runId)) assert.equal(r.record.taskId, ids.get(r.question.question), r.question.question);

    const dry = cli(['train', '--workspace', ws, '--phase', 'sft', '--target', 'local', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^DRY RUN — nothing is launched\. Job sft-\S+ \(sft\) on local; data: rollouts \d+, records \d+/);
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
});

/** The system prompt the lab sent, which says which agent is calling (a real server gets no agent header). */
function agentOf(req: StubRequest, prompts: Record<string, string>): string {
  const system = String(req.body.messages[0]?.content ?? '');
  const agent = Object.keys(prompts).find((a) => system.startsWith(prompts[a]!.trim()));
  assert.ok(agent, `no agent's prompt opens the request: ${system.slice(0, 80)}`);
  return agent;
}

const toolCall = (sql: string): { name: string; arguments: { sql: string } } => ({ name: 'run_sql', arguments: { sql } });

/**
 * A small model on llama.cpp: the SqlWriter tries queries in two rounds (the
 * server gives every tool call the id ""), then answers a wrong query; the
 * Checker rejects it with feedback longer than its max_tokens; the Rewriter
 * tries one query and answers; the Checker accepts that.
 */
function playAgents(prompts: Record<string, string>): (req: StubRequest) => StubReply {
  return (req) => {
    const messages = req.body.messages as Array<{ role: string; content: string }>;
    const toolResults = messages.filter((m) => m.role === 'tool').length;
    switch (agentOf(req, prompts)) {
      case 'SqlWriter':
        if (toolResults === 0) return { toolCalls: [toolCall("SELECT name FROM sqlite_master WHERE type = 'table'"), toolCall('SELECT * FROM no_such_table')] };
        if (toolResults === 2) return { toolCalls: [toolCall('SELECT count(*) FROM sqlite_master')] };
        return { content: '```sql\nSELECT 1\n```' };
      case 'Rewriter':
        if (toolResults === 0) return { toolCalls: [toolCall('SELECT count(*) FROM sqlite_master')] };
        return { content: '```sql\nSELECT count(*) FROM sqlite_master\n```' };
      default:
        if (/```sql\nSELECT 1\n```/.test(messages[1]!.content)) {
          return { json: { verdict: 'INCORRECT', feedback: `SELECT 1 does not read the database. ${'Read the tables the question names. '.repeat(12)}` } };
        }
        return { json: { verdict: 'CORRECT', feedback: '' } };
    }
  };
}

test('text-to-SQL against an OpenAI-compatible server with llama.cpp quirks: every run_sql call runs, token ids and the structured-output mode are stored, nothing is simulated', async () => {
  const ws = exampleWorkspace();
  installSqlJs(ws);
  const prompts: Record<string, string> = {};
  const stub = await startOpenAIStub({ server: 'llama.cpp', replies: (req) => playAgents(prompts)(req) });
  try {
    initExample(ws);
    for (const agent of ['SqlWriter', 'Checker', 'Rewriter']) prompts[agent] = readFileSync(join(ws, '.rollout-lab/prompts', `${agent}.md`), 'utf8');
    editLab(ws, (cfg) => {
      // Both models: one without an endpoint would start the simulator.
      cfg.models.main = { ...cfg.models.main, baseUrl: stub.url, logprobs: true, tokenIds: true };
      cfg.models.judge = { ...cfg.models.judge, baseUrl: stub.url };
      cfg.agents.Checker.maxTokens = 40;
    });
    const run = await cliAsync(['run', '--workspace', ws, '--limit', '2', '--json']).done;
    assert.equal(run.code, 0, run.stderr);
    const doc = json<RunDoc>(run);
    assert.deepEqual([doc.simulated, doc.rollouts, doc.succeeded], [false, 2, 2]);
    assert.doesNotMatch(run.stderr, /SIMULATED/);

    const rollouts = await storedRollouts(ws, doc.runId);
    for (const r of rollouts) {
      assert.equal(r.spans.find((s) => s.kind === 'rollout')!.attributes[Attr.simulated], false);
      assert.deepEqual([r.record.decision, r.record.turns], ['CORRECT', 7], 'SqlWriter ×3, Checker, Rewriter ×2, Checker');
      // Three writer calls asked for four queries over two rounds; each ran once, under the lab's own unique ids.
      const asked = requestedToolCalls(r);
      const tools = r.spans.filter((s) => s.kind === 'tool');
      assert.deepEqual(asked.map((c) => c.agent), ['SqlWriter', 'SqlWriter', 'SqlWriter', 'Rewriter']);
      assert.deepEqual(tools.map((s) => s.attributes[Attr.toolCallId]).sort(), asked.map((c) => c.id).sort());
      assert.equal(new Set(asked.map((c) => c.id)).size, 4);
      assert.ok(asked.every((c) => /^[A-Za-z0-9]{9}$/.test(c.id)), 'the server\'s empty ids were replaced');
      assert.deepEqual(tools.map((s) => s.status).sort(), ['error', 'ok', 'ok', 'ok']);
      // Each tool span belongs to the agent whose call asked for it, though the execute node ran them all.
      const byId = new Map(asked.map((c) => [c.id, c.agent]));
      for (const t of tools) assert.equal(t.attributes[Attr.agentName], byId.get(String(t.attributes[Attr.toolCallId])));
      assert.deepEqual(r.record.agents.map((a) => [a.agent, a.toolCalls]), [['Checker', 0], ['Rewriter', 1], ['SqlWriter', 3]]);
      assert.deepEqual(llmSpans(r, 'SqlWriter')[0]!.attributes[Attr.toolCallOriginalIds], ['', ''], 'the server\'s own ids are kept on the span');

      for (const s of llmSpans(r)) {
        const ids = s.attributes[Attr.tokenIds] as number[];
        const tokens = s.attributes[Attr.logprobTokens] as string[];
        assert.ok(Array.isArray(ids) && ids.length > 0 && ids.length === tokens.length, 'token ids read from the logprobs');
        assert.deepEqual(ids, tokens.map(tokenId));
      }
      const checks = llmSpans(r, 'Checker');
      for (const s of checks) assert.equal(s.attributes[Attr.structuredOutput], 'json_schema');
      assert.deepEqual(checks.map((s) => s.attributes[Attr.truncated] === true), [true, false], 'finish_reason "length" at the Checker\'s max_tokens');
      const verdicts = r.spans.filter((s) => s.kind === 'node' && s.name === 'Checker').map((s) => JSON.parse(String(s.attributes['rollout_lab.output'])));
      // JSON repair closes the cut string: the verdict is kept, its feedback shortened.
      assert.deepEqual(verdicts.map((v) => v.verdict), ['INCORRECT', 'CORRECT']);
      assert.match(verdicts[0].feedback, /^SELECT 1 does not read the database\. Read the tables/);
      for (const s of llmSpans(r, 'SqlWriter')) assert.equal(s.attributes[Attr.structuredOutput], undefined);
    }
    const checkerRequests = stub.requests.filter((q) => agentOf(q, prompts) === 'Checker');
    assert.ok(checkerRequests.every((q) => q.body.response_format?.type === 'json_schema' && q.body.response_format.json_schema.name === 'verdict' && !q.body.tools));
    assert.ok(stub.requests.every((q) => q.headers['x-rollout-lab-agent'] === undefined), 'the agent header goes to the simulator only');
    // The stub never writes a gold query, so none may appear in anything the lab sent.
    for (const q of stub.requests) {
      const sent = JSON.stringify(q.body);
      for (const gold of QUESTIONS) assert.ok(!sent.includes(gold.query), `request ${q.index} holds a gold query`);
    }

    // The AIR rewards reach the writer calls by the ids the lab gave the calls: +0.05 − 0.1 for the first round, +0.05 for the second.
    const rl = join(ws, 'rl.jsonl');
    const exported = cli(['export', '--workspace', ws, '--format', 'rl', '--out', rl, '--split', 'all']);
    assert.equal(exported.code, 0, exported.stderr);
    const records = readJsonl<RlRecord & { token_ids: number[] | null }>(rl);
    for (const group of new Set(records.map((x) => x.group))) {
      const calls = records.filter((x) => x.group === group).map((x) => [x.agent, Math.round(x.air * 100) / 100]);
      assert.deepEqual(calls, [['SqlWriter', -0.05], ['SqlWriter', 0.05], ['SqlWriter', 0], ['Rewriter', 0.05], ['Rewriter', 0]]);
    }
    assert.ok(records.every((x) => Array.isArray(x.token_ids) && x.token_ids.length > 0));

    // The graph needs db_id among the visible fields, and says so.
    editLab(ws, (cfg) => {
      cfg.datasets.questions.fields.visible = [];
    });
    const blind = await cliAsync(['run', '--workspace', ws, '--limit', '1']).done;
    assert.equal(blind.code, 1);
    assert.match(blind.stderr, /every rollout failed; the first error was: the task has no db_id: declare it visible in \.rollout-lab\/lab\.json \("fields": \{"visible": \["db_id"\]\} under the dataset\)\n$/);
  } finally {
    await stub.close();
    rmSync(ws, { recursive: true, force: true });
  }
});
