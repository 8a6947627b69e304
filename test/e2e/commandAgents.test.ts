import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TraceStore } from '../../src/core/store/traceStore';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import type { RolloutRecord } from '../../src/core/store/types';
import type { ExportManifest } from '../../src/core/train/export/exportData';
import type { TrainResult } from '../../src/core/train/jobs/trainPhase';
import { Lab } from '../../src/core/lab/lab';
import { describeLabGraph } from '../../src/core/lab/graphDescription';
import { startOpenAIStub, type OpenAIStub, type StubReply, type StubRequest } from '../fakes/openaiStub';
import { REPO, cli, cliAsync, json, tempWorkspace, type CliResult, type RunDoc } from './cliHelpers';

/*
 * Agents in other languages, run as a user would: `init --example
 * command-agents`, then `run` with the Python agent (standard library only)
 * and with the Node agent (the real openai package and the real OpenTelemetry
 * SDK with its OTLP/protobuf exporter), against an OpenAI-compatible server
 * with vLLM's quirks (token ids, logprobs). Their model calls come through the
 * recording gateway, their tool spans through the OTLP receiver, and the
 * rollouts get rewards, AIR, a report, training rows and a graph.
 */

const QUEUE_WORDS: Record<string, string[]> = {
  bill: ['refund', 'invoice', 'charge', 'payment', 'price', 'receipt'],
  ship: ['parcel', 'delivery', 'courier', 'tracking', 'package', 'address'],
  tech: ['login', 'crash', 'error', 'password', 'update', 'screen'],
  user: ['username', 'profile', 'signup', 'email', 'settings', 'delete'],
};
const queueOf = (text: string): string | undefined => Object.keys(QUEUE_WORDS).find((q) => QUEUE_WORDS[q]!.some((w) => new RegExp(`: ${w}$`, 'm').test(text)));

/** The model: routes by the ticket's topic word (the Router's system prompt says it routes), else acknowledges. */
function model(req: StubRequest): StubReply {
  const messages = req.body.messages as Array<{ role: string; content: string }>;
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const user = messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
  if (/route support tickets/.test(system)) return { content: queueOf(user) ?? 'unsure' };
  return { content: `Thanks, the ${/^Queue: (\w+)$/m.exec(user)?.[1] ?? 'right'} team has your ticket.` };
}

/** The CLI in its own process, without blocking this one: the stub answers from here. */
const cliRun = (args: string[]): Promise<CliResult> => cliAsync(args).done;

let stub: OpenAIStub;
let ws: string;

function editLab(edit: (cfg: Record<string, any>) => void): void {
  const file = join(ws, '.rollout-lab', 'lab.json');
  const cfg = JSON.parse(readFileSync(file, 'utf8')) as Record<string, any>;
  edit(cfg);
  writeFileSync(file, JSON.stringify(cfg, null, 2));
}

async function stored(runId: string): Promise<Array<{ rollout: RolloutRecord; spans: SpanRecord[] }>> {
  const store = await TraceStore.open(ws, { readOnly: true });
  try {
    return store.listRollouts({ runId }).rollouts.map((rollout) => ({ rollout, spans: store.getSpans(rollout.id) }));
  } finally {
    await store.close();
  }
}

before(async () => {
  stub = await startOpenAIStub({ server: 'vllm', replies: model });
  ws = tempWorkspace();
  const init = cli(['init', '--example', 'command-agents', '--workspace', ws]);
  assert.equal(init.code, 0, init.stderr);
  editLab((cfg) => {
    cfg.models.main.baseUrl = stub.url;
    cfg.models.main.model = 'served-model';
    // The Python agent imports the helper package; its source folder stands in for `pip install ./python-agent`.
    cfg.graph.env = { PYTHONPATH: join(REPO, 'python-agent') };
  });
});
after(async () => {
  await stub.close();
  rmSync(ws, { recursive: true, force: true });
});

