import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OI_SPAN_KIND, openInferenceExportAttrs } from '../../src/core/otlp/openInferenceExport';
import { TraceStore } from '../../src/core/store/traceStore';
import type { RolloutRecord } from '../../src/core/store/types';
import type { ChatMessageRecord } from '../../src/core/trace/messages';
import { Attr, type SpanRecord } from '../../src/core/trace/span';
import { startOpenAIStub, type StubReply, type StubRequest } from '../fakes/openaiStub';
import { PeerUnavailable, startMlflow, startPhoenix, type PeerServer } from '../peers/peerServers';
import { REPO, cli, cliAsync, editLab, json, tempWorkspace, type RunDoc } from './cliHelpers';

/*
 * `traces export --otlp` into the real peers, Arize Phoenix and MLflow's
 * tracking server (from .venv-phoenix and .venv-mlflow, scripts/setupPeerVenvs.sh),
 * each started on free ports with its database in a temp folder, and read
 * back through the peer's own API: every span of every rollout arrives, filed
 * under the kind the peer shows (LLM, TOOL, AGENT, CHAIN, EVALUATOR), with its
 * messages in and out, its tool calls, and the rewards. The rollouts are a
 * user's graph (a prebuilt ReAct agent calling a calculator between two
 * other agents) run through the CLI against an OpenAI-compatible stub.
 * Outside CI a peer that is not installed skips with the reason; with CI
 * set it is a failure.
 */

const FIXTURES = join(REPO, 'test/fixtures/user-graphs');
const PROBLEMS = [
  { id: 'm1', question: 'Ann has 6 boxes of 7 pencils. How many pencils?', answer: '42', expression: '6 * 7' },
  { id: 'm2', question: 'A train covers 120 km in 2 hours. How fast is it in km/h?', answer: '60', expression: '120 / 2' },
];

interface Stored {
  rollout: RolloutRecord;
  spans: SpanRecord[];
}

/** The math graph run over PROBLEMS against the stub: the Solver calls the calculator once, then answers. */
async function runMathLab(): Promise<{ ws: string; runId: string; stored: Stored[] }> {
  const prompts: Record<string, string> = {};
  const agentOf = (req: StubRequest): string => {
    const system = String(req.body.messages[0]?.content ?? '');
    return Object.keys(prompts).find((a) => system.startsWith(prompts[a]!.trim())) ?? 'unknown';
  };
  const stub = await startOpenAIStub({
    server: 'vllm',
    replies: (req): StubReply => {
      const messages = req.body.messages as Array<{ role: string; content: string }>;
      const problem = PROBLEMS.find((p) => messages.some((m) => typeof m.content === 'string' && m.content.includes(p.question)))!;
      if (agentOf(req) === 'Planner') return { content: `Compute ${problem.expression}.` };
      if (agentOf(req) === 'Solver') return messages.some((m) => m.role === 'tool') ? { content: problem.answer } : { toolCalls: [{ name: 'calculator', arguments: { expression: problem.expression } }] };
      return { content: 'CORRECT' };
    },
  });
  const ws = tempWorkspace();
  try {
    copyFileSync(join(FIXTURES, 'mathReactAgent.ts'), join(ws, 'graph.ts'));
    copyFileSync(join(FIXTURES, 'mathReward.ts'), join(ws, 'reward.ts'));
    writeFileSync(join(ws, 'problems.jsonl'), PROBLEMS.map(({ id, question, answer }) => JSON.stringify({ id, question, answer })).join('\n') + '\n');
    const init = cli(['init', '--workspace', ws, '--graph', 'graph.ts', '--dataset', 'problems.jsonl']);
    assert.equal(init.code, 0, init.stderr);
    for (const agent of ['Planner', 'Solver', 'Checker']) prompts[agent] = readFileSync(join(ws, '.rollout-lab/prompts', `${agent}.md`), 'utf8');
    editLab(ws, (cfg) => {
      cfg.models.main = { ...cfg.models.main, baseUrl: stub.url };
      cfg.models.judge = { ...cfg.models.judge, baseUrl: stub.url };
      cfg.reward.module = 'reward.ts';
      cfg.air = [{ name: 'calculator_ok', when: 'tool.ok', tools: ['calculator'], reward: 0.1 }];
    });
    const run = await cliAsync(['run', '--workspace', ws, '--split', 'all', '--json']).done;
    assert.equal(run.code, 0, run.stderr);
    const { runId, succeeded } = json<RunDoc>(run);
    assert.equal(succeeded, PROBLEMS.length);
    const store = await TraceStore.open(ws, { readOnly: true });
    try {
      const stored = store.listRollouts({ runId }).rollouts.map((rollout) => ({ rollout, spans: store.getSpans(rollout.id) }));
      return { ws, runId, stored };
    } finally {
      await store.close();
    }
  } catch (e) {
    rmSync(ws, { recursive: true, force: true });
    throw e;
  } finally {
    await stub.close();
  }
}

