import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initWorkspace } from '../../../src/core/lab/init';
import { buildEvaluationReport, reportOptionsFromConfig } from '../../../src/core/analysis/evaluationReport';
import { Lab } from '../../../src/core/lab/lab';
import { runRollouts, type RunResult } from '../../../src/core/rollout/runner';
import { RunWarnings, rolloutFindings, warningSummaryLine, type RunWarning } from '../../../src/core/rollout/runWarnings';
import { Attr, type Attributes, type SpanKind, type SpanRecord } from '../../../src/core/trace/span';
import { startOpenAIStub } from '../../fakes/openaiStub';

const PUBMEDQA = resolve(__dirname, '../../../../shared/data/pubmedqa/ori_pqal.json');

// ---- what one rollout's spans show -----------------------------------------

let spanSeq = 0;
function span(traceId: string, kind: SpanKind, name: string, attributes: Attributes, extra: Partial<SpanRecord> = {}): SpanRecord {
  spanSeq++;
  return {
    traceId,
    spanId: spanSeq.toString(16).padStart(16, '0'),
    parentSpanId: kind === 'rollout' ? null : 'f'.repeat(16),
    name,
    kind,
    startTime: spanSeq,
    endTime: spanSeq + 1,
    status: 'ok',
    attributes,
    ...extra,
  };
}

function llm(traceId: string, agent: string, attrs: Attributes): SpanRecord {
  return span(traceId, 'llm', 'chat qwen2.5:7b', {
    [Attr.agentName]: agent,
    [Attr.logicalModel]: 'senior',
    [Attr.requestModel]: 'qwen2.5:7b',
    [Attr.serverAddress]: 'http://127.0.0.1:8080/v1',
    ...attrs,
  });
}

/** A rollout's spans with the given problems: prompts cut, answers cut, a failed custom reward, turns over the limit. */
function rollout(id: string, opts: { promptsCut?: string[]; answersCut?: string[]; rewardError?: string; turns?: number; limit?: number }): SpanRecord[] {
  const spans: SpanRecord[] = [llm(id, 'Supervisor', { [Attr.inputTokens]: 900 })];
  for (const agent of opts.promptsCut ?? []) {
    spans.push(llm(id, agent, { [Attr.promptTruncated]: true, [Attr.promptEstimatedTokens]: 6120, [Attr.inputTokens]: 4096 }));
  }
  for (const agent of opts.answersCut ?? []) {
    spans.push(llm(id, agent, { [Attr.truncated]: true, [Attr.requestMaxTokens]: 256, [Attr.outputTokens]: 256 }));
  }
  const root: Attributes = { [Attr.turn]: opts.turns ?? 6, [Attr.turnLimit]: opts.limit ?? 15 };
  if (opts.rewardError) {
    spans.push(
      span(id, 'reward', 'custom', { [Attr.rewardKind]: 'custom', [Attr.errorType]: 'custom_reward_failed', [Attr.rewardValue]: 0, 'rollout_lab.reward.module': 'rewards/score.ts' }, {
        status: 'error',
        statusMessage: opts.rewardError,
      }),
    );
    root['rollout_lab.reward.error'] = `${opts.rewardError} (rewards/score.ts:3:9)`;
  }
  if ((opts.turns ?? 0) > (opts.limit ?? 15)) root[Attr.turnLimitExceeded] = true;
  spans.push(span(id, 'rollout', 'rollout', root));
  return spans;
}