/** What every rollout of the ticket agents must have, whichever language they are written in. */
function checkRollouts(rollouts: Array<{ rollout: RolloutRecord; spans: SpanRecord[] }>, n: number, o: { emitsReward: boolean }): void {
  assert.equal(rollouts.length, n);
  for (const { rollout, spans } of rollouts) {
    assert.equal(rollout.status, 'succeeded', rollout.error ?? '');
    assert.equal(rollout.simulated, false);
    // reward.ts: 1 for the right queue.
    assert.equal(rollout.rewardBreakdown?.match, 1);
    assert.equal(rollout.finalReward, 1);
    const llm = spans.filter((s) => s.kind === 'llm');
    assert.deepEqual(llm.map((s) => s.attributes[Attr.agentName]).sort(), ['Responder', 'Router'], 'one recorded model call per agent, none twice');
    for (const call of llm) {
      assert.equal(call.traceId, rollout.id);
      assert.equal(call.attributes[Attr.logicalModel], 'main');
      assert.equal(call.attributes[Attr.requestModel], 'served-model');
      assert.ok(Array.isArray(call.attributes[Attr.tokenIds]) && (call.attributes[Attr.tokenIds] as number[]).length > 0, 'token ids recorded');
      assert.ok(Array.isArray(call.attributes[Attr.logprobs]), 'logprobs recorded');
      assert.match(String(call.attributes[Attr.inputMessages]), /route support tickets|acknowledge/);
    }
    const tool = spans.find((s) => s.kind === 'tool');
    assert.ok(tool, 'the tool span exported over OTLP is in the trace');
    assert.equal(tool.attributes[Attr.toolName], 'normalize_queue');
    assert.equal(tool.attributes[Attr.agentName], 'Router');
    assert.equal(tool.traceId, rollout.id);
    // The AIR rule on the tool span it exported: an intermediate reward hung on that span.
    const air = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardName] === 'queue_named');
    assert.ok(air, 'the AIR rule fired on the exported tool span');
    assert.equal(air.parentSpanId, tool.spanId);
    assert.equal(air.attributes[Attr.rewardValue], 0.05);
    // The Python Responder's own reward, sent from inside the agent (rollout_lab_agent.emit_reward): under its agent span, as the Responder's.
    const own = spans.find((s) => s.kind === 'reward' && s.attributes[Attr.rewardName] === 'reply_names_queue');
    if (!o.emitsReward) assert.equal(own, undefined);
    else {
      assert.ok(own, 'the reward the agent emitted is in the trace');
      assert.equal(own.attributes[Attr.rewardKind], 'intermediate');
      assert.equal(own.attributes[Attr.rewardValue], 0.05, 'the reply named the queue');
      assert.equal(own.attributes[Attr.agentName], 'Responder');
      assert.equal(spans.find((s) => s.spanId === own.parentSpanId)?.name, 'invoke_agent Responder');
    }
    const ids = new Set(spans.map((s) => s.spanId));
    for (const s of spans) if (s.parentSpanId !== null) assert.ok(ids.has(s.parentSpanId), `span ${s.name} hangs under a span of the trace`);
    assert.deepEqual(rollout.agents.map((a) => [a.agent, a.llmCalls]), [['Responder', 1], ['Router', 1]]);
    assert.ok(rollout.agents.every((a) => a.visits === 1), JSON.stringify(rollout.agents));
  }
}

test('the Python agent (standard library) runs as rollouts with recorded calls, OTLP tool spans, rewards and training rows', async () => {
  const run = json<RunDoc>(await cliRun(['run', '--workspace', ws, '--limit', '6', '--json']));
  assert.equal(run.succeeded, 6, JSON.stringify(run));
  assert.equal(run.simulated, false);
  checkRollouts(await stored(run.runId), 6, { emitsReward: true });
  // Only what the agents may see reached the model: never the gold queue.
  for (const r of stub.requests) assert.doesNotMatch(JSON.stringify(r.body.messages), /"queue"/);

  const report = cli(['report', '--workspace', ws, '--run', run.runId]);
  assert.equal(report.code, 0, report.stderr);
  const file = join(ws, 'exports', 'sft.jsonl');
  const doc = json<ExportManifest>(cli(['export', '--workspace', ws, '--format', 'sft', '--split', 'all', '--out', file, '--min-reward', '1', '--json']));
  assert.ok(doc.counts.records >= 6, JSON.stringify(doc.counts));
  const rows = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
  assert.ok(rows.some((r) => JSON.stringify(r).includes('route support tickets')), 'the Router\'s calls are training rows');
  const rlFile = join(ws, 'exports', 'rl.jsonl');
  assert.equal(cli(['export', '--workspace', ws, '--format', 'rl', '--agents', 'Router,Responder', '--split', 'all', '--run', run.runId, '--out', rlFile]).code, 0);
  const rl = readFileSync(rlFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { agent: string; air: number });
  assert.deepEqual(rl.map((r) => [r.agent, r.air]).sort(), [...Array(6).fill(['Responder', 0.05]), ...Array(6).fill(['Router', 0.05])].sort(), 'the AIR rule credits the Router, the emitted reward the Responder');
  const preflight = json<{ ok: boolean; checks: Array<{ severity: string; message: string }>; counts: Record<string, number> }>(
    cli(['preflight', '--workspace', ws, '--phase', 'sft', '--agents', 'Router', '--split', 'all', '--json']),
  );
  assert.ok(Object.values(preflight.counts).some((n) => n > 0), `pre-flight finds the Router's rows: ${JSON.stringify(preflight)}`);

  // The graph view draws what it saw: start → Router → Responder → end.
  const lab = await Lab.open({ workspace: ws });
  try {
    const g = await describeLabGraph(lab);
    assert.equal(g.source, 'command');
    const edges = g.edges.map((e) => `${e.source}>${e.target}`);
    for (const e of ['__start__>Router', 'Router>Responder', 'Responder>__end__']) assert.ok(edges.includes(e), `${e} in ${edges.join(', ')}`);
  } finally {
    await lab.close();
  }
});