/** What the source must hold for the checks to mean something: model calls with messages and tool calls, a tool, rewards. */
function assertRichSource(stored: Stored[]): void {
  for (const { rollout, spans } of stored) {
    assert.equal(rollout.finalReward, 1, 'the exact answer scores 1');
    assert.ok(spans.some((s) => s.kind === 'llm' && messagesOf(s, Attr.outputMessages).some((m) => m.tool_calls?.length)), 'a model call that asks for a tool');
    assert.ok(spans.some((s) => s.kind === 'llm' && messagesOf(s, Attr.inputMessages).some((m) => m.role === 'tool')), 'a model call that reads a tool result');
    assert.ok(spans.some((s) => s.kind === 'tool'), 'a tool span');
    assert.ok(spans.some((s) => s.kind === 'reward' && s.attributes['rollout_lab.reward.name'] === 'calculator_ok'), 'an AIR reward span');
  }
}

const messagesOf = (s: SpanRecord, key: string): ChatMessageRecord[] => JSON.parse(String(s.attributes[key] ?? '[]')) as ChatMessageRecord[];
/** The kind a peer that reads OpenInference files the span under. */
const expectedKind = (s: SpanRecord): string => openInferenceExportAttrs(s.kind, (k) => s.attributes[k] ?? undefined).find(([k]) => k === OI_SPAN_KIND)![1];
/** Tool-call arguments compared as JSON (a peer may re-serialise them). */
const args = (v: unknown): unknown => (typeof v === 'string' ? JSON.parse(v) : v);

/** Starts a peer; outside CI a missing one skips the test with the reason (null), with CI set it fails. */
async function peer(t: TestContext, start: () => Promise<PeerServer>): Promise<PeerServer | null> {
  try {
    return await start();
  } catch (e) {
    if (e instanceof PeerUnavailable && !process.env.CI) {
      t.skip(e.message.split('\n')[0]);
      return null;
    }
    throw e;
  }
}