test('a rollout shows each problem once, with who, the sizes or the error, and the fix', () => {
  const findings = rolloutFindings(rollout('r1', { promptsCut: ['HypothesisRefiner', 'ProtocolDesigner'], answersCut: ['PeerReviewer'], rewardError: 'reward() threw: boom', turns: 18, limit: 15 }));
  const byKind = new Map(findings.map((f) => [f.kind, f]));
  assert.deepEqual([...byKind.keys()], ['prompt_truncated', 'output_truncated', 'custom_reward_failed', 'turn_limit_exceeded']);

  const prompt = byKind.get('prompt_truncated')!;
  assert.equal(prompt.occurrences, 2);
  assert.deepEqual(prompt.subjects, ['HypothesisRefiner', 'ProtocolDesigner']);
  assert.match(prompt.message, /HypothesisRefiner \(model senior = qwen2\.5:7b at http:\/\/127\.0\.0\.1:8080\/v1\)/);
  assert.match(prompt.message, /6120 tokens sent, 4096 read/);
  for (const fix of ['-c', '-np', 'num_ctx', '--max-model-len']) assert.ok(prompt.message.includes(fix), `the fix names ${fix}`);

  const answer = byKind.get('output_truncated')!;
  assert.match(answer.message, /PeerReviewer .* cut at max_tokens \(256 tokens, max_tokens 256\) — raise models\.senior\.maxTokens/);
  // The judge's limit is its own key, not its model's.
  const judgeCut = rolloutFindings([llm('r0', 'Judge', { [Attr.truncated]: true, [Attr.requestMaxTokens]: 512, [Attr.maxTokensSetting]: 'reward.judge.maxTokens' })]);
  assert.match(judgeCut.find((f) => f.kind === 'output_truncated')!.message, /— raise reward\.judge\.maxTokens in/);

  const reward = byKind.get('custom_reward_failed')!;
  assert.match(reward.message, /rewards\/score\.ts failed: reward\(\) threw: boom \(rewards\/score\.ts:3:9\)/);
  assert.match(reward.message, /customFailurePenalty \(0\)/);

  assert.match(byKind.get('turn_limit_exceeded')!.message, /18 turns, over runner\.maxTurns \(15\) — end the graph at ctx\.maxTurns/);
  for (const f of findings) assert.doesNotMatch(f.message, /\n/, 'one line');

  assert.deepEqual(rolloutFindings(rollout('r2', { turns: 15, limit: 15 })), [], 'a clean rollout, at the limit but not over it, shows nothing');
});

test('a run says each kind once, when it first happens, and totals every rollout it hit', () => {
  const run = new RunWarnings();
  const first: RunWarning[][] = [
    run.add('r1', rollout('r1', {})),
    run.add('r2', rollout('r2', { rewardError: 'boom' })),
    run.add('r3', rollout('r3', { rewardError: 'boom', promptsCut: ['Supervisor'] })),
    run.add('r4', rollout('r4', { rewardError: 'boom', promptsCut: ['Supervisor', 'PrincipalInvestigator'] })),
  ];
  assert.deepEqual(first.map((ws) => ws.map((w) => w.kind)), [[], ['custom_reward_failed'], ['prompt_truncated'], []]);
  assert.equal(first[1]![0]!.rollouts, 1, 'reported as it first happened');
  assert.equal(first[1]![0]!.firstRolloutId, 'r2');

  const totals = run.list();
  assert.deepEqual(totals.map((w) => [w.kind, w.rollouts, w.occurrences]), [
    ['custom_reward_failed', 3, 3],
    ['prompt_truncated', 2, 3],
  ]);
  assert.deepEqual(totals[1]!.subjects, ['Supervisor', 'PrincipalInvestigator']);
  assert.equal(first[2]![0]!.subjects.length, 1, 'what was reported earlier is not changed by later rollouts');
  const line = warningSummaryLine(totals[1]!, 4);
  assert.match(line, /^prompts cut by the server in 2 of 4 rollouts \(3 model calls\); agents: Supervisor, PrincipalInvestigator; first \(rollout r3\): the server cut/);
});

test('answers cut at max_tokens under two settings are two warnings, each naming its own agent and setting', () => {
  const spans = [
    llm('r1', 'PeerReviewer', { [Attr.truncated]: true, [Attr.requestMaxTokens]: 256 }),
    llm('r1', 'PeerReviewer', { [Attr.truncated]: true, [Attr.requestMaxTokens]: 256 }),
    llm('r1', 'Judge', { [Attr.truncated]: true, [Attr.requestMaxTokens]: 512, [Attr.maxTokensSetting]: 'reward.judge.maxTokens' }),
  ];
  const run = new RunWarnings();
  const told = run.add('r1', spans);
  assert.deepEqual(
    told.map((w) => [w.kind, w.subjects, w.occurrences]),
    [
      ['output_truncated', ['PeerReviewer'], 2],
      ['output_truncated', ['Judge'], 1],
    ],
  );
  assert.match(told[0]!.message, /answer of PeerReviewer .* — raise models\.senior\.maxTokens in/);
  assert.match(told[1]!.message, /answer of Judge .* — raise reward\.judge\.maxTokens in/);
  assert.doesNotMatch(told[1]!.message, /models\.senior/);
  // The same agent cut again later is counted on its own warning, not told again.
  assert.deepEqual(run.add('r2', [llm('r2', 'Judge', { [Attr.truncated]: true, [Attr.maxTokensSetting]: 'reward.judge.maxTokens' })]), []);
  assert.deepEqual(run.list().map((w) => [w.subjects[0], w.rollouts]), [['PeerReviewer', 1], ['Judge', 2]]);
});