test('a comparison of two Router prompts: each side\'s program reads its prompt from the lab, the same tasks on both', async () => {
  writeFileSync(join(ws, 'terse.md'), 'You route support tickets tersely. Answer with one word: bill, ship, tech or user.\n');
  const r = await cliRun(['compare', '--workspace', ws, '--a', 'base', '--b', 'prompt:Router=@terse.md', '--split', 'train', '--limit', '2', '--json']);
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const doc = JSON.parse(r.stdout) as { a: { runId: string }; b: { runId: string } };
  const routerPrompts = async (runId: string): Promise<string[]> =>
    (await stored(runId)).flatMap(({ spans }) => spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Router').map((s) => String(s.attributes[Attr.inputMessages])));
  const a = await routerPrompts(doc.a.runId);
  const b = await routerPrompts(doc.b.runId);
  assert.equal(a.length, 2);
  assert.equal(b.length, 2);
  assert.ok(a.every((m) => !m.includes('tersely')) && b.every((m) => m.includes('tersely')), 'side B ran the edited prompt');
});

test('the Node agent (openai + OpenTelemetry SDK) gives the same rollouts; its own chat spans do not double the recorded calls', async () => {
  editLab((cfg) => {
    cfg.graph.command = [process.execPath, join(REPO, 'examples/command-agents/node/agent.mjs')];
  });
  const run = json<RunDoc>(await cliRun(['run', '--workspace', ws, '--limit', '4', '--json']));
  assert.equal(run.succeeded, 4, JSON.stringify(run));
  const rollouts = await stored(run.runId);
  checkRollouts(rollouts, 4, { emitsReward: false });
  for (const { spans } of rollouts) {
    const nodes = spans.filter((s) => s.kind === 'node').map((s) => s.attributes[Attr.agentName]);
    assert.deepEqual(nodes.sort(), ['Responder', 'Router'], 'invoke_agent spans are the agents\' steps');
    // Its chat span and the gateway's record (a child of it, by traceparent) are one span, in the agent's step.
    for (const call of spans.filter((s) => s.kind === 'llm')) {
      const parent = spans.find((s) => s.spanId === call.parentSpanId);
      assert.equal(parent?.name, `invoke_agent ${String(call.attributes[Attr.agentName])}`, `${call.name} hangs under its agent's step`);
      assert.equal(call.name, `chat ${String(call.attributes[Attr.agentName])}`, "the agent's own span name");
      assert.equal(call.attributes[Attr.matchedBy], 'response_id');
    }
  }
});

test('a failing program is a failed rollout that quotes its stderr; the run goes on', async () => {
  const crash = join(ws, 'crash.py');
  writeFileSync(crash, 'import sys\nsys.stdin.read()\nprint("KeyError: goal", file=sys.stderr)\nsys.exit(2)\n');
  editLab((cfg) => {
    cfg.graph.command = ['python3', 'crash.py'];
  });
  const r = await cliRun(['run', '--workspace', ws, '--limit', '2', '--json']);
  assert.equal(r.code, 1, 'every rollout failed: a runtime failure');
  const runId = /run-[0-9T]+-[0-9a-f]{6}/.exec(r.stdout + r.stderr)?.[0];
  assert.ok(runId, r.stderr);
  for (const { rollout } of await stored(runId)) {
    assert.equal(rollout.status, 'failed');
    assert.match(rollout.error ?? '', /exited with code 2[^]*KeyError: goal/);
    assert.equal(rollout.finalReward, null);
  }
});

test('the Python example without the helper package installed fails its rollouts with the command that installs it', async () => {
  editLab((cfg) => {
    // -S: no site-packages, and no PYTHONPATH: rollout_lab_agent cannot be found, as on a machine that never installed it.
    cfg.graph.command = ['python3', '-S', 'python/agent.py'];
    cfg.graph.env = {};
  });
  try {
    const r = await cliRun(['run', '--workspace', ws, '--limit', '1', '--json']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const runId = /run-[0-9T]+-[0-9a-f]{6}/.exec(r.stdout + r.stderr)?.[0];
    assert.ok(runId, r.stderr);
    const [{ rollout }] = await stored(runId);
    assert.equal(rollout.status, 'failed');
    assert.match(rollout.error ?? '', /needs the rollout_lab_agent package: pip install \.\/python-agent/);
  } finally {
    editLab((cfg) => {
      cfg.graph.command = ['python3', 'python/agent.py'];
      cfg.graph.env = { PYTHONPATH: join(REPO, 'python-agent') };
    });
  }
});

// The trainer's venv (scripts/setupTrainerVenv.sh; .ci/run makes it): python-trainer's pinned stack.
const PYTHON = join(REPO, '.venv-trainer/bin/python');
const trainerRuns = spawnSync(PYTHON, ['-c', 'import torch, transformers, peft, tokenizers, yaml, jsonschema'], { encoding: 'utf8' }).status === 0;
const noTrainer = trainerRuns ? false : `${PYTHON} with torch, transformers, peft, yaml and jsonschema is needed for a real training job (bash scripts/setupTrainerVenv.sh)`;
if (noTrainer && process.env.CI) throw new Error(noTrainer);

test('training on the command agents\' rows: SFT of the Router, served, and the gateway routes its next calls to the trained version', { skip: noTrainer }, async () => {
  editLab((cfg) => {
    cfg.graph.command = ['python3', 'python/agent.py'];
    cfg.models.student = { baseUrl: stub.url, model: 'served-model', maxTokens: 8, logprobs: true, tokenIds: true };
    cfg.agents.Router.model = 'student';
    cfg.training = {
      groupSize: 2,
      // A one-layer Qwen2 built from this config on the transformers backend, its tokenizer trained on the exported rows.
      trainer: { backend: 'transformers', baseModel: 'qwen2-router', modelConfig: { model_type: 'qwen2', vocab_size: 512, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, max_position_embeddings: 512, tie_word_embeddings: true } },
      targets: { cpu: { kind: 'local', python: PYTHON } },
      phases: [{ name: 'sft-router', kind: 'sft', agents: ['Router'], model: 'student', minReward: 1, hyperparameters: { max_steps: 2, batch_size: 2, grad_accum: 1, max_length: 512, save_steps: 0, warmup_steps: 0, seed: 0 } }],
    };
  });
  const gather = json<RunDoc>(await cliRun(['run', '--workspace', ws, '--limit', '4', '--json']));
  assert.equal(gather.succeeded, 4, JSON.stringify(gather));
  const train = await cliRun(['train', '--workspace', ws, '--phase', 'sft-router', '--target', 'cpu', '--json']);
  assert.equal(train.code, 0, train.stderr.slice(-3000));
  const t = JSON.parse(train.stdout) as TrainResult;
  assert.equal(t.job!.state, 'succeeded', t.job!.error ?? '');
  assert.deepEqual(t.job!.registered, { model: 'student', version: t.job!.id });
  try {
    const next = json<RunDoc>(await cliRun(['run', '--workspace', ws, '--limit', '1', '--json']));
    assert.equal(next.rollouts, 1);
    const [{ spans }] = await stored(next.runId);
    const router = spans.filter((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Router');
    assert.equal(router.length, 1, 'the Router called through the gateway');
    assert.equal(router[0]!.attributes[Attr.modelVersion], t.job!.id, 'to the trained version');
    assert.equal(router[0]!.attributes[Attr.serverAddress], t.serve!.serveUrl);
    const responder = spans.find((s) => s.kind === 'llm' && s.attributes[Attr.agentName] === 'Responder');
    assert.equal(responder?.attributes[Attr.serverAddress], stub.url, 'the Responder keeps its model');
  } finally {
    const cancel = cli(['jobs', 'cancel', t.serve!.id, '--workspace', ws]);
    assert.equal(cancel.code, 0, cancel.stderr);
  }
});