/** Polls `read` until `done` holds of its answer (peers write what they receive in the background). */
async function eventually<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 600; i++) {
    last = await read();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.fail(`${what}: still not there after 600 polls; last answer: ${JSON.stringify(last).slice(0, 2000)}`);
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  let res: Response;
  for (let attempt = 1; ; attempt++) {
    try {
      res = await fetch(url, init);
      break;
    } catch (e) {
      // The keep-alive socket of an earlier request, which the peer closed after its idle timeout (uvicorn's 5 s) while
      // this process sat in a spawnSync, fails the one request that picks it up: that one goes again, on a new socket.
      if (attempt < 3 && e instanceof TypeError) continue;
      throw new Error(`${init?.method ?? 'GET'} ${url}: ${(e as Error).message} (${String((e as Error).cause)})`);
    }
  }
  const text = await res.text();
  assert.ok(res.ok, `${init?.method ?? 'GET'} ${url}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

interface PhoenixSpan {
  name: string;
  context: { trace_id: string; span_id: string };
  parent_id: string | null;
  span_kind: string;
  status_code: string;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; attributes: Record<string, unknown> }>;
}

/** Phoenix's flattened OpenInference messages (llm.input_messages.N.message.*) as the lab's records. */
function phoenixMessages(a: Record<string, unknown>, prefix: string): ChatMessageRecord[] {
  const out: ChatMessageRecord[] = [];
  for (let i = 0; a[`${prefix}.${i}.message.role`] !== undefined; i++) {
    const m = `${prefix}.${i}.message`;
    const rec: ChatMessageRecord = { role: String(a[`${m}.role`]), content: String(a[`${m}.content`] ?? '') };
    if (a[`${m}.name`] !== undefined) rec.name = String(a[`${m}.name`]);
    if (a[`${m}.tool_call_id`] !== undefined) rec.tool_call_id = String(a[`${m}.tool_call_id`]);
    const calls: NonNullable<ChatMessageRecord['tool_calls']> = [];
    for (let j = 0; a[`${m}.tool_calls.${j}.tool_call.function.name`] !== undefined; j++) {
      const c = `${m}.tool_calls.${j}.tool_call`;
      calls.push({ id: String(a[`${c}.id`]), name: String(a[`${c}.function.name`]), arguments: String(a[`${c}.function.arguments`]) });
    }
    if (calls.length) rec.tool_calls = calls;
    out.push(rec);
  }
  return out;
}

/** A stored message as a peer can show it: a tool result's name is the tool's, which the parts-based message drops. */
function comparable(m: ChatMessageRecord): Record<string, unknown> {
  return { role: m.role, content: m.content, tool_call_id: m.tool_call_id, tool_calls: m.tool_calls?.map((c) => ({ id: c.id, name: c.name, arguments: args(c.arguments) })) };
}
const comparableAll = (ms: ChatMessageRecord[]): unknown[] => ms.map((m) => comparable({ ...m, tool_calls: m.tool_calls?.length ? m.tool_calls : undefined }));

test('traces export --otlp into a real Phoenix: every span with its kind, its messages, its tool calls and the rewards, read back through Phoenix\'s REST API', async (t) => {
  const phoenix = await peer(t, startPhoenix);
  if (!phoenix) return;
  let ws: string | undefined;
  try {
    const lab = await runMathLab();
    ws = lab.ws;
    assertRichSource(lab.stored);
    const exported = cli(['traces', 'export', '--otlp', phoenix.url, '--workspace', ws, '--run', lab.runId, '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const total = lab.stored.reduce((n, x) => n + x.spans.length, 0);
    assert.deepEqual(JSON.parse(exported.stdout), { endpoint: `${phoenix.url}/v1/traces`, protocol: 'http/protobuf', rollouts: PROBLEMS.length, spans: total, rejectedSpans: 0 });

    for (const { rollout, spans } of lab.stored) {
      const got: PhoenixSpan[] = await eventually<PhoenixSpan[]>(
        `Phoenix's spans of trace ${rollout.id}`,
        async () => (await getJson<{ data: PhoenixSpan[] }>(`${phoenix.url}/v1/projects/default/spans?trace_id=${rollout.id}&limit=1000`)).data,
        (d) => d.length >= spans.length,
      );
      assert.equal(got.length, spans.length, 'no span more, none less');
      const byId = new Map(got.map((s) => [s.context.span_id, s]));
      for (const s of spans) {
        const p = byId.get(s.spanId);
        assert.ok(p, `span ${s.name} ${s.spanId} is in Phoenix`);
        const what = `${s.kind} span "${s.name}" ${s.spanId}`;
        assert.deepEqual([p.name, p.parent_id, p.context.trace_id], [s.name, s.parentSpanId, rollout.id], what);
        assert.equal(p.span_kind, expectedKind(s), `${what}: its kind`);
        assert.equal(p.status_code, s.status === 'error' ? 'ERROR' : s.status === 'ok' ? 'OK' : 'UNSET', `${what}: its status`);
        const a = p.attributes;
        if (s.kind === 'llm') {
          assert.deepEqual(comparableAll(phoenixMessages(a, 'llm.input_messages')), comparableAll(messagesOf(s, Attr.inputMessages)), `${what}: input messages`);
          assert.deepEqual(comparableAll(phoenixMessages(a, 'llm.output_messages')), comparableAll(messagesOf(s, Attr.outputMessages)), `${what}: output messages, tool calls included`);
          assert.equal(a['llm.model_name'], s.attributes[Attr.responseModel], `${what}: the model`);
          assert.equal(a['llm.token_count.prompt'], s.attributes[Attr.inputTokens], `${what}: prompt tokens`);
          assert.equal(a['llm.token_count.completion'], s.attributes[Attr.outputTokens], `${what}: completion tokens`);
        }
        if (s.kind === 'tool') {
          assert.deepEqual([a['tool.name'], a['tool.id']], [s.attributes[Attr.toolName], s.attributes[Attr.toolCallId]], `${what}: the tool and its call`);
          assert.deepEqual(args(a['input.value']), args(s.attributes[Attr.toolArguments]), `${what}: its input`);
          assert.equal(String(a['output.value']), String(s.attributes[Attr.toolResult]), `${what}: its output`);
        }
        if (s.kind === 'reward') assert.equal(a['rollout_lab.reward.value'], s.attributes[Attr.rewardValue], `${what}: the reward`);
        if (s.parentSpanId === null) {
          assert.equal(a[Attr.rewardValue], rollout.finalReward, `${what}: the final reward`);
          const scores = p.events.filter((e) => e.name === 'gen_ai.evaluation.result').map((e) => [e.attributes['gen_ai.evaluation.name'], e.attributes['gen_ai.evaluation.score.value']]);
          assert.deepEqual(scores, [...Object.entries(rollout.criteria ?? {}), ['reward', rollout.finalReward]], `${what}: the rewards as evaluation events`);
        }
      }
    }
  } catch (e) {
    t.diagnostic(`phoenix ${phoenix.version} log tail:\n${phoenix.log().slice(-3000)}`);
    throw e;
  } finally {
    await phoenix.stop();
    if (ws) rmSync(ws, { recursive: true, force: true });
  }
});