test('model calls that needed retries are one warning: who, how often and why the first was retried', () => {
  const run = new RunWarnings();
  const told = run.add('r1', [llm('r1', 'Drafter', { [Attr.retries]: 1, [Attr.retryReasons]: ['broken response body: the 200 answer was cut off or is not JSON (Unterminated string in JSON at position 150)'] })]);
  assert.equal(told.length, 1);
  assert.equal(told[0]!.kind, 'model_calls_retried');
  assert.match(told[0]!.message, /^the call of Drafter \(model senior = qwen2\.5:7b at http:\/\/127\.0\.0\.1:8080\/v1\) was retried 1 time \(broken response body: .*Unterminated string.*\) — retries absorbed it/);
  run.add('r2', [llm('r2', 'Critic', { [Attr.retries]: 2 })]);
  assert.match(warningSummaryLine(run.list()[0]!, 2), /^model calls retried in 2 of 2 rollouts \(2 model calls\); agents: Drafter, Critic; first \(rollout r1\)/);
});

// ---- through the runner --------------------------------------------------

/** A workspace on the PubMedQA set whose lab.json gets `patch` and the given files. */
async function workspace(patch: (cfg: Record<string, any>) => void, files: Record<string, string>): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rl-warnings-'));
  await initWorkspace(dir, { dataset: PUBMEDQA });
  const cfgFile = join(dir, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, any>;
  patch(cfg);
  writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

async function runIn(dir: string, limit: number): Promise<{ lab: Lab; result: RunResult; told: RunWarning[] }> {
  const lab = await Lab.open({ workspace: dir, env: {} });
  const ds = await lab.loadDataset();
  const told: RunWarning[] = [];
  const result = await runRollouts(await lab.environment(ds.tasks), {
    tasks: lab.selectTasks(ds, { split: 'train', limit, seed: 4 }),
    samples: 1,
    concurrency: 2,
    params: { command: 'run' },
    seed: 4,
    onWarning: (w) => told.push(w),
  });
  return { lab, result, told };
}

const THROWING_REWARD = `export default function reward({ task }) {\n  throw new Error('no score for ' + task.id);\n}\n`;

test('a custom reward that throws on every rollout is told once, with its error, and counted on each', async () => {
  const dir = await workspace((cfg) => (cfg.reward = { ...cfg.reward, module: 'reward.ts' }), { 'reward.ts': THROWING_REWARD });
  const { lab, result, told } = await runIn(dir, 4);
  try {
    assert.equal(result.rollouts.length, 4);
    for (const r of result.rollouts) assert.equal(r.finalReward, 0, 'the penalty, which alone says nothing');
    assert.deepEqual(told.map((w) => w.kind), ['custom_reward_failed']);
    assert.match(told[0]!.message, /reward\.ts failed: .*no score for /);
    assert.deepEqual(result.warnings.map((w) => [w.kind, w.rollouts]), [['custom_reward_failed', 4]]);
    assert.ok(result.rollouts.some((r) => r.id === result.warnings[0]!.firstRolloutId));
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A module graph that takes five turns whatever ctx.maxTurns says. */
const STUBBORN_GRAPH = `import { Annotation, END, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
});

export default function createGraph() {
  return new StateGraph(State)
    .addNode('step', async (s) => ({ turns: 1, final_output: 'Protocol after ' + (s.turns + 1) + ' steps: measure, compare, report.' }))
    .addEdge(START, 'step')
    .addConditionalEdges('step', (s) => (s.turns >= 5 ? END : 'step'))
    .compile();
}
`;

test('a graph that runs past runner.maxTurns is recorded on its rollouts, told once, and lands in the report under max turns', async () => {
  const dir = await workspace(
    (cfg) => {
      cfg.graph = { kind: 'module', module: 'graph.ts' };
      cfg.runner = { ...cfg.runner, maxTurns: 3 };
    },
    { 'graph.ts': STUBBORN_GRAPH },
  );
  const { lab, result, told } = await runIn(dir, 3);
  try {
    assert.equal(result.rollouts.length, 3);
    for (const r of result.rollouts) {
      assert.equal(r.turns, 5);
      const root = lab.store.getSpans(r.id).find((s) => s.kind === 'rollout')!;
      assert.equal(root.attributes[Attr.turnLimit], 3);
      assert.equal(root.attributes[Attr.turnLimitExceeded], true);
    }
    assert.deepEqual(told.map((w) => w.kind), ['turn_limit_exceeded']);
    assert.match(told[0]!.message, /5 turns, over runner\.maxTurns \(3\)/);
    assert.deepEqual(result.warnings.map((w) => [w.kind, w.rollouts]), [['turn_limit_exceeded', 3]]);
    const report = buildEvaluationReport(lab.store, reportOptionsFromConfig(lab.loaded.config, result.runId));
    const maxTurns = report.failures.categories.find((c) => c.kind === 'max_turns');
    assert.equal(maxTurns?.rollouts, 3);
  } finally {
    await lab.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** One agent that asks its model about the task and keeps whatever comes back as the output. */
const ONE_CALL_GRAPH = `import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';

const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  final_output: Annotation({ reducer: (_a, b) => b, default: () => null }),
  turns: Annotation({ reducer: (a, b) => a + b, default: () => 0 }),
});

export default function createGraph(ctx) {
  const model = ctx.model('Writer');
  return new StateGraph(State)
    .addNode('Writer', async (s) => {
      const answer = await model.invoke([['system', ctx.prompt('Writer')], ['human', String(s.messages[0]?.content ?? '')]]);
      return { turns: 1, final_output: String(answer.content) };
    })
    .addEdge(START, 'Writer')
    .addEdge('Writer', END)
    .compile();
}
`;

test('a server that cuts prompts to its slot context and answers at max_tokens: each told once, naming the agent, the model, the sizes and the fix', async () => {
  // llama.cpp with a 64-token slot: every PubMedQA abstract is cut, and silently.
  const stub = await startOpenAIStub({ server: 'llama.cpp', quirks: { contextTokens: 64 }, replies: () => ({ content: 'The evidence supports a cautious yes, with a trial of the drug in older adults to confirm it.' }) });
  const dir = await workspace(
    (cfg) => {
      cfg.graph = { kind: 'module', module: 'graph.ts' };
      cfg.models = { ...cfg.models, writer: { baseUrl: stub.url, model: 'tiny-qwen', maxTokens: 8, maxRetries: 0 } };
      cfg.agents = { ...cfg.agents, Writer: { model: 'writer', promptText: 'Answer the research question in one sentence.' } };
    },
    { 'graph.ts': ONE_CALL_GRAPH },
  );
  try {
    const { lab, result, told } = await runIn(dir, 3);
    try {
      assert.equal(result.rollouts.length, 3);
      const call = lab.store.getSpans(result.rollouts[0]!.id).find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Writer')!;
      assert.deepEqual([call.attributes[Attr.promptTruncated], call.attributes[Attr.truncated]], [true, true], 'the premise: the llm layer flagged both cuts');

      assert.deepEqual(told.map((w) => w.kind).sort(), ['output_truncated', 'prompt_truncated']);
      const prompt = told.find((w) => w.kind === 'prompt_truncated')!;
      assert.match(prompt.message, new RegExp(`cut the prompt of Writer \\(model writer = tiny-qwen at ${stub.url.replace(/[.]/g, '\\.')}\\) to fit its context: at least \\d+ tokens sent, 64 read`));
      assert.match(prompt.message, /llama\.cpp: -c is shared by the -np slots.*Ollama: num_ctx; vLLM: --max-model-len/);
      assert.match(told.find((w) => w.kind === 'output_truncated')!.message, /answer of Writer .* cut at max_tokens \(8 tokens, max_tokens 8\) — raise models\.writer\.maxTokens/);
      assert.deepEqual(result.warnings.map((w) => [w.kind, w.rollouts, w.occurrences, w.subjects]).sort(), [
        ['output_truncated', 3, 3, ['Writer']],
        ['prompt_truncated', 3, 3, ['Writer']],
      ]);
    } finally {
      await lab.close();
    }
  } finally {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