/** An OTLP AnyValue as MLflow's trace API writes it (protobuf's JSON names) → a plain value. */
function anyValue(v: Record<string, any> | undefined): unknown {
  if (!v) return null;
  if ('string_value' in v) return v.string_value;
  if ('bool_value' in v) return v.bool_value;
  if ('int_value' in v) return Number(v.int_value);
  if ('double_value' in v) return v.double_value;
  if ('array_value' in v) return (v.array_value.values ?? []).map(anyValue);
  if ('kvlist_value' in v) return Object.fromEntries((v.kvlist_value.values ?? []).map((kv: { key: string; value?: Record<string, any> }) => [kv.key, anyValue(kv.value)]));
  return null;
}
const attrsOf = (list: Array<{ key: string; value?: Record<string, any> }> | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, anyValue(kv.value)]));
const hexId = (b64: string | undefined): string | null => (b64 ? Buffer.from(b64, 'base64').toString('hex') : null);

/** Parts-based GenAI messages (what MLflow keeps as a span's inputs and outputs) as the lab's records. */
function partsMessages(v: unknown): ChatMessageRecord[] {
  assert.ok(Array.isArray(v), `messages as a list, got ${JSON.stringify(v).slice(0, 300)}`);
  return (v as Array<{ role: string; parts: Array<Record<string, unknown>> }>).map((m) => {
    const rec: ChatMessageRecord = { role: m.role, content: '' };
    const calls = m.parts.filter((p) => p.type === 'tool_call').map((p) => ({ id: String(p.id), name: String(p.name), arguments: typeof p.arguments === 'string' ? p.arguments : JSON.stringify(p.arguments) }));
    for (const p of m.parts) {
      if (p.type === 'text') rec.content += String(p.content);
      if (p.type === 'tool_call_response') [rec.tool_call_id, rec.content] = [String(p.id), String(p.response)];
    }
    if (calls.length) rec.tool_calls = calls;
    return rec;
  });
}

test('traces export --otlp into a real MLflow tracking server: every span with its type, its inputs and outputs, its tool calls and the rewards, read back through MLflow\'s trace API', async (t) => {
  const mlflow = await peer(t, startMlflow);
  if (!mlflow) return;
  let ws: string | undefined;
  try {
    const api = `${mlflow.url}/api`;
    const post = <T>(path: string, body: unknown): Promise<T> => getJson<T>(`${api}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const { experiment_id: experimentId } = await post<{ experiment_id: string }>('/2.0/mlflow/experiments/create', { name: 'rollout-lab export' });
    const lab = await runMathLab();
    ws = lab.ws;
    assertRichSource(lab.stored);
    const exported = cli(['traces', 'export', '--otlp', mlflow.url, '--headers', `x-mlflow-experiment-id=${experimentId}`, '--workspace', ws, '--run', lab.runId, '--json']);
    assert.equal(exported.code, 0, exported.stderr);
    const total = lab.stored.reduce((n, x) => n + x.spans.length, 0);
    assert.deepEqual(JSON.parse(exported.stdout), { endpoint: `${mlflow.url}/v1/traces`, protocol: 'http/protobuf', rollouts: PROBLEMS.length, spans: total, rejectedSpans: 0 });

    const found = await post<{ traces?: Array<{ trace_id: string; state: string; tags: Record<string, string> }> }>('/3.0/mlflow/traces/search', {
      locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: experimentId } }],
      max_results: 100,
    });
    assert.deepEqual((found.traces ?? []).map((x) => x.trace_id).sort(), lab.stored.map((x) => `tr-${x.rollout.id}`).sort(), 'one MLflow trace per rollout');
    for (const x of found.traces!) assert.deepEqual([x.state, x.tags[Attr.runId]], ['OK', lab.runId], `trace ${x.trace_id}: its state and run`);

    for (const { rollout, spans } of lab.stored) {
      const { trace } = await getJson<{ trace: { spans: Array<Record<string, any>> } }>(`${api}/3.0/mlflow/traces/get?trace_id=tr-${rollout.id}`);
      assert.equal(trace.spans.length, spans.length, 'no span more, none less');
      const byId = new Map(trace.spans.map((s) => [hexId(s.span_id), s]));
      for (const s of spans) {
        const m = byId.get(s.spanId);
        assert.ok(m, `span ${s.name} ${s.spanId} is in MLflow`);
        const what = `${s.kind} span "${s.name}" ${s.spanId}`;
        const a = attrsOf(m.attributes);
        assert.deepEqual([m.name, hexId(m.parent_span_id)], [s.name, s.parentSpanId], what);
        assert.equal(a['mlflow.spanType'], expectedKind(s), `${what}: its type`);
        if (s.kind === 'llm') {
          assert.deepEqual(comparableAll(partsMessages(a['mlflow.spanInputs'])), comparableAll(messagesOf(s, Attr.inputMessages)), `${what}: inputs`);
          assert.deepEqual(comparableAll(partsMessages(a['mlflow.spanOutputs'])), comparableAll(messagesOf(s, Attr.outputMessages)), `${what}: outputs, tool calls included`);
          assert.deepEqual(a['mlflow.chat.tokenUsage'], { input_tokens: s.attributes[Attr.inputTokens], output_tokens: s.attributes[Attr.outputTokens], total_tokens: Number(s.attributes[Attr.inputTokens]) + Number(s.attributes[Attr.outputTokens]) }, `${what}: token usage`);
        }
        if (s.kind === 'tool') {
          assert.deepEqual(args(a['mlflow.spanInputs']), args(s.attributes[Attr.toolArguments]), `${what}: its input`);
          assert.equal(String(a['mlflow.spanOutputs']), String(s.attributes[Attr.toolResult]), `${what}: its output`);
        }
        if (s.kind === 'reward') assert.equal(a['rollout_lab.reward.value'], s.attributes[Attr.rewardValue], `${what}: the reward`);
        if (s.parentSpanId === null) {
          assert.equal(a[Attr.rewardValue], rollout.finalReward, `${what}: the final reward`);
          const scores = (m.events ?? []).filter((e: { name: string }) => e.name === 'gen_ai.evaluation.result').map((e: { attributes: Array<{ key: string; value?: Record<string, any> }> }) => {
            const ea = attrsOf(e.attributes);
            return [ea['gen_ai.evaluation.name'], ea['gen_ai.evaluation.score.value']];
          });
          assert.deepEqual(scores, [...Object.entries(rollout.criteria ?? {}), ['reward', rollout.finalReward]], `${what}: the rewards as evaluation events`);
        }
      }
    }
  } catch (e) {
    t.diagnostic(`mlflow ${mlflow.version} log tail:\n${mlflow.log().slice(-3000)}`);
    throw e;
  } finally {
    await mlflow.stop();
    if (ws) rmSync(ws, { recursive: true, force: true });
  }
});
